package dev.sextant.control;

import dev.sextant.signal.EngineMetrics;

/**
 * One scrape of one engine's {@code /metrics}: what it said, or why it said nothing. The counters and histograms
 * are cumulative as the engine exports them; the control loop takes the differences between successive scrapes
 * of the same engine (a counter that went down means the engine restarted).
 *
 * @param engine  the engine's id in the topology, non-empty
 * @param atNanos when the scrape was taken, on the loop's {@link dev.sextant.request.Ticker}
 * @param metrics what it exported, or null when the scrape failed
 * @param failure why the scrape failed ("connection refused", "HTTP 500", "unparsable metrics: …"), or null
 */
public record EngineScrape(String engine, long atNanos, EngineMetrics metrics, String failure) {
    public EngineScrape {
        if (engine == null || engine.isEmpty()) {
            throw new IllegalArgumentException("engine: '" + engine + "' (expected: an engine id)");
        }
        if ((metrics == null) == (failure == null)) {
            throw new IllegalArgumentException("metrics, failure: " + (metrics == null ? "both missing" : "both given")
                    + " (expected: exactly one)");
        }
    }

    /** A scrape that answered. */
    public static EngineScrape of(String engine, long atNanos, EngineMetrics metrics) {
        return new EngineScrape(engine, atNanos, metrics, null);
    }

    /** A scrape that failed, with the reason. */
    public static EngineScrape failed(String engine, long atNanos, String why) {
        return new EngineScrape(engine, atNanos, null, why == null || why.isEmpty() ? "failed" : why);
    }

    /** True when the engine answered. */
    public boolean ok() {
        return metrics != null;
    }
}
