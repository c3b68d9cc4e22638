package dev.sextant.control;

import dev.sextant.signal.EngineMetrics;
import dev.sextant.signal.Histogram;

/**
 * What one engine did between two successive successful scrapes: rates and means over the interval, and its
 * batch and queue at both ends. Counters that went down mean the engine restarted; the later value is then the
 * whole increase, as Prometheus' {@code rate} takes it.
 *
 * @param atNanos      when the later scrape was taken
 * @param seconds      the interval's length, &gt; 0
 * @param completions  requests finished successfully
 * @param generated    output tokens generated
 * @param prompt       prompt tokens prefilled (cached ones included)
 * @param cached       prompt tokens served from the prefix cache; NaN when the engine exports none
 * @param ttftMs       mean time to first token, ms; NaN without one
 * @param ttftCount    first tokens in the interval
 * @param tbtMs        mean time between tokens, ms; NaN without one
 * @param tbtCount     token gaps in the interval
 * @param queueMs      mean wait for the batch of the requests admitted, ms; NaN when not exported
 * @param runningStart sequences in the batch at the first scrape (NaN when not exported)
 * @param runningEnd   … at the second
 * @param waitingStart requests queued at the first scrape
 * @param waitingEnd   … at the second
 * @param kvUsage      KV-cache fraction in use at the second scrape; NaN when not exported
 * @param batchLimit   the batch limit the engine reports (SGLang's {@code max_running_requests}); NaN when not
 * @param outputLengths output tokens of the requests finished in the interval, bucketed as the engine exports them
 *                     ({@link Histogram#EMPTY} when it does not)
 */
record Interval(long atNanos, double seconds, double completions, double generated, double prompt, double cached,
                double ttftMs, double ttftCount, double tbtMs, double tbtCount, double queueMs, double runningStart,
                double runningEnd, double waitingStart, double waitingEnd, double kvUsage, double batchLimit,
                Histogram outputLengths) {

    /** An interval without output lengths. */
    Interval(long atNanos, double seconds, double completions, double generated, double prompt, double cached,
             double ttftMs, double ttftCount, double tbtMs, double tbtCount, double queueMs, double runningStart,
             double runningEnd, double waitingStart, double waitingEnd, double kvUsage, double batchLimit) {
        this(atNanos, seconds, completions, generated, prompt, cached, ttftMs, ttftCount, tbtMs, tbtCount, queueMs,
                runningStart, runningEnd, waitingStart, waitingEnd, kvUsage, batchLimit, Histogram.EMPTY);
    }

    /** The interval between {@code earlier} and {@code later}, {@code seconds} apart (&gt; 0). */
    static Interval between(EngineMetrics earlier, EngineMetrics later, double seconds, long atNanos) {
        Histogram ttft = later.ttft().minus(earlier.ttft());
        Histogram tbt = later.tbt().minus(earlier.tbt());
        Histogram queue = later.queueTime().minus(earlier.queueTime());
        double prompt = increase(earlier.promptTokens(), later.promptTokens());
        double cached = increase(earlier.prefixCacheHits(), later.prefixCacheHits());
        if (Double.isNaN(cached) && !Double.isNaN(later.cacheHitRate())) {
            cached = later.cacheHitRate() * (Double.isNaN(prompt) ? 0 : prompt);
        }
        return new Interval(atNanos, seconds, nonNaN(increase(earlier.successCount(), later.successCount())),
                increase(earlier.generationTokens(), later.generationTokens()), prompt, cached,
                ttft.mean() * 1000, ttft.count(), tbt.mean() * 1000, tbt.count(), queue.mean() * 1000,
                earlier.running(), later.running(), earlier.waiting(), later.waiting(), later.kvCacheUsage(),
                later.maxRunning(), later.outputLengths().minus(earlier.outputLengths()));
    }

    private static double nonNaN(double v) {
        return Double.isNaN(v) ? 0 : v;
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

    /**
     * Requests the engine held through the interval: in its batch or its queue at both scrapes (0 when it exports
     * neither gauge).
     */
    double held() {
        return Math.min(nonNaN(runningStart) + nonNaN(waitingStart), nonNaN(runningEnd) + nonNaN(waitingEnd));
    }

    /**
     * True when none of the interval's counters moved: no token generated, no prompt prefilled, no request finished,
     * no first token, no token gap. False when the engine exports neither token counter: its silence then says nothing.
     */
    boolean noTokens() {
        if (Double.isNaN(generated) && Double.isNaN(prompt)) {
            return false;
        }
        return !(generated > 0) && !(prompt > 0) && !(completions > 0) && !(ttftCount > 0) && !(tbtCount > 0);
    }

    /** Requests per second the engine finished. */
    double load() {
        return completions / seconds;
    }

    /** Uncached prompt tokens per second it prefilled (0 when not exported). */
    double prefillRate() {
        if (Double.isNaN(prompt)) {
            return 0;
        }
        return Math.max(0, prompt - (Double.isNaN(cached) ? 0 : cached)) / seconds;
    }

    /** Sequences in the batch, the mean of both ends; NaN when not exported. */
    double running() {
        if (Double.isNaN(runningStart)) {
            return runningEnd;
        }
        return Double.isNaN(runningEnd) ? runningStart : 0.5 * (runningStart + runningEnd);
    }

    /**
     * Sequences decoding, averaged over the interval's time, by Little's law on its token gaps: each gap is time one
     * sequence spent in the batch, so their sum over the interval's length is the mean batch ({@code tbtCount ×
     * tbtMs / seconds}). Unlike {@link #running()} (the gauge at two instants) it has no sampling noise, which in a
     * regressor flattens the fitted slope (errors in variables); {@link #running()} when the interval has no gaps.
     */
    double decoding() {
        if (Double.isNaN(tbtMs) || !(tbtCount > 0)) {
            return running();
        }
        return tbtCount * tbtMs / 1000 / seconds;
    }

    /** Time to first token without the wait for the batch, ms; NaN when it cannot be told apart. */
    double firstTokenWithoutQueue() {
        if (Double.isNaN(ttftMs)) {
            return Double.NaN;
        }
        if (!Double.isNaN(queueMs)) {
            return Math.max(0, ttftMs - queueMs);
        }
        return saturated() || waitingEnd > 0 && waitingStart > 0 ? Double.NaN : ttftMs;
    }

    /**
     * True when requests waited for the batch, not merely for the next step: their mean wait was more than three
     * steps, or (without a queue-time histogram) requests were waiting at both scrapes, more than three steps'
     * worth of arrivals.
     */
    boolean saturated() {
        double step = Double.isNaN(tbtMs) ? 0 : tbtMs;
        if (!Double.isNaN(queueMs)) {
            return queueMs > 3 * Math.max(step, 1.0);
        }
        if (Double.isNaN(waitingStart) || Double.isNaN(waitingEnd)) {
            return false;
        }
        double perStep = load() * step / 1000;
        return Math.min(waitingStart, waitingEnd) > Math.max(1, 3 * perStep);
    }
}
