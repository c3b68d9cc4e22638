package dev.sextant.sim;

import dev.sextant.signal.EngineMetrics;
import dev.sextant.signal.Histogram;
import dev.sextant.signal.VllmBuckets;
import java.util.ArrayList;
import java.util.List;

/**
 * What a simulated engine exports on its {@code /metrics}, as vLLM does: cumulative counters and histograms (with
 * vLLM's bucket bounds) of successes, tokens, prefix-cache hits, time to first token, time between tokens, time
 * waiting for the batch and output tokens per request, each observed when vLLM observes it. The control loop reads it exactly as it reads a real engine's scrape.
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
            add(bucket(seconds), seconds, n);
        }

        /** The bucket {@code seconds} falls in; {@code bounds.length}: beyond the last bound. */
        int bucket(double seconds) {
            for (int i = 0; i < bounds.length; i++) {
                if (seconds <= bounds[i]) {
                    return i;
                }
            }
            return bounds.length;
        }

        void add(int bucket, double seconds, long n) {
            count += n;
            sum += seconds * n;
            if (bucket < bounds.length) {
                counts[bucket] += n;
            }
        }

        Cumulative copy() {
            Cumulative c = new Cumulative(bounds);
            System.arraycopy(counts, 0, c.counts, 0, counts.length);
            c.count = count;
            c.sum = sum;
            return c;
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
        generated++;
    }

    /**
     * {@code tokens} later tokens generated, each {@code gapMs} after the one before: counted as they are generated,
     * as vLLM observes its inter-token histogram and generation counter at every step, not when a request ends (a
     * scrape after an engine slowed shows it, though no request has finished since).
     */
    void tokens(long tokens, double gapMs) {
        if (tokens > 0) {
            tokens(gapBucket(gapMs), tokens, gapMs);
        }
    }

    /** The bucket of the inter-token histogram a gap of {@code gapMs} falls in, for {@link #tokens(int, long, double)}. */
    int gapBucket(double gapMs) {
        return itl.bucket(gapMs / 1000);
    }

    /** As {@link #tokens(long, double)}, with the gap's bucket found once for every sequence of a step. */
    void tokens(int bucket, long tokens, double gapMs) {
        generated += tokens;
        itl.add(bucket, gapMs / 1000, tokens);
    }

    /** A request finished with {@code tokens} output tokens. */
    void finished(int tokens) {
        successes++;
        outputs.add(tokens, 1);
    }

    /**
     * The scrape now, with the engine's gauges, and {@code moreTokens} generated {@code gapMs} apart that the engine has
     * generated but not yet told this export (the steps ended so far of a run it simulates as one event).
     */
    EngineMetrics metrics(int running, int waiting, double kvUsage, long moreTokens, double gapMs) {
        Cumulative gaps = itl;
        if (moreTokens > 0) {
            gaps = itl.copy();
            gaps.add(gapMs / 1000, moreTokens);
        }
        return new EngineMetrics(EngineMetrics.Flavor.VLLM, running, waiting, kvUsage, ttft.histogram(), gaps.histogram(),
                successes, prompt, generated + moreTokens, prompt, cached, Double.NaN, queue.histogram(),
                Double.NaN, outputs.histogram());
    }
}
