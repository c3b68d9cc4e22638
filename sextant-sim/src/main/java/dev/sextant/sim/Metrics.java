package dev.sextant.sim;

import java.util.ArrayList;
import java.util.List;
import org.HdrHistogram.Histogram;

/**
 * What one run measured: latency histograms (microseconds, 3 significant digits), counts of how requests
 * ended, cache reuse, weight churn, and time series sampled every {@code scenario.sampleMs()}.
 */
final class Metrics {
    private static final long MAX_US = 24L * 3600 * 1_000_000;

    private final Simulation sim;
    final Histogram ttft = new Histogram(MAX_US, 3);
    final Histogram e2e = new Histogram(MAX_US, 3);
    final Histogram[] ttftByClass;
    final Histogram[] e2eByClass;

    long generated;
    final long[] generatedByClass;
    final long[] shedByClass;
    /** Gateway → engine → attempts sent. */
    final long[][] attemptsTo;
    long completed;
    long shed;
    long failed;
    /** Requests still in flight when the drain's limit ended the run (among {@link #failed}). */
    private long unfinished;
    long timeouts;
    long attempts;
    long retries;
    long dispatched;
    long residencyViolations;
    double churn;
    double endMs;

    /** One row per sample: time (s), completed, shed, failed, cache hit rate in the interval, mean TTFT (ms). */
    final List<double[]> series = new ArrayList<>();
    /** Per sample, per engine: busy fraction in the interval. */
    final List<float[]> utilization = new ArrayList<>();
    /**
     * Per sample, per engine: mean running sequences over the interval / {@code max_seqs}, how full the batch was
     * (the busy fraction is ≈ 1 for any engine with work, since a step runs whenever one sequence does).
     */
    final List<float[]> occupancy = new ArrayList<>();
    /** Per sample, per engine: requests waiting. */
    final List<int[]> queue = new ArrayList<>();
    /** Per sample, per engine: the policy's weight at gateway 0 for class 0 (NaN without weights). */
    final List<float[]> weights = new ArrayList<>();
    /** Per sample, per engine: prompt tokens admitted over the interval. */
    final List<long[]> promptTokens = new ArrayList<>();
    /** Per sample, per engine: the share of them served from its prefix cache (NaN where none were admitted). */
    final List<float[]> cacheHits = new ArrayList<>();

    private long bucketCompleted;
    private long bucketShed;
    private long bucketFailed;
    private double bucketTtftSum;
    private long lastSaved;
    private long lastPrompt;
    private double[] lastBusy;
    private double[] lastSequenceMs;
    private long[] lastEnginePrompt;
    private long[] lastEngineSaved;
    private double lastSample;

    Metrics(Simulation sim) {
        this.sim = sim;
        int classes = sim.classCount;
        ttftByClass = new Histogram[classes];
        e2eByClass = new Histogram[classes];
        for (int k = 0; k < classes; k++) {
            ttftByClass[k] = new Histogram(MAX_US, 3);
            e2eByClass[k] = new Histogram(MAX_US, 3);
        }
        lastBusy = new double[sim.engineCount];
        lastSequenceMs = new double[sim.engineCount];
        lastEnginePrompt = new long[sim.engineCount];
        lastEngineSaved = new long[sim.engineCount];
        generatedByClass = new long[classes];
        shedByClass = new long[classes];
        attemptsTo = new long[sim.gatewayCount][sim.engineCount];
    }

    /** Requests generated but not yet ended. */
    long open() {
        return generated - completed - shed - failed;
    }

    void generated(SimRequest r) {
        generated++;
        generatedByClass[r.trafficClass]++;
    }

    void attempt(SimRequest r) {
        attempts++;
        attemptsTo[r.gateway][r.engine]++;
        if (r.attempts == 1) {
            dispatched++;
        }
    }

    void retry() {
        retries++;
    }

    void timeout() {
        timeouts++;
    }

    void residencyViolation() {
        residencyViolations++;
    }

    /** Adds Σ|Δw| of one weight update at one gateway cluster. */
    void churn(double sumAbsDelta) {
        churn += sumAbsDelta;
    }

    void ended(SimRequest r) {
        switch (r.end) {
            case COMPLETED -> {
                completed++;
                bucketCompleted++;
                long t = Math.max(0, Math.round((r.firstTokenMs - r.arrivalMs) * 1000));
                long e = Math.max(0, Math.round((r.endMs - r.arrivalMs) * 1000));
                ttft.recordValue(Math.min(t, MAX_US));
                e2e.recordValue(Math.min(e, MAX_US));
                ttftByClass[r.trafficClass].recordValue(Math.min(t, MAX_US));
                e2eByClass[r.trafficClass].recordValue(Math.min(e, MAX_US));
                bucketTtftSum += r.firstTokenMs - r.arrivalMs;
            }
            case SHED -> {
                shed++;
                shedByClass[r.trafficClass]++;
                bucketShed++;
            }
            case FAILED -> {
                failed++;
                bucketFailed++;
            }
            default -> throw new IllegalStateException("request " + r.id + ": ended without an end");
        }
    }

    void start() {
        sim.loop.at(scenarioSample(), this::sample);
    }

    private double scenarioSample() {
        return sim.scenario.sampleMs();
    }

    private void sample() {
        double now = sim.loop.now();
        double dt = now - lastSample;
        long saved = 0;
        long prompt = 0;
        float[] util = new float[sim.engineCount];
        float[] occ = new float[sim.engineCount];
        int[] q = new int[sim.engineCount];
        float[] w = new float[sim.engineCount];
        long[] ep = new long[sim.engineCount];
        float[] eh = new float[sim.engineCount];
        for (int j = 0; j < sim.engineCount; j++) {
            EngineSim e = sim.engines.get(j);
            saved += e.savedTokens;
            prompt += e.promptTokens;
            ep[j] = e.promptTokens - lastEnginePrompt[j];
            eh[j] = ep[j] == 0 ? Float.NaN : (float) ((double) (e.savedTokens - lastEngineSaved[j]) / ep[j]);
            lastEnginePrompt[j] = e.promptTokens;
            lastEngineSaved[j] = e.savedTokens;
            util[j] = (float) Math.min(1, (e.busyMs - lastBusy[j]) / dt);
            lastBusy[j] = e.busyMs;
            occ[j] = (float) ((e.sequenceMs - lastSequenceMs[j]) / dt / e.params.maxSeqs());
            lastSequenceMs[j] = e.sequenceMs;
            q[j] = e.waitingCount();
            w[j] = (float) sim.policy.weight(0, 0, j);
        }
        long dp = prompt - lastPrompt;
        series.add(new double[] {now / 1000, bucketCompleted, bucketShed, bucketFailed,
            dp == 0 ? Double.NaN : (double) (saved - lastSaved) / dp,
            bucketCompleted == 0 ? Double.NaN : bucketTtftSum / bucketCompleted});
        utilization.add(util);
        occupancy.add(occ);
        queue.add(q);
        weights.add(w);
        promptTokens.add(ep);
        cacheHits.add(eh);
        lastSaved = saved;
        lastPrompt = prompt;
        bucketCompleted = 0;
        bucketShed = 0;
        bucketFailed = 0;
        bucketTtftSum = 0;
        lastSample = now;
        sim.loop.after(sim.scenario.sampleMs(), this::sample);
    }

    void finish(double now) {
        endMs = now;
    }

    /** Ends the requests still open as failed: the drain's limit has passed (see {@link Simulation#MAX_DRAIN_MS}). */
    void endUnfinished() {
        unfinished = open();
        failed += unfinished;
    }

    /** Requests still in flight when the drain's limit ended the run, counted among the failed. */
    long unfinished() {
        return unfinished;
    }

    /** Prompt tokens served from prefix caches / prompt tokens admitted, over all engines. */
    double cacheHitRate() {
        long saved = 0;
        long prompt = 0;
        for (EngineSim e : sim.engines) {
            saved += e.savedTokens;
            prompt += e.promptTokens;
        }
        return prompt == 0 ? 0 : (double) saved / prompt;
    }

    /** The run's line of summary.json. */
    Summary summary() {
        double minutes = sim.scenario.durationMs() / 60_000.0;
        return new Summary(ms(ttft, 50), ms(ttft, 99), ms(e2e, 50), ms(e2e, 99), cacheHitRate(),
                generated == 0 ? 0 : (double) shed / generated, failed,
                dispatched == 0 ? 1 : (double) attempts / dispatched,
                churn / minutes / sim.gatewayCount, residencyViolations);
    }

    static double ms(Histogram h, double percentile) {
        return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(percentile) / 1000.0;
    }
}
