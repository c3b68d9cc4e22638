package dev.sextant.request;

/**
 * What a gateway reports on {@code /healthz} and in metrics about its data plane.
 *
 * @param gatewayCluster  the gateway cluster this data plane routes for
 * @param version         the held snapshot's version
 * @param hash            the held snapshot's content hash
 * @param ageNanos        time since the snapshot was swapped in (or last confirmed), ns ≥ 0
 * @param fallback        true when the snapshot is older than the limit and the fallback policy routes
 * @param inFlight        requests this gateway has in flight, all engines
 * @param retryTokens     retry budget tokens available now (deposits; the floor comes on top)
 * @param ejectedEngines  engines locally ejected now
 */
public record DataPlaneStatus(String gatewayCluster, long version, String hash, long ageNanos, boolean fallback,
                              int inFlight, double retryTokens, int ejectedEngines) {
}
