package dev.sextant.signal;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The result of parsing one {@code /metrics} text: the metric families found, and the lines that could not
 * be used. A scrape with problems is still usable; every well-formed line is in {@link #families()}.
 *
 * @param families family name → family, in order of first appearance
 * @param problems the malformed or inconsistent lines, in line order
 */
public record Scrape(Map<String, MetricFamily> families, List<ParseProblem> problems) {
    public Scrape {
        families = Collections.unmodifiableMap(new LinkedHashMap<>(families));
        problems = List.copyOf(problems);
    }

    /** The family called {@code name}, or {@code null}. */
    public MetricFamily family(String name) {
        return families.get(name);
    }

    /** True when the text had no malformed line. */
    public boolean clean() {
        return problems.isEmpty();
    }

    /** All samples, across families, whose sample name is exactly {@code sampleName}; empty when none. */
    public List<Sample> samples(String sampleName) {
        return families.values().stream()
                .flatMap(f -> f.samples().stream())
                .filter(s -> s.name().equals(sampleName))
                .toList();
    }
}
