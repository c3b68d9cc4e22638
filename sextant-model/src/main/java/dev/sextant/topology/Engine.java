package dev.sextant.topology;

import java.util.List;

/**
 * One GPU inference server with an HTTP endpoint.
 *
 * @param id          unique among engines, non-empty
 * @param cluster     id of the engine cluster it sits in
 * @param endpoint    base URL of its OpenAI-compatible HTTP API, non-empty
 * @param models      ids of the models it serves, at least one, distinct
 * @param capacityRps requests per second it serves while meeting its profile, &gt; 0; utilization
 *                    ρ = load / capacityRps
 * @param profile     latency as a function of utilization
 * @param health      0..1, scales capacity (1 = fully healthy, 0 = out of service)
 * @param priorityScheduling whether and how it orders waiting requests by their {@code priority} field
 * @param maxNumSeqs  the most requests its batch runs at once, as its server was started with (vLLM's
 *                    {@code --max-num-seqs}, SGLang's {@code --max-running-requests}), 1 to {@link #MAX_NUM_SEQS}; 0 when
 *                    the topology does not say
 */
public record Engine(String id, String cluster, String endpoint, List<String> models, double capacityRps,
                     LatencyProfile profile, double health, PriorityScheduling priorityScheduling, int maxNumSeqs) {
    /** The largest {@code max_num_seqs} a topology may state: far beyond any engine's batch. */
    public static final int MAX_NUM_SEQS = 1_000_000;

    public Engine {
        Checks.id("id", id);
        Checks.id("cluster", cluster);
        Checks.id("endpoint", endpoint);
        if (models == null || models.isEmpty()) {
            throw new IllegalArgumentException("models: empty (expected: at least one model id)");
        }
        models = List.copyOf(models);
        if (models.stream().distinct().count() != models.size()) {
            throw new IllegalArgumentException("models: " + models + " (expected: distinct model ids)");
        }
        Checks.positive("capacity_rps", capacityRps);
        if (profile == null) {
            throw new IllegalArgumentException("profile: missing (expected: a latency profile)");
        }
        if (!(health >= 0 && health <= 1)) {
            throw new IllegalArgumentException("health: " + health + " (expected: in [0, 1])");
        }
        if (priorityScheduling == null) {
            throw new IllegalArgumentException("priority_scheduling: missing (expected: none, lower_first or"
                    + " higher_first)");
        }
        Checks.maxNumSeqs(maxNumSeqs);
    }

    /** An engine whose batch limit the topology does not state. */
    public Engine(String id, String cluster, String endpoint, List<String> models, double capacityRps,
                  LatencyProfile profile, double health, PriorityScheduling priorityScheduling) {
        this(id, cluster, endpoint, models, capacityRps, profile, health, priorityScheduling, 0);
    }

    /** An engine that serves first come, first served ({@link PriorityScheduling#NONE}). */
    public Engine(String id, String cluster, String endpoint, List<String> models, double capacityRps,
                  LatencyProfile profile, double health) {
        this(id, cluster, endpoint, models, capacityRps, profile, health, PriorityScheduling.NONE);
    }

    /** Effective capacity in req/s: {@code capacity_rps × health × penalty × (1 − headroom)}. */
    public double effectiveCapacityRps(double headroom, double penalty) {
        return capacityRps * health * penalty * (1 - headroom);
    }

    /** True when the engine serves {@code model}. */
    public boolean serves(String model) {
        return models.contains(model);
    }

    /** The same engine (endpoint, models, scheduling) with other ratings: what an estimate of it says. */
    public Engine rated(double newCapacityRps, LatencyProfile newProfile, double newHealth) {
        return new Engine(id, cluster, endpoint, models, newCapacityRps, newProfile, newHealth, priorityScheduling,
                maxNumSeqs);
    }

    /** The same engine started with another batch limit ({@code 0}: states none). */
    public Engine withMaxNumSeqs(int newMaxNumSeqs) {
        return new Engine(id, cluster, endpoint, models, capacityRps, profile, health, priorityScheduling,
                newMaxNumSeqs);
    }

    /** The same engine with another health, in [0, 1]. */
    public Engine withHealth(double newHealth) {
        return new Engine(id, cluster, endpoint, models, capacityRps, profile, newHealth, priorityScheduling,
                maxNumSeqs);
    }
}
