package dev.sextant.topology;

/**
 * A group of engines at one network location. Network latency is measured gateway cluster to
 * engine cluster, and residency is decided by the engine cluster's region.
 *
 * @param id     unique among engine clusters, non-empty
 * @param region the region, non-empty; classes restrict residency by region
 */
public record EngineCluster(String id, String region) {
    public EngineCluster {
        Checks.id("id", id);
        Checks.id("region", region);
    }
}
