package dev.sextant.control;

import dev.sextant.topology.LatencyProfile;

/**
 * What the control loop believes about one engine, with the evidence behind it.
 *
 * @param engine             the engine's id
 * @param group              the group of identical engines whose laws it shares
 * @param condition          what the evidence says about its service
 * @param health             the health the optimizer gets, in [0, 1]: 0 out of service, else the configured health (a
 *                           failing engine planned as capacity of last resort has its configured health)
 * @param capacityRps        the estimated capacity, req/s (where its queue would grow without bound), &gt; 0
 * @param configuredRps      the topology's capacity_rps
 * @param profile            the latency profile the optimizer prices it with (over ρ = load / capacityRps)
 * @param idleTtftMs         the TTFT of a request that finds it idle, ms: what the overload bound is a factor of. The
 *                           profile's value at ρ = 0 may lie above it, where light load's TTFT is concave (the profile
 *                           takes the line of its lightest loads there; docs/control-loop.md, "The engine model")
 * @param slowdown           how many times slower than its group's law it decodes (1 = as its group)
 * @param batchSlots         how many requests its batch holds, as estimated
 * @param evidence           how much the evidence weighs against the configured profile, in [0, 1)
 * @param capacityWhy        "capacity 31 req/s, estimated from 640 requests over 12 min …; configured 60"
 * @param speedWhy           the last judgement of its speed
 * @param conditionWhy       why its condition is what it is, and what will lift it
 */
public record EngineEstimate(String engine, String group, Condition condition, double health, double capacityRps,
                             double configuredRps, LatencyProfile profile, double idleTtftMs, double slowdown,
                             double batchSlots, double evidence, String capacityWhy, String speedWhy,
                             String conditionWhy) {
    /** This estimate with the health {@code h} and {@code more} added to why its condition is what it is. */
    EngineEstimate planned(double h, String more) {
        return new EngineEstimate(engine, group, condition, h, capacityRps, configuredRps, profile, idleTtftMs, slowdown,
                batchSlots, evidence, capacityWhy, speedWhy, conditionWhy + more);
    }
}
