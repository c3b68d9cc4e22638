package dev.sextant.topology;

/** Argument checks shared by the records; messages name the field and the expectation. */
final class Checks {
    private Checks() {
    }

    static void id(String field, String value) {
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException(field + ": " + (value == null ? "missing" : "empty") + " (expected: a non-empty string)");
        }
    }

    static void finiteNonNegative(String field, double value) {
        if (!(value >= 0) || Double.isInfinite(value)) {
            throw new IllegalArgumentException(field + ": " + value + " (expected: a finite number >= 0)");
        }
    }

    static void positive(String field, double value) {
        if (!(value > 0) || Double.isInfinite(value)) {
            throw new IllegalArgumentException(field + ": " + value + " (expected: a finite number > 0)");
        }
    }
}
