package dev.sextant.topology;

/**
 * A CPU cluster where client requests arrive (a <em>source</em> of demand). It runs one or more
 * gateway processes, the data plane.
 *
 * @param id     unique among gateway clusters, non-empty
 * @param region the region the cluster sits in, non-empty
 */
public record GatewayCluster(String id, String region) {
    public GatewayCluster {
        Checks.id("id", id);
        Checks.id("region", region);
    }
}
