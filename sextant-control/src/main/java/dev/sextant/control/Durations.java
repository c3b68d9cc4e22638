package dev.sextant.control;

import java.util.Locale;

/** Durations as explanations write them. */
final class Durations {
    private Durations() {
    }

    /** "850 ms", "45 s", "12 min", "3.5 h". */
    static String human(long nanos) {
        double s = nanos / 1e9;
        if (s < 1) {
            return String.format(Locale.ROOT, "%.0f ms", s * 1000);
        }
        if (s < 120) {
            return String.format(Locale.ROOT, "%.0f s", s);
        }
        if (s < 7200) {
            return String.format(Locale.ROOT, "%.0f min", s / 60);
        }
        return String.format(Locale.ROOT, "%.1f h", s / 3600);
    }
}
