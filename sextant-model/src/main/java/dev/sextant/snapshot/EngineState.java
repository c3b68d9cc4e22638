package dev.sextant.snapshot;

import dev.sextant.topology.PriorityScheduling;
import java.util.List;

/**
 * One engine as the policy sees it.
 *
 * @param cluster              engine cluster id
 * @param region               engine cluster's region
 * @param endpoint             base URL of the engine's HTTP API
 * @param models               models served
 * @param loadRps              req/s the policy sends it, ≥ 0
 * @param capacityRps          nominal capacity, req/s
 * @param effectiveCapacityRps capacity × health × penalty × (1 − headroom), req/s
 * @param utilization          load / capacity_rps, the ρ of its latency profile
 * @param latencyMs            engine-side latency T at this load, ms (infinite beyond capacity)
 * @param marginalCostMs       d/dx [x·T(x)] at this load, ms
 * @param shadowPriceMs        price of its capacity constraint, ms, ≥ 0; positive only when it is full
 *                             and traffic would rather go there
 * @param penalty              factor in (0, 1] applied to capacity by outlier penalties (1 = none)
 * @param priorityScheduling   whether the engine orders waiting requests by their {@code priority} field, and
 *                             which way: what the gateway writes into a forwarded body
 * @param batchPlaces          how many requests its batch runs at once, as the policy knows it (the topology's
 *                             {@code max_num_seqs}, or the control loop's estimate); NaN when unknown. A gateway
 *                             reads from it when a new conversation would wait for a place (docs/request-path.md §4)
 * @param contextKeptSeconds   how long its prefix cache keeps a conversation's context after the conversation's last
 *                             request at this load, s, as the control loop estimates it (docs/control-loop.md, "The
 *                             prefix cache's capacity"); NaN where unknown or where the cache keeps every context. A
 *                             gateway places a conversation that has been away longer as a new one (docs/request-path.md
 *                             §4, "Spacing new conversations")
 */
public record EngineState(String cluster, String region, String endpoint, List<String> models, double loadRps,
                          double capacityRps, double effectiveCapacityRps, double utilization, double latencyMs,
                          double marginalCostMs, double shadowPriceMs, double penalty,
                          PriorityScheduling priorityScheduling, double batchPlaces, double contextKeptSeconds) {
    public EngineState {
        Present.present(cluster, "cluster", "an engine cluster id");
        Present.present(region, "region", "a region");
        Present.present(endpoint, "endpoint", "the engine's base URL");
        models = Present.items(models, "models", "a list of model ids", "a model id");
        if (priorityScheduling == null) {
            priorityScheduling = PriorityScheduling.NONE;
        }
        if (contextKeptSeconds < 0) {
            throw new IllegalArgumentException("context_kept_seconds: " + contextKeptSeconds
                    + " (expected: a number of seconds >= 0, or none)");
        }
        if (Double.isInfinite(contextKeptSeconds)) {
            contextKeptSeconds = Double.NaN; // a cache that keeps every context: nothing to tell a gateway
        }
    }

    /** An engine whose cache's keeping time the policy does not know. */
    public EngineState(String cluster, String region, String endpoint, List<String> models, double loadRps,
                       double capacityRps, double effectiveCapacityRps, double utilization, double latencyMs,
                       double marginalCostMs, double shadowPriceMs, double penalty,
                       PriorityScheduling priorityScheduling, double batchPlaces) {
        this(cluster, region, endpoint, models, loadRps, capacityRps, effectiveCapacityRps, utilization, latencyMs,
                marginalCostMs, shadowPriceMs, penalty, priorityScheduling, batchPlaces, Double.NaN);
    }

    /** This engine with its cache's keeping time {@code seconds} (NaN: unknown). */
    public EngineState withContextKeptSeconds(double seconds) {
        return new EngineState(cluster, region, endpoint, models, loadRps, capacityRps, effectiveCapacityRps,
                utilization, latencyMs, marginalCostMs, shadowPriceMs, penalty, priorityScheduling, batchPlaces,
                seconds);
    }

    /** An engine whose batch the policy does not know. */
    public EngineState(String cluster, String region, String endpoint, List<String> models, double loadRps,
                       double capacityRps, double effectiveCapacityRps, double utilization, double latencyMs,
                       double marginalCostMs, double shadowPriceMs, double penalty,
                       PriorityScheduling priorityScheduling) {
        this(cluster, region, endpoint, models, loadRps, capacityRps, effectiveCapacityRps, utilization, latencyMs,
                marginalCostMs, shadowPriceMs, penalty, priorityScheduling, Double.NaN);
    }

    /** An engine that serves first come, first served, whose batch the policy does not know. */
    public EngineState(String cluster, String region, String endpoint, List<String> models, double loadRps,
                       double capacityRps, double effectiveCapacityRps, double utilization, double latencyMs,
                       double marginalCostMs, double shadowPriceMs, double penalty) {
        this(cluster, region, endpoint, models, loadRps, capacityRps, effectiveCapacityRps, utilization, latencyMs,
                marginalCostMs, shadowPriceMs, penalty, PriorityScheduling.NONE);
    }
}
