package dev.sextant.topology;

/**
 * What a topology knows in advance about every engine of one kind of hardware (an H100 node running one model
 * server, say): its rating. An engine that names the kind, in the topology or when it registers, takes these unless
 * it says otherwise (docs/topology.md, "hardware"); the control loop then estimates each engine from what it sees.
 *
 * @param id          the kind's name, non-empty
 * @param capacityRps requests per second one engine of this kind serves while meeting its profile, &gt; 0
 * @param profile     its latency as a function of utilization
 * @param maxNumSeqs  the most requests one engine's batch runs at once ({@link Engine#maxNumSeqs()}); 0 when not said
 */
public record HardwareKind(String id, double capacityRps, LatencyProfile profile, int maxNumSeqs) {
    public HardwareKind {
        Checks.id("id", id);
        Checks.positive("capacity_rps", capacityRps);
        if (profile == null) {
            throw new IllegalArgumentException("profile: missing (expected: a latency profile)");
        }
        Checks.maxNumSeqs(maxNumSeqs);
    }

    /** A kind whose batch limit is not said. */
    public HardwareKind(String id, double capacityRps, LatencyProfile profile) {
        this(id, capacityRps, profile, 0);
    }
}
