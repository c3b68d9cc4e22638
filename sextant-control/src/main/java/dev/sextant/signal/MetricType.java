package dev.sextant.signal;

import java.util.Locale;

/** The metric types of the Prometheus text exposition format (version 0.0.4). */
public enum MetricType {
    COUNTER, GAUGE, HISTOGRAM, SUMMARY, UNTYPED;

    /** The type named by a {@code # TYPE} line ({@code "counter"} …), or {@code null} when the word is not one. */
    static MetricType fromWord(String word) {
        return switch (word.toLowerCase(Locale.ROOT)) {
            case "counter" -> COUNTER;
            case "gauge" -> GAUGE;
            case "histogram" -> HISTOGRAM;
            case "summary" -> SUMMARY;
            case "untyped", "unknown" -> UNTYPED;
            default -> null;
        };
    }
}
