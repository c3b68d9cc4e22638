package dev.sextant.control;

import dev.sextant.signal.EngineMetrics;
import dev.sextant.signal.Histogram;
import java.util.List;
import java.util.SplittableRandom;

/**
 * An engine with known laws, for tests: its counters advance as {@link Batching} says an engine with these
 * parameters behaves at the load it is given, with Poisson noise on what it finishes and a few percent of noise on
 * its latencies; beyond its saturation it finishes only its saturation throughput and its queue grows. The truth
 * the estimator should find is {@link #truth}.
 */
final class FakeEngine {
    /** Its laws and what it is sent; only {@link #outputTokens} changes it. */
    Batching truth;
    private final SplittableRandom rng;
    private double slowdown = 1;
    private double successes;
    private double generated;
    private double prompt;
    private double cached;
    private double ttftCount;
    private double ttftSum;
    private double tbtCount;
    private double tbtSum;
    private double queueCount;
    private double queueSum;
    private double running;
    private double waiting;
    private double backlog;
    private double kv = Double.NaN;
    /** Tokens of KV cache a request holds, for the KV gauge; NaN: no KV gauge. */
    private final double kvTokensPerRequest;
    private final double kvTotal;

    FakeEngine(Batching truth, long seed) {
        this(truth, seed, Double.NaN, Double.NaN);
    }

    FakeEngine(Batching truth, long seed, double kvTokensPerRequest, double kvTotal) {
        this.truth = truth;
        this.rng = new SplittableRandom(seed);
        this.kvTokensPerRequest = kvTokensPerRequest;
        this.kvTotal = kvTotal;
    }

    /** Its clients ask for {@code n} output tokens per request from now on: the same engine, another workload. */
    void outputTokens(double n) {
        Batching t = truth;
        truth = new Batching(t.alpha(), t.gamma(), t.beta(), t.base(), t.perToken(), t.perStep(), t.slots(), n,
                t.promptTokens(), t.outputCv2(), t.cache());
    }

    /** The names it exports its metrics under: what the loop knows of how they are refreshed. */
    EngineMetrics.Flavor flavor = EngineMetrics.Flavor.VLLM;

    /** While true the engine does nothing and its metrics stand still (a hung engine core, or a stale exporter). */
    boolean frozen;

    /**
     * Hangs before its batch: it takes requests and never starts them, so its gauges read an idle engine and nothing
     * moves.
     */
    void hangBeforeTheBatch() {
        running = 0;
        waiting = 0;
        frozen = true;
    }

    void slowdown(double factor) {
        slowdown = factor;
    }

    /**
     * Makes the engine report times between tokens {@code factor} times what its steps take, while it serves as its
     * truth says: metrics that mislead the laws, as a busy host's late timers or an exporter's overhead can.
     */
    void misreportTbt(double factor) {
        tbtReported = factor;
    }

    private double tbtReported = 1;

    private Batching now() {
        return slowdown == 1 ? truth : truth.slower(slowdown);
    }

    /** The saturation throughput now, req/s. */
    double saturation() {
        return now().saturation();
    }

    private double noise(double rel) {
        return 1 + rel * (2 * rng.nextDouble() - 1);
    }

    private long poisson(double mean) {
        if (mean > 50) {
            return Math.max(0, Math.round(mean + Math.sqrt(mean) * rng.nextGaussian()));
        }
        double l = Math.exp(-mean);
        long k = 0;
        double p = 1;
        do {
            k++;
            p *= rng.nextDouble();
        } while (p > l);
        return k - 1;
    }

    /**
     * {@code seconds} of offered load {@code x} req/s, with {@code extraPrompt} extra uncached prompt tokens (one
     * huge prompt) and {@code burst} extra requests arriving at the start.
     */
    void run(double x, double seconds, double extraPrompt, int burst) {
        if (frozen) {
            return; // a hung engine core: its counters and gauges stay where its last step left them
        }
        Batching b = now();
        double mu = b.saturation();
        double offered = x * seconds + burst;
        backlog += offered;
        double served = Math.min(backlog, mu * seconds);
        backlog -= served;
        double load = served / seconds;
        long done = poisson(served);
        boolean queued = backlog > 1;
        double at = Math.min(load, mu * 0.999);
        double tbt = b.tbt(at) * noise(0.03);
        double pi = (load * truth.promptTokens() + extraPrompt / seconds);
        // per token, as engines report it: a step's time at the batch a token sees (Batching.tokenBatch)
        tbt = b.stepTime(Batching.tokenBatch(load * (truth.outputTokens() - 1) * tbt / 1000, b.servers()), pi)
                * noise(0.03);
        double wait = queued ? backlog / mu * 1000 : b.wait(at);
        double ttft = b.firstTokenWithoutQueue(at) + extraPrompt * b.perToken() / Math.max(1, done) + wait;
        successes += done;
        generated += done * truth.outputTokens();
        prompt += done * (truth.promptTokens() + 200) + extraPrompt;
        cached += done * 200;
        ttftCount += done;
        ttftSum += done * ttft * noise(0.05) / 1000;
        tbtCount += done * (truth.outputTokens() - 1);
        tbtSum += done * (truth.outputTokens() - 1) * tbt * tbtReported / 1000;
        queueCount += done;
        queueSum += done * wait / 1000;
        running = queued ? b.servers() : Math.min(b.servers(), poisson(b.busySlots(at)));
        waiting = queued ? Math.round(backlog) : poisson(load * wait / 1000);
        kv = Double.isNaN(kvTokensPerRequest) ? Double.NaN : Math.min(1, running * kvTokensPerRequest / kvTotal);
    }

    /**
     * The time between tokens a canary would see now, ms: one more sequence in the current batch, times what the
     * canary's own reading adds ({@link #canaryReads}).
     */
    double canaryTbt() {
        return now().stepTime(running + 1, 0) * canaryReads;
    }

    /**
     * Makes canaries read times between tokens {@code factor} times what the engine's steps take: one short answer's
     * gaps as a client times them (chunks coalesced, the first gaps after the prefill), which traffic's gaps do not
     * show.
     */
    void canaryReads(double factor) {
        canaryReads = factor;
    }

    private double canaryReads = 1;

    EngineMetrics metrics() {
        return new EngineMetrics(flavor, running, waiting, kv, histogram(ttftCount, ttftSum),
                histogram(tbtCount, tbtSum), successes, prompt, generated, prompt, cached, Double.NaN,
                histogram(queueCount, queueSum), Double.NaN);
    }

    private static Histogram histogram(double count, double sum) {
        return new Histogram(List.of(new Histogram.Bucket(Double.POSITIVE_INFINITY, count)), count, sum);
    }
}
