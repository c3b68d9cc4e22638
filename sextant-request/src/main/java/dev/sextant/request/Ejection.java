package dev.sextant.request;

/**
 * A local outlier ejection: the engine is skipped until {@code untilNanos}.
 *
 * @param engineId   the ejected engine
 * @param reason     why, e.g. {@code "5 consecutive failures (last: TIMEOUT)"}
 * @param sinceNanos when it was ejected, on the data plane's {@link Ticker}
 * @param untilNanos when it returns, on the data plane's {@link Ticker}
 * @param multiplier k in {@code base × k}: how many recent ejections this one follows, ≥ 1
 */
public record Ejection(String engineId, String reason, long sinceNanos, long untilNanos, int multiplier) {
}
