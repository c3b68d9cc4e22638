package dev.sextant.signal;

/**
 * What an engine did between two successive scrapes: mean latencies and rates over the interval.
 *
 * <p>Counters that went down mean the engine restarted in between; the later value is then taken whole as the
 * increase, as Prometheus' {@code rate} does.
 *
 * @param seconds                  interval length, seconds, &gt; 0
 * @param meanTtftSeconds          mean time to first token of the requests that got it in the interval,
 *                                 seconds; {@code NaN} when none did
 * @param meanTbtSeconds           mean time between output tokens in the interval, seconds; {@code NaN} when
 *                                 none
 * @param successPerSecond         successfully finished requests per second, ≥ 0
 * @param firstTokensPerSecond     requests that got their first token, per second, ≥ 0
 * @param promptTokensPerSecond    prefilled prompt tokens per second, ≥ 0
 * @param generationTokensPerSecond generated output tokens per second, ≥ 0
 * @param ttft                     the interval's TTFT histogram (differences of the two scrapes)
 * @param tbt                      the interval's TBT histogram
 * @param meanQueueSeconds         mean time the requests admitted in the interval waited for the batch, seconds;
 *                                 {@code NaN} when the engine exports no queue time or none was admitted
 * @param cachedPromptTokensPerSecond prompt tokens served from the prefix cache per second, ≥ 0; from vLLM's
 *                                 counters, else SGLang's hit-rate gauge times the prompt tokens; {@code NaN}
 *                                 when the engine exports neither
 */
public record MetricsInterval(double seconds, double meanTtftSeconds, double meanTbtSeconds, double successPerSecond,
                              double firstTokensPerSecond, double promptTokensPerSecond,
                              double generationTokensPerSecond, Histogram ttft, Histogram tbt,
                              double meanQueueSeconds, double cachedPromptTokensPerSecond) {

    /**
     * The interval between two scrapes of one engine.
     *
     * @param earlier the first scrape
     * @param later   the next scrape of the same engine
     * @param seconds time between the two scrapes, seconds, &gt; 0 (the caller's clock, not the engine's)
     */
    public static MetricsInterval between(EngineMetrics earlier, EngineMetrics later, double seconds) {
        if (!(seconds > 0) || Double.isInfinite(seconds)) {
            throw new IllegalArgumentException("seconds: " + seconds + " (expected: a finite number > 0)");
        }
        Histogram ttft = later.ttft().minus(earlier.ttft());
        Histogram tbt = later.tbt().minus(earlier.tbt());
        double prompt = increase(earlier.promptTokens(), later.promptTokens()) / seconds;
        double cached = increase(earlier.prefixCacheHits(), later.prefixCacheHits()) / seconds;
        if (Double.isNaN(cached) && !Double.isNaN(later.cacheHitRate())) {
            cached = later.cacheHitRate() * prompt;
        }
        return new MetricsInterval(seconds, ttft.mean(), tbt.mean(),
                increase(earlier.successCount(), later.successCount()) / seconds,
                ttft.count() / seconds,
                prompt,
                increase(earlier.generationTokens(), later.generationTokens()) / seconds,
                ttft, tbt, later.queueTime().minus(earlier.queueTime()).mean(), cached);
    }

    private static double increase(double earlier, double later) {
        if (Double.isNaN(later)) {
            return Double.NaN;
        }
        if (Double.isNaN(earlier) || later < earlier) {
            return later;
        }
        return later - earlier;
    }
}
