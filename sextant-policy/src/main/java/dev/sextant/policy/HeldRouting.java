package dev.sextant.policy;

/**
 * What a held snapshot's routing would cost on a changed fleet ({@link Policies#evaluate}).
 *
 * @param latencyCost   Σ flow × (round trip + engine latency) over routed requests, ms·req/s; infinite when an engine
 *                      would get its whole capacity or more, or a class would go where it may not
 * @param meanLatencyMs {@code latencyCost} per routed request, ms
 * @param routedRps     req/s routed
 * @param shedRps       req/s its shed fractions refuse of the new demand
 * @param maxLoadRatio  the largest load / effective capacity over the engines it loads (above 1: the headroom is
 *                      eaten into)
 * @param maxLoadEngine the engine with that ratio, or null when it loads none
 */
public record HeldRouting(double latencyCost, double meanLatencyMs, double routedRps, double shedRps,
                          double maxLoadRatio, String maxLoadEngine) {
}
