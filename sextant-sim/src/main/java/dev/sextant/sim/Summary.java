package dev.sextant.sim;

/**
 * One policy's line of {@code summary.json}, over the whole run. This shape is a contract for tooling:
 * field names (snake_case in JSON) and meanings do not change.
 *
 * @param ttftP50Ms          median time to first token seen by clients (network round trip included), ms
 * @param ttftP99Ms          99th percentile of it, ms
 * @param e2eP50Ms           median end-to-end latency of completed requests, ms
 * @param e2eP99Ms           99th percentile of it, ms
 * @param cacheHitRate       prompt tokens served from prefix caches / prompt tokens admitted, in [0, 1]
 * @param shedFraction       requests refused by admission / requests generated, in [0, 1]
 * @param failed             requests that ended in an error the client saw (crash, unreachable, timeout)
 * @param retryAmplification attempts / requests sent at least once, ≥ 1
 * @param weightChurnPerMin  Σ|Δw| per minute per gateway cluster (0 for policies without weights)
 * @param residencyViolations attempts sent to an engine outside the request's allowed set
 */
public record Summary(double ttftP50Ms, double ttftP99Ms, double e2eP50Ms, double e2eP99Ms, double cacheHitRate,
                      double shedFraction, long failed, double retryAmplification, double weightChurnPerMin,
                      long residencyViolations) {
}
