package dev.sextant.policy;

import dev.sextant.topology.LatencyProfile;

/**
 * The optimizer's node cost of one engine, φ(x) = x·T(x): total engine-side latency per second of
 * the requests it serves at load x req/s, on [0, c] with c its effective capacity.
 *
 * <p>With ρ = x / C (C = capacity_rps): φ'(x) = T(ρ) + ρ·T'(ρ) and φ''(x) = (2·T'(ρ) + ρ·T''(ρ)) / C,
 * derivatives of T with respect to ρ. φ is convex because T is non-decreasing and convex.
 */
final class EngineCost {
    /** A load this close to effective capacity counts as "at capacity". */
    static final double AT_CAPACITY = 1e-9;
    /**
     * The highest utilization ever planned, whatever the headroom: the profile's latency diverges
     * at ρ = 1, and at ρ = 0.95 TTFT is already twenty times its idle value.
     */
    static final double MAX_UTILIZATION = 0.95;

    final int engine;
    final double capacity;
    final double effectiveCapacity;
    final int outputTokens;
    final LatencyProfile profile;
    /** φ'(0) = T(0): the marginal cost of the first request, ms. */
    final double marginalAtZero;
    /** φ'(c): the marginal cost at effective capacity, ms. */
    final double marginalAtCapacity;

    EngineCost(int engine, double capacity, double effectiveCapacity, int outputTokens, LatencyProfile profile) {
        this.engine = engine;
        this.capacity = capacity;
        this.effectiveCapacity = Math.min(effectiveCapacity, capacity * MAX_UTILIZATION);
        this.outputTokens = outputTokens;
        this.profile = profile;
        this.marginalAtZero = marginal(0);
        this.marginalAtCapacity = marginal(this.effectiveCapacity);
    }

    /** T(x), ms; infinite at or beyond capacity_rps. */
    double latency(double x) {
        return profile.latencyMs(x / capacity, outputTokens);
    }

    /** φ(x) = x·T(x), ms·req/s. */
    double cost(double x) {
        return x == 0 ? 0 : x * latency(x);
    }

    /** φ'(x), ms. */
    double marginal(double x) {
        double rho = x / capacity;
        return profile.latencyMs(rho, outputTokens) + rho * profile.latencySlope(rho, outputTokens);
    }

    /** φ''(x), ms per req/s. */
    double curvature(double x) {
        double rho = x / capacity;
        return (2 * profile.latencySlope(rho, outputTokens) + rho * profile.latencyCurvature(rho, outputTokens))
                / capacity;
    }

    /**
     * The load that maximizes p·x − φ(x) on [0, c]: where the marginal cost equals the price
     * {@code p}, clamped to the box. Safeguarded Newton: bisection whenever Newton leaves the bracket,
     * which also finds a breakpoint where φ' jumps over p (measured profiles). Newton starts at
     * {@code hint} (the last answer, usually close) when it lies inside the box.
     */
    double loadAt(double p, double hint) {
        if (p <= marginalAtZero) {
            return 0;
        }
        if (p >= marginalAtCapacity) {
            return effectiveCapacity;
        }
        double lo = 0;
        double hi = effectiveCapacity;
        double x = hint > 0 && hint < hi ? hint : 0.5 * hi;
        for (int it = 0; it < 200; it++) {
            double g = marginal(x) - p;
            if (Math.abs(g) <= 1e-13 * p) {
                return x;
            }
            if (g > 0) {
                hi = x;
            } else {
                lo = x;
            }
            if (hi - lo <= 1e-15 * effectiveCapacity) {
                return 0.5 * (lo + hi);
            }
            double next = x - g / curvature(x);
            x = next > lo && next < hi ? next : 0.5 * (lo + hi);
        }
        return x;
    }

    /** dx/dp at the load {@code x = loadAt(p)}: 1/φ'' inside the box, 0 on its faces and at a jump of φ'. */
    double loadSlope(double p, double x) {
        if (x <= 0 || x >= effectiveCapacity) {
            return 0;
        }
        if (Math.abs(marginal(x) - p) > 1e-9 * Math.max(1, Math.abs(p))) {
            return 0;
        }
        return 1 / curvature(x);
    }

    /** The conjugate φ*(p) = max over [0, c] of p·x − φ(x), given the maximizer x. */
    double conjugate(double p, double x) {
        return p * x - cost(x);
    }
}
