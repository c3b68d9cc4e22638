package dev.sextant.topology;

/**
 * Engine-side latency as a function of utilization ρ = load / {@code capacity_rps}, in [0, 1).
 *
 * <p>The engine-side latency of a request at load x is
 * {@code T(x) = TTFT(ρ) + (n̄ − 1)·TBT(ρ)} with n̄ the model's expected output tokens. Both parts
 * are non-decreasing and convex in ρ, which makes the optimizer's node cost x·T(x) convex.
 * Slopes are right derivatives with respect to ρ (the derivative from above at a breakpoint).
 */
public sealed interface LatencyProfile permits ParametricProfile, MeasuredProfile {

    /** Time to first token in ms at utilization {@code rho}; may be infinite at ρ ≥ 1. */
    double ttftMs(double rho);

    /** d TTFT / dρ in ms per unit of utilization, ≥ 0. */
    double ttftSlope(double rho);

    /** d² TTFT / dρ², ≥ 0 (0 between the breakpoints of a measured profile). */
    double ttftCurvature(double rho);

    /** Time between output tokens in ms at utilization {@code rho}. */
    double tbtMs(double rho);

    /** d TBT / dρ in ms per unit of utilization, ≥ 0. */
    double tbtSlope(double rho);

    /** d² TBT / dρ², ≥ 0. */
    double tbtCurvature(double rho);

    /** Engine-side latency T in ms for a request with {@code outputTokens} at utilization {@code rho}. */
    default double latencyMs(double rho, int outputTokens) {
        return ttftMs(rho) + (outputTokens - 1) * tbtMs(rho);
    }

    /** dT/dρ. */
    default double latencySlope(double rho, int outputTokens) {
        return ttftSlope(rho) + (outputTokens - 1) * tbtSlope(rho);
    }

    /** d²T/dρ². */
    default double latencyCurvature(double rho, int outputTokens) {
        return ttftCurvature(rho) + (outputTokens - 1) * tbtCurvature(rho);
    }
}
