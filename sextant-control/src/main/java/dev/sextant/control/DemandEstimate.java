package dev.sextant.control;

/**
 * The demand of one (gateway cluster, class) the optimizer plans for.
 *
 * @param rps           req/s, ≥ 0
 * @param configuredRps the topology's demand_rps (0 when absent)
 * @param reportedRps   what the gateways' reports show, req/s: {@code rps}, but below it while the configured demand
 *                      holds as the floor of a ramp the reports cannot yet tell from a level; 0 before any report
 * @param standardError the Poisson standard error of {@code reportedRps}, req/s; NaN when not observed
 * @param why           "observed: 2,240 requests in 50 s of reports" or "configured (no report yet)"
 */
public record DemandEstimate(double rps, double configuredRps, double reportedRps, double standardError, String why) {
    /** True while the configured demand holds this estimate above what the reports show. */
    public boolean floored() {
        return rps > reportedRps && !Double.isNaN(standardError);
    }
}
