package dev.sextant.topology;

/**
 * The default latency profile: {@code TTFT(ρ) = ttft_ms / (1 − ρ)} (an M/M/1-like queueing term that
 * grows without bound as load approaches capacity) and {@code TBT(ρ) = tbt_ms · (1 + tbt_slope · ρ)}
 * (decode steps slow down linearly as the batch fills).
 *
 * @param ttftMs   time to first token of an idle engine, ms, &gt; 0
 * @param tbtMs    time between output tokens of an idle engine, ms, ≥ 0
 * @param tbtSlope relative growth of TBT from idle to full, ≥ 0 (default 1.0: TBT doubles at capacity)
 */
public record ParametricProfile(double ttftMs, double tbtMs, double tbtSlope) implements LatencyProfile {

    /** The default of {@code tbt_slope}. */
    public static final double DEFAULT_TBT_SLOPE = 1.0;

    /**
     * The largest {@code tbt_slope}: a TBT a thousand and one times the idle one at capacity, far beyond any engine's
     * (a batch's decoding step is a few times a lone sequence's). Slopes of 1e9 and more, with the longest times and
     * outputs a topology may have, put one engine's cost some 1e24 ms above another's, beyond what the solve's
     * arithmetic can tell apart: it ended in shed fractions of NaN.
     */
    public static final double MAX_TBT_SLOPE = 1_000;

    public ParametricProfile {
        Checks.positive("ttft_ms", ttftMs);
        Checks.finiteNonNegative("tbt_ms", tbtMs);
        Checks.finiteNonNegative("tbt_slope", tbtSlope);
        if (tbtSlope > MAX_TBT_SLOPE) {
            throw new IllegalArgumentException("tbt_slope: " + tbtSlope + " (expected: at most " + (int) MAX_TBT_SLOPE
                    + ")");
        }
    }

    @Override
    public double ttftMs(double rho) {
        return rho >= 1 ? Double.POSITIVE_INFINITY : ttftMs / (1 - rho);
    }

    @Override
    public double ttftSlope(double rho) {
        if (rho >= 1) {
            return Double.POSITIVE_INFINITY;
        }
        double q = 1 - rho;
        return ttftMs / (q * q);
    }

    @Override
    public double ttftCurvature(double rho) {
        if (rho >= 1) {
            return Double.POSITIVE_INFINITY;
        }
        double q = 1 - rho;
        return 2 * ttftMs / (q * q * q);
    }

    @Override
    public double tbtMs(double rho) {
        return tbtMs * (1 + tbtSlope * rho);
    }

    @Override
    public double tbtSlope(double rho) {
        return tbtMs * tbtSlope;
    }

    @Override
    public double tbtCurvature(double rho) {
        return 0;
    }
}
