package dev.sextant.sim;

import dev.sextant.signal.EngineMetrics;
import dev.sextant.signal.Histogram;
import dev.sextant.signal.VllmBuckets;
import java.util.ArrayList;
import java.util.List;

/**
 * What a simulated engine exports on its {@code /metrics}, as vLLM does: cumulative counters and histograms (with
 * vLLM's bucket bounds) of successes, tokens, prefix-cache hits, time to first token, time between tokens, time
 * waiting for the batch and output tokens per request. The control loop reads it exactly as it reads a real engine's scrape.
 */
final class EngineExport {
    static final double[] QUEUE_BOUNDS = {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
        60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

    /** A cumulative histogram (in seconds, or in tokens). */
    private static final class Cumulative {
        final double[] bounds;
        final long[] counts;
        long count;
        double sum;

        Cumulative(double[] bounds) {
            this.bounds = bounds;
            this.counts = new long[bounds.length];
        }

        void add(double seconds, long n) {
            count += n;
            sum += seconds * n;
            for (int i = 0; i < bounds.length; i++) {
                if (seconds <= bounds[i]) {
                    counts[i] += n;
                    return;
                }
            }
        }

        Histogram histogram() {
            List<Histogram.Bucket> out = new ArrayList<>(bounds.length + 1);
            long c = 0;
            for (int i = 0; i < bounds.length; i++) {
                c += counts[i];
                out.add(new Histogram.Bucket(bounds[i], c));
            }
            out.add(new Histogram.Bucket(Double.POSITIVE_INFINITY, count));
            return new Histogram(out, count, sum);
        }
    }

    private final Cumulative ttft = new Cumulative(VllmBuckets.ttftSeconds());
    private final Cumulative itl = new Cumulative(VllmBuckets.interTokenSeconds());
    private final Cumulative queue = new Cumulative(QUEUE_BOUNDS);
    private final Cumulative outputs = new Cumulative(VllmBuckets.tokens());
    private long successes;
    private long generated;
    private long prompt;
    private long cached;

    /** A request entered the batch after waiting {@code waitedMs}, with {@code promptTokens} of which {@code hit} cached. */
    void admitted(double waitedMs, int promptTokens, int hit) {
        queue.add(waitedMs / 1000, 1);
        prompt += promptTokens;
        cached += hit;
    }

    /** A first token, {@code ms} after the request reached the engine. */
    void firstToken(double ms) {
        ttft.add(ms / 1000, 1);
    }

    /** A request finished with {@code tokens} output tokens, the ones after the first {@code gapMs} apart on average. */
    void finished(int tokens, double gapMs) {
        successes++;
        generated += tokens;
        outputs.add(tokens, 1);
        if (tokens > 1) {
            itl.add(gapMs / 1000, tokens - 1);
        }
    }

    /** The scrape now, with the engine's gauges. */
    EngineMetrics metrics(int running, int waiting, double kvUsage) {
        return new EngineMetrics(EngineMetrics.Flavor.VLLM, running, waiting, kvUsage, ttft.histogram(), itl.histogram(),
                successes, prompt, generated, prompt, cached, Double.NaN, queue.histogram(), Double.NaN,
                outputs.histogram());
    }
}
