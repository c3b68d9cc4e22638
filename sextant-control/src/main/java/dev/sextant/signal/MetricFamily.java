package dev.sextant.signal;

import java.util.List;

/**
 * All samples of one metric family, with its declared type and help text.
 *
 * <p>For a histogram {@code x} the samples are {@code x_bucket}, {@code x_count}, {@code x_sum} (and
 * {@code x_created} when present); for a counter declared as {@code x_total} they are {@code x_total} and
 * {@code x_created}.
 *
 * @param name    the family name from its {@code # TYPE}/{@code # HELP} line, or the sample name when it has
 *                none
 * @param type    declared type; {@link MetricType#UNTYPED} when undeclared
 * @param help    unescaped help text; empty when there is none
 * @param samples the samples in the order they appeared
 */
public record MetricFamily(String name, MetricType type, String help, List<Sample> samples) {
    public MetricFamily {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("name: " + (name == null ? "missing" : "empty") + " (expected: a metric name)");
        }
        if (type == null) {
            throw new IllegalArgumentException("type: missing (expected: a metric type)");
        }
        help = help == null ? "" : help;
        samples = List.copyOf(samples);
    }
}
