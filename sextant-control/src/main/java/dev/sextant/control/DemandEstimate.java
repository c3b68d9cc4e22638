package dev.sextant.control;

/**
 * The demand of one (gateway cluster, class) the optimizer plans for.
 *
 * @param rps           req/s, ≥ 0
 * @param configuredRps the topology's demand_rps (0 when absent)
 * @param standardError the Poisson standard error of {@code rps}, req/s; NaN when not observed
 * @param why           "observed: 2,240 requests in 50 s of reports" or "configured (no report yet)"
 */
public record DemandEstimate(double rps, double configuredRps, double standardError, String why) {
}
