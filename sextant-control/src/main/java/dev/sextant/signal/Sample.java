package dev.sextant.signal;

import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.Collections;

/**
 * One line of a scrape: a sample of one time series.
 *
 * @param name        the sample's metric name as written, including suffixes such as {@code _bucket},
 *                    {@code _total} or {@code _created}; non-empty
 * @param labels      label name → unescaped value, sorted by name; never {@code null}
 * @param value       the value; may be {@code ±Infinity} or {@code NaN}
 * @param timestampMs the optional timestamp, milliseconds since the Unix epoch
 */
public record Sample(String name, Map<String, String> labels, double value, OptionalLong timestampMs) {
    public Sample {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("name: " + (name == null ? "missing" : "empty") + " (expected: a metric name)");
        }
        labels = labels == null || labels.isEmpty() ? Map.of() : Collections.unmodifiableMap(new TreeMap<>(labels));
        if (timestampMs == null) {
            timestampMs = OptionalLong.empty();
        }
    }

    /** The value of label {@code labelName}, or {@code null} when the sample does not carry it. */
    public String label(String labelName) {
        return labels.get(labelName);
    }
}
