package dev.sextant.topology;

/** Argument checks shared by the records; messages name the field and the expectation. */
final class Checks {
    private Checks() {
    }

    /**
     * A non-empty id without control characters: ids go into response headers ({@code x-sextant-engine}), metric
     * labels, log lines and error messages, where a line break or a NUL would split or corrupt them.
     */
    static void id(String field, String value) {
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException(field + ": " + (value == null ? "missing" : "empty") + " (expected: a non-empty string)");
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < 0x20 || c == 0x7f) {
                throw new IllegalArgumentException(field + ": '" + value.substring(0, i)
                        + String.format("\\u%04x", (int) c) + "…' (expected: no control characters)");
            }
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

    /** A stated batch limit ({@code max_num_seqs}): 1 to {@link Engine#MAX_NUM_SEQS}, or 0 where none is stated. */
    static void maxNumSeqs(int value) {
        if (value < 0 || value > Engine.MAX_NUM_SEQS) {
            throw new IllegalArgumentException("max_num_seqs: " + value + " (expected: from 1 to " + Engine.MAX_NUM_SEQS
                    + ", or absent)");
        }
    }
}
