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

    LinkTracker(double configuredMs) {
        this.configuredMs = configuredMs;
    }

    void roundTrip(GatewayReport.RoundTrip rt) {
        measuredMs = Double.isNaN(measuredMs) ? rt.minMs() : measuredMs + GAIN * (rt.minMs() - measuredMs);
        samples += rt.count();
        if (cut) {
            cut = false;
        }
        connectErrorsInRow = 0;
    }

    /** Attempts from the gateway cluster to an engine of this cluster: returns true when the link's state changed. */
    boolean attempts(long successes, long connectErrors, boolean clusterAnswersElsewhere) {
        boolean before = cut;
        if (successes > 0) {
            connectErrorsInRow = 0;
            cut = false;
        } else if (connectErrors > 0) {
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
            return connectErrorsInRow + " connects in a row failed while other gateways reach it: cut";
        }
        if (samples >= MIN_SAMPLES) {
            return String.format(Locale.ROOT, "%.1f ms measured (%d probes); configured %.1f", measuredMs, samples,
                    configuredMs);
        }
        return String.format(Locale.ROOT, "%.1f ms as configured%s", configuredMs,
                samples > 0 ? " (" + samples + " probes so far)" : "");
    }
}
