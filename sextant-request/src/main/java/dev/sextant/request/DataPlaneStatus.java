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
 * @param retryTokens     retry budget tokens available now, summed over the classes' budgets (deposits; each
 *                        class's floor comes on top)
 * @param ejectedEngines  engines locally ejected now
 * @param localSlotTables classes whose slot table this gateway built from the weights alone because the
 *                        snapshot carried none or an invalid one (see
 *                        {@link DataPlaneListener#onLocalSlotTable}); 0 when every class uses the
 *                        snapshot's table, so that every gateway chooses the same engines for a key
 * @param spills          requests sent away from their key's engine because it was over its expected load (to the
 *                        nearest allowed engine with room), since the data plane started
 */
public record DataPlaneStatus(String gatewayCluster, long version, String hash, long ageNanos, boolean fallback,
                              int inFlight, double retryTokens, int ejectedEngines, int localSlotTables, long spills) {
}
