package dev.sextant.control;

import dev.sextant.request.Ticker;

/** Time the test moves by hand. */
final class ManualTicker implements Ticker {
    private long nanos;

    @Override
    public long nanos() {
        return nanos;
    }

    void advanceSeconds(double s) {
        nanos += Math.round(s * 1e9);
    }

    double seconds() {
        return nanos / 1e9;
    }
}
