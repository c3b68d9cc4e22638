package dev.sextant.control;

import java.util.Locale;

/**
 * The path from one gateway cluster to one engine cluster: its round trip as the gateways measure it (probes), the
 * topology's as the prior, and whether it is cut (the gateway cannot connect to any engine there while others can).
 */
final class LinkTracker {
    /** Samples of the round trip before the measurement replaces the configured value. */
    static final int MIN_SAMPLES = 3;
    /** Gain of the average of each report's smallest round trip. */
    static final double GAIN = 0.2;
    /** Connect errors in a row, with no success, that cut a link. */
    static final int CUT_AFTER = 5;

    final double configuredMs;
    private double measuredMs = Double.NaN;
    private long samples;
    private long connectErrorsInRow;
    boolean cut;
    /** When a probe or an attempt last got through, ns; MIN_VALUE: never. */
    long reachedNanos = Long.MIN_VALUE;

    LinkTracker(double configuredMs) {
        this.configuredMs = configuredMs;
    }

    void roundTrip(GatewayReport.RoundTrip rt, long at) {
        reachedNanos = Math.max(reachedNanos, at);
        measuredMs = Double.isNaN(measuredMs) ? rt.minMs() : measuredMs + GAIN * (rt.minMs() - measuredMs);
        samples += rt.count();
        if (cut) {
            cut = false;
        }
        connectErrorsInRow = 0;
    }

    /**
     * Attempts from the gateway cluster to engines of this cluster in one report: {@code successes}, refused
     * connections ({@code connectErrors}), whether every engine attempted refused some ({@code everyEngine}: two at
     * least, or the cluster's only one), and whether the cluster answers elsewhere; true when the link's state changed.
     * Refusals by some engines while the others connect are theirs, not the link's: they do not start a run. A
     * report's refusals may all have come after its successes (a link that fails during the interval): they start a
     * run, which the next report's refusals continue when it has no success. Counted from zero there, the run waited
     * for five more refusals from a gateway that had ejected the cluster's engines and sent them few attempts.
     */
    boolean attempts(long successes, long connectErrors, boolean everyEngine, boolean clusterAnswersElsewhere,
                     long at) {
        boolean before = cut;
        if (successes > 0) {
            reachedNanos = Math.max(reachedNanos, at);
            connectErrorsInRow = everyEngine ? connectErrors : 0;
            cut = false;
        } else if (connectErrors > 0 && (everyEngine || connectErrorsInRow > 0)) {
            connectErrorsInRow += connectErrors;
            if (connectErrorsInRow >= CUT_AFTER && clusterAnswersElsewhere) {
                cut = true;
            }
        }
        return cut != before;
    }

    /** The round trip to plan with, ms. */
    double ms() {
        return samples >= MIN_SAMPLES ? measuredMs : configuredMs;
    }

    String why() {
        if (cut) {
            return connectErrorsInRow + " connects in a row failed while the cluster answers elsewhere (its engines' "
                    + "scrapes, or another gateway cluster's probes or requests): cut";
        }
        if (samples >= MIN_SAMPLES) {
            return String.format(Locale.ROOT, "%.1f ms measured (%d probes); configured %.1f", measuredMs, samples,
                    configuredMs);
        }
        return String.format(Locale.ROOT, "%.1f ms as configured%s", configuredMs,
                samples > 0 ? " (" + samples + " probes so far)" : "");
    }
}
