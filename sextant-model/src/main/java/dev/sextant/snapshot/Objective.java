package dev.sextant.snapshot;

/**
 * The cost of a policy and the certificate of how far it can be from the optimum.
 *
 * @param meanLatencyMs  mean expected end-to-end latency over routed requests, ms (network round trip
 *                       plus engine latency); infinite when a policy overloads an engine
 * @param latencyCost    Σ flow × latency over routed requests, ms·req/s
 * @param lowerBound     Lagrangian dual bound on the latency cost with shed amounts fixed, ms·req/s;
 *                       NaN for a policy without prices
 * @param gapRelative    (latencyCost − lowerBound) / latencyCost, ≥ 0 up to rounding; NaN without a bound
 * @param shedRps        total req/s refused
 * @param iterations     solver iterations (Newton steps), 0 for a closed-form policy
 */
public record Objective(double meanLatencyMs, double latencyCost, double lowerBound, double gapRelative,
                        double shedRps, int iterations) {
}
