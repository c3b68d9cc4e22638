package dev.sextant.sim;

import dev.sextant.hashing.SplitMix64;
import dev.sextant.topology.Engine;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.DoubleConsumer;

/**
 * One run of one policy over one scenario: the workload, the engines, the network, the faults and the
 * measures. Deterministic: the same scenario, policy and seed give the same result bit for bit, and every
 * policy sees the same conversations (each conversation draws its turns from its own random stream).
 */
final class Simulation implements EngineSim.Listener {
    final Scenario scenario;
    final Topology topology;
    final SimPolicy policy;
    final long seed;
    final EventLoop loop = new EventLoop();
    final List<EngineSim> engines = new ArrayList<>();
    final Metrics metrics;

    final int gatewayCount;
    final int classCount;
    final int engineCount;
    /** Class → allowed engine indices (model served, residency), ascending. */
    final int[][] allowed;
    final boolean[][] allowedMask;
    /** Gateway → engine → round trip ms. */
    final double[][] rttMs;
    /** The round trips as the baselines' health checks last measured them ({@code health_check_s} behind a change). */
    final double[][] knownRttMs;
    /** Engine → engine cluster index. */
    final int[] clusterOf;
    final List<String> clusterIds = new ArrayList<>();
    /** Gateway → engine cluster → link cut now. */
    final boolean[][] cut;
    /** What baselines' health checks believe: engine up. */
    final boolean[] knownUp;
    /** What baselines' health checks believe: gateway → engine cluster reachable. */
    final boolean[][] knownReachable;
    /** Gateway → engine → attempts in flight from that gateway. */
    final int[][] inFlight;
    /** Control plane reachable (for policies with one). */
    boolean controlPlaneUp = true;
    /** Gateway → demand multiplier from surges. */
    final double[] surge;
    /** Gateway → multipliers of a new turn's output tokens and new prompt tokens from workload shifts. */
    private final double[] outputShift;
    private final double[] promptShift;

    // signals: per engine, accumulated since the last scrape
    private final double[] ttftSum;
    private final int[] ttftCount;
    private final double[] tbtSum;
    private final int[] tbtCount;
    private final long[][] demandCount;
    private final List<java.util.function.Consumer<Scrape>> scrapeListeners = new ArrayList<>();
    /** {@link #harmonicSums} by n. */
    private final Map<Integer, double[]> harmonic = new HashMap<>();

    private long requestIds;
    private final DoubleConsumer progress;

    /**
     * Engine metrics as a scrape delivers them, plus the demand gateways observed over the same window.
     *
     * @param atMs       when it was taken
     * @param windowMs   the window it covers
     * @param up         engine answered the scrape
     * @param ttftMs     mean engine-side TTFT of first tokens in the window, NaN when none
     * @param tbtMs      mean time between tokens of requests finished in the window, NaN when none
     * @param kvUsage    KV cache fraction held by running sequences at the scrape
     * @param running    sequences running
     * @param waiting    requests waiting
     * @param demandRps  gateway → class → observed arrivals per second in the window
     * @param arrivals   gateway → class → arrivals counted in the window
     * @param metrics    per engine, its cumulative metrics as its /metrics shows them; null for an engine that is
     *                   down (the scrape fails)
     */
    record Scrape(double atMs, double windowMs, boolean[] up, double[] ttftMs, double[] tbtMs, double[] kvUsage,
                  int[] running, int[] waiting, double[][] demandRps, long[][] arrivals,
                  dev.sextant.signal.EngineMetrics[] metrics) {
    }

    /** How a canary request went: engine-side TTFT and mean time between tokens, or a failure. */
    interface CanaryListener {
        void ok(double ttftMs, double tbtMs);

        void failed(String why);
    }

    /**
     * Sends a canary to engine {@code e} now, straight from the control plane (no gateway, no client metrics):
     * {@code promptTokens} in, {@code outputTokens} out.
     */
    void canary(int e, int promptTokens, int outputTokens, CanaryListener l) {
        SimRequest r = new SimRequest(-1 - canaries++, null, 0, 0, loop.now(), promptTokens, outputTokens);
        r.canary = l;
        engines.get(e).arrive(r);
    }

    private long canaries;

    Simulation(Scenario scenario, SimPolicy policy, long seed, DoubleConsumer progress) {
        this.scenario = scenario;
        this.topology = scenario.topology();
        this.policy = policy;
        this.seed = seed;
        this.progress = progress;
        gatewayCount = topology.gatewayClusters().size();
        classCount = topology.classes().size();
        engineCount = topology.engines().size();
        topology.engineClusters().forEach(c -> clusterIds.add(c.id()));
        Map<String, Integer> clusterIndex = Scenario.indexOf(clusterIds);
        clusterOf = new int[engineCount];
        for (int j = 0; j < engineCount; j++) {
            Engine e = topology.engines().get(j);
            clusterOf[j] = clusterIndex.get(e.cluster());
            engines.add(new EngineSim(j, e.id(), scenario.hardware().get(j), e.priorityScheduling(), loop, this,
                    scenario.clientTimeoutMs()));
        }
        allowed = new int[classCount][];
        allowedMask = new boolean[classCount][engineCount];
        for (int k = 0; k < classCount; k++) {
            TrafficClass c = topology.classes().get(k);
            List<Integer> l = new ArrayList<>();
            for (int j = 0; j < engineCount; j++) {
                if (topology.allowed(c, topology.engines().get(j))) {
                    l.add(j);
                    allowedMask[k][j] = true;
                }
            }
            allowed[k] = l.stream().mapToInt(Integer::intValue).toArray();
        }
        rttMs = new double[gatewayCount][engineCount];
        for (int g = 0; g < gatewayCount; g++) {
            Map<String, Double> row = topology.networkRttMs().getOrDefault(topology.gatewayClusters().get(g).id(), Map.of());
            for (int j = 0; j < engineCount; j++) {
                Double ms = row.get(topology.engines().get(j).cluster());
                rttMs[g][j] = ms == null ? Double.POSITIVE_INFINITY : ms;
            }
        }
        knownRttMs = new double[gatewayCount][];
        for (int g = 0; g < gatewayCount; g++) {
            knownRttMs[g] = rttMs[g].clone();
        }
        cut = new boolean[gatewayCount][clusterIds.size()];
        knownUp = new boolean[engineCount];
        java.util.Arrays.fill(knownUp, true);
        knownReachable = new boolean[gatewayCount][clusterIds.size()];
        for (int g = 0; g < gatewayCount; g++) {
            for (int c = 0; c < clusterIds.size(); c++) {
                knownReachable[g][c] = true;
            }
            for (int j = 0; j < engineCount; j++) {
                if (Double.isInfinite(rttMs[g][j])) {
                    knownReachable[g][clusterOf[j]] = false;
                }
            }
        }
        inFlight = new int[gatewayCount][engineCount];
        surge = new double[gatewayCount];
        java.util.Arrays.fill(surge, 1.0);
        outputShift = new double[gatewayCount];
        promptShift = new double[gatewayCount];
        java.util.Arrays.fill(outputShift, 1.0);
        java.util.Arrays.fill(promptShift, 1.0);
        ttftSum = new double[engineCount];
        ttftCount = new int[engineCount];
        tbtSum = new double[engineCount];
        tbtCount = new int[engineCount];
        demandCount = new long[gatewayCount][classCount];
        metrics = new Metrics(this);
    }

    /** True when gateway {@code g} can use engine {@code j} as far as its health checks know. */
    boolean usable(int g, int j) {
        return knownUp[j] && knownReachable[g][clusterOf[j]];
    }

    /** Subscribes to scrapes, delivered {@code signalDelayMs} after they are taken. */
    void onScrape(java.util.function.Consumer<Scrape> l) {
        scrapeListeners.add(l);
    }

    /**
     * How long the run waits, once the traffic has ended, for the requests still in flight, ms: ten minutes, several
     * times the longest generation of any scenario, so that an engine whose step takes hours (a mistake, or a hung
     * engine modelled as one) ends the run instead of keeping it going; what is still in flight then counts as failed.
     */
    static final double MAX_DRAIN_MS = 600_000;

    /** Runs the whole simulation: generates traffic for the scenario's duration, then drains (at most {@link #MAX_DRAIN_MS}). */
    Metrics run() {
        policy.start(this);
        for (int g = 0; g < gatewayCount; g++) {
            for (int k = 0; k < classCount; k++) {
                double rps = topology.demandRps().getOrDefault(topology.gatewayClusters().get(g).id(), Map.of())
                        .getOrDefault(topology.classes().get(k).id(), 0.0);
                if (rps > 0) {
                    startArrivals(g, k, rps);
                }
            }
        }
        for (Scenario.Fault f : scenario.faults()) {
            loop.at(f.atMs(), () -> applyFault(f, true));
            loop.at(f.atMs() + f.durationMs(), () -> applyFault(f, false));
        }
        Scenario.Control ctl = scenario.control();
        scheduleScrape(ctl.scrapeMs());
        metrics.start();
        double end = scenario.durationMs();
        double nextReport = 0;
        while (loop.step()) {
            if (progress != null && loop.now() >= nextReport) {
                progress.accept(Math.min(1, loop.now() / end));
                nextReport = loop.now() + end / 100;
            }
            if (loop.now() > end && metrics.open() == 0) {
                break;
            }
            if (loop.now() > end + MAX_DRAIN_MS) {
                metrics.endUnfinished();
                break;
            }
        }
        metrics.finish(loop.now());
        return metrics;
    }

    private void scheduleScrape(double at) {
        if (at > scenario.durationMs()) {
            return;
        }
        loop.at(at, () -> {
            Scrape s = scrape();
            loop.after(scenario.control().signalDelayMs(), () -> scrapeListeners.forEach(l -> l.accept(s)));
            scheduleScrape(at + scenario.control().scrapeMs());
        });
    }

    private Scrape scrape() {
        double window = scenario.control().scrapeMs();
        boolean[] up = new boolean[engineCount];
        double[] ttft = new double[engineCount];
        double[] tbt = new double[engineCount];
        double[] kv = new double[engineCount];
        int[] run = new int[engineCount];
        int[] wait = new int[engineCount];
        for (int j = 0; j < engineCount; j++) {
            EngineSim e = engines.get(j);
            up[j] = e.isUp();
            ttft[j] = ttftCount[j] == 0 ? Double.NaN : ttftSum[j] / ttftCount[j];
            tbt[j] = tbtCount[j] == 0 ? Double.NaN : tbtSum[j] / tbtCount[j];
            kv[j] = e.kvUsage();
            run[j] = e.runningCount();
            wait[j] = e.waitingCount();
            ttftSum[j] = 0;
            ttftCount[j] = 0;
            tbtSum[j] = 0;
            tbtCount[j] = 0;
        }
        double[][] demand = new double[gatewayCount][classCount];
        long[][] arrivals = new long[gatewayCount][classCount];
        for (int g = 0; g < gatewayCount; g++) {
            for (int k = 0; k < classCount; k++) {
                demand[g][k] = demandCount[g][k] * 1000.0 / window;
                arrivals[g][k] = demandCount[g][k];
                demandCount[g][k] = 0;
            }
        }
        dev.sextant.signal.EngineMetrics[] metrics = new dev.sextant.signal.EngineMetrics[engineCount];
        for (int j = 0; j < engineCount; j++) {
            metrics[j] = up[j] && scenario.metrics().get(j) ? engines.get(j).metrics() : null;
            if (!scenario.metrics().get(j)) {
                // an engine without /metrics: nobody reads its latencies or its batch
                ttft[j] = Double.NaN;
                tbt[j] = Double.NaN;
                kv[j] = Double.NaN;
            }
        }
        return new Scrape(loop.now(), window, up, ttft, tbt, kv, run, wait, demand, arrivals, metrics);
    }

    // ---- workload

    private void startArrivals(int g, int k, double requestRps) {
        Scenario.ClassWorkload w = scenario.workload().get(k);
        Scenario.Arrivals shape = scenario.arrivals().get(g);
        double convPerMs = requestRps / w.turnsMean() / 1000.0;
        double maxSurge = Scenario.Fault.peakSurge(scenario.faults(), g);
        double maxRate = convPerMs * shape.maxMultiplier() * maxSurge;
        long stream = (long) g * classCount + k;
        SplittableRandom rng = new SplittableRandom(SplitMix64.mix(seed ^ SplitMix64.mix(stream + 0x5eed)));
        long[] counter = {0};
        Runnable[] next = new Runnable[1];
        next[0] = () -> {
            double t = loop.now();
            if (rng.nextDouble() * maxRate < convPerMs * shape.multiplier(t) * surge[g]) {
                long id = (stream << 40) | counter[0]++;
                newConversation(id, g, k);
            }
            double gap = -Math.log(1 - rng.nextDouble()) / maxRate;
            if (t + gap < scenario.durationMs()) {
                loop.at(t + gap, next[0]);
            }
        };
        double first = -Math.log(1 - rng.nextDouble()) / maxRate;
        if (first < scenario.durationMs()) {
            loop.at(first, next[0]);
        }
    }

    /** The per-conversation random stream: independent of the policy and of everything else. */
    private SplittableRandom conversationRandom(long id) {
        return new SplittableRandom(SplitMix64.mix(seed * 31 + SplitMix64.mix(id)));
    }

    private final Map<Long, SplittableRandom> convRandom = new HashMap<>();

    private void newConversation(long id, int g, int k) {
        Scenario.ClassWorkload w = scenario.workload().get(k);
        SplittableRandom rng = conversationRandom(id);
        // geometric number of turns with mean turnsMean
        double p = 1 / Math.max(1, w.turnsMean());
        int turns = 1;
        while (turns < 1000 && rng.nextDouble() >= p) {
            turns++;
        }
        Conversation c = new Conversation(id, g, k, turns);
        c.contextTokens = 0;
        if (w.structured()) { // drawn only then, so that other scenarios' conversations stay as they were
            c.structured = true;
            c.keyed = rng.nextDouble() < w.keyedShare();
            if (w.systemPromptTokens() > 0) {
                c.systemPrompt = zipf(rng, harmonicSums(w.systemPrompts()));
                c.systemTokens = Math.max(1, (int) Math.round(w.systemPromptTokens()));
            }
        }
        convRandom.put(id, rng);
        turn(c, true);
    }

    /**
     * The i-th of {@code n} (0-based) with probability ∝ 1/(i + 1): the first i whose running sum of 1/(k + 1) exceeds
     * a uniform draw over the whole sum, found by halving in {@code sums} (the running sums, {@link #harmonicSums}). A
     * scan of the sum for every conversation made a million shared prompts take hours.
     */
    static int zipf(SplittableRandom rng, double[] sums) {
        double u = rng.nextDouble() * sums[sums.length - 1];
        int k = Arrays.binarySearch(sums, u); // the sums rise strictly: the first above u follows an equal one
        return Math.min(k >= 0 ? k + 1 : -k - 1, sums.length - 1);
    }

    /** Running sums of 1/(k + 1) for k < {@code n}, computed once per n. */
    private double[] harmonicSums(int n) {
        return harmonic.computeIfAbsent(n, m -> {
            double[] sums = new double[m];
            double total = 0;
            for (int i = 0; i < m; i++) {
                total += 1.0 / (i + 1);
                sums[i] = total;
            }
            return sums;
        });
    }

    private static int around(SplittableRandom rng, double mean) {
        return Math.max(1, (int) Math.round(mean * (0.5 + rng.nextDouble())));
    }

    private static int scaled(int tokens, double factor) {
        return factor == 1 ? tokens : (int) Math.max(1, Math.min(Integer.MAX_VALUE / 4, Math.round(tokens * factor)));
    }

    private void turn(Conversation c, boolean first) {
        Scenario.ClassWorkload w = scenario.workload().get(c.trafficClass);
        SplittableRandom rng = convRandom.get(c.id);
        // drawn as without a shift, then scaled: every policy still sees the same conversations
        int fresh = scaled(around(rng, first ? w.firstPromptTokens() : w.newTokensPerTurn()), promptShift[c.gateway]);
        int out = scaled(around(rng, w.outputTokens()), outputShift[c.gateway]);
        c.turnsLeft--;
        int system = first ? c.systemTokens : 0; // later turns carry it in their context
        SimRequest r = new SimRequest(requestIds++, c, c.gateway, c.trafficClass, loop.now(),
                c.contextTokens + system + fresh, out);
        demandCount[c.gateway][c.trafficClass]++;
        metrics.generated(r);
        int e = policy.select(r);
        attempt(r, e);
    }

    /** {@code b.requests()} single requests arrive at gateway {@code g} now, each on its own (no conversation). */
    private void burst(int g, Scenario.Burst b) {
        for (int i = 0; i < b.requests(); i++) {
            SimRequest r = new SimRequest(requestIds++, null, g, b.trafficClass(), loop.now(), b.promptTokens(),
                    b.outputTokens());
            demandCount[g][b.trafficClass()]++;
            metrics.generated(r);
            attempt(r, policy.select(r));
        }
    }

    private void nextTurn(SimRequest r) {
        Conversation c = r.conversation;
        if (c == null) {
            return;
        }
        c.contextTokens = r.end == SimRequest.End.COMPLETED ? r.promptTokens + r.outputTokens : r.promptTokens;
        SplittableRandom rng = convRandom.get(c.id);
        double think = -Math.log(1 - rng.nextDouble()) * scenario.workload().get(c.trafficClass).thinkMeanMs();
        double at = Math.max(loop.now(), r.endMs + think);
        if (c.turnsLeft <= 0 || at >= scenario.durationMs()) {
            convRandom.remove(c.id);
            policy.conversationEnded(c);
            return;
        }
        loop.at(at, () -> turn(c, false));
    }

    // ---- request path

    private void attempt(SimRequest r, int e) {
        if (e < 0) {
            end(r, e == SimPolicy.SHED ? SimRequest.End.SHED : SimRequest.End.FAILED, loop.now());
            return;
        }
        if (!allowedMask[r.trafficClass][e]) {
            metrics.residencyViolation();
        }
        r.attempts++;
        r.engine = e;
        inFlight[r.gateway][e]++;
        metrics.attempt(r);
        double backoff = r.backoffMs;
        r.backoffMs = 0;
        r.attemptStartMs = loop.now() + backoff;
        double rtt = rttMs[r.gateway][e];
        if (Double.isInfinite(rtt) || cut[r.gateway][clusterOf[e]]) {
            loop.after(backoff + scenario.control().connectTimeoutMs(),
                    () -> attemptFailed(r, e, SimPolicy.AttemptEnd.CONNECT_ERROR));
            return;
        }
        EngineSim engine = engines.get(e);
        loop.after(backoff + rtt / 2, () -> engine.arrive(r));
    }

    private void attemptFailed(SimRequest r, int e, SimPolicy.AttemptEnd how) {
        inFlight[r.gateway][e]--;
        policy.attemptEnded(r, e, how);
        if (r.firstByteSent) {
            end(r, SimRequest.End.FAILED, loop.now());
            return;
        }
        int next = policy.retry(r, e);
        if (next < 0) {
            end(r, SimRequest.End.FAILED, loop.now());
        } else {
            metrics.retry();
            attempt(r, next);
        }
    }

    private void end(SimRequest r, SimRequest.End how, double atMs) {
        r.end(how, atMs);
        metrics.ended(r);
        nextTurn(r);
    }

    @Override
    public void firstToken(EngineSim engine, SimRequest r, double atMs) {
        if (r.canary != null) {
            r.firstTokenMs = atMs;
            return;
        }
        r.firstByteSent = true;
        r.firstTokenMs = atMs + rttMs[r.gateway][engine.index] / 2;
        policy.firstToken(r, engine.index);
        ttftSum[engine.index] += atMs - r.engineArrivalMs;
        ttftCount[engine.index]++;
    }

    @Override
    public void finished(EngineSim engine, SimRequest r, double atMs) {
        if (r.canary != null) {
            r.canary.ok(r.firstTokenMs - r.engineArrivalMs,
                    r.outputTokens > 1 ? (atMs - r.firstTokenMs) / (r.outputTokens - 1) : Double.NaN);
            return;
        }
        int j = engine.index;
        if (r.outputTokens > 1) {
            tbtSum[j] += (atMs - (r.firstTokenMs - rttMs[r.gateway][j] / 2)) / (r.outputTokens - 1);
            tbtCount[j]++;
        }
        inFlight[r.gateway][j]--;
        policy.attemptEnded(r, j, SimPolicy.AttemptEnd.OK);
        end(r, SimRequest.End.COMPLETED, atMs + rttMs[r.gateway][j] / 2);
    }

    @Override
    public void failed(EngineSim engine, SimRequest r, double atMs, boolean connect) {
        if (r.canary != null) {
            r.canary.failed(connect ? "connection refused" : "the engine failed the request");
            return;
        }
        int j = engine.index;
        SimPolicy.AttemptEnd how = connect ? SimPolicy.AttemptEnd.CONNECT_ERROR : SimPolicy.AttemptEnd.SERVER_ERROR;
        loop.at(atMs + rttMs[r.gateway][j] / 2, () -> attemptFailed(r, j, how));
    }

    @Override
    public void timedOut(EngineSim engine, SimRequest r, double atMs) {
        if (r.canary != null) {
            r.canary.failed("no first token within the client timeout");
            return;
        }
        int j = engine.index;
        inFlight[r.gateway][j]--;
        policy.attemptEnded(r, j, SimPolicy.AttemptEnd.TIMEOUT);
        metrics.timeout();
        end(r, SimRequest.End.FAILED, atMs);
    }

    /**
     * The round trips from gateway {@code g} to each engine cluster now, ms, by cluster index (a link slowdown
     * included): what the gateway's probes measure; infinite where the topology has no route.
     */
    double[] roundTripsMs(int g) {
        double[] ms = new double[clusterIds.size()];
        java.util.Arrays.fill(ms, Double.POSITIVE_INFINITY);
        for (int j = 0; j < engineCount; j++) {
            ms[clusterOf[j]] = Math.min(ms[clusterOf[j]], rttMs[g][j]);
        }
        return ms;
    }

    // ---- faults

    private void applyFault(Scenario.Fault f, boolean begin) {
        double detect = scenario.control().healthCheckMs();
        switch (f.kind()) {
            case ENGINE_CRASH -> {
                for (int j : f.engines()) {
                    if (begin) {
                        engines.get(j).crash();
                    } else {
                        engines.get(j).recover();
                    }
                    loop.after(detect, () -> knownUp[j] = engines.get(j).isUp());
                }
            }
            case ENGINE_SLOWDOWN -> {
                for (int j : f.engines()) {
                    engines.get(j).setSlowdown(begin ? f.factor() : 1.0);
                }
            }
            case ENGINE_ERRORS -> {
                for (int j : f.engines()) {
                    engines.get(j).setErrorFraction(begin ? f.factor() : 0.0);
                }
            }
            case REQUEST_BURST -> {
                if (begin) {
                    burst(f.gateway(), f.burst());
                }
            }
            case PARTITION -> {
                int c = clusterIds.indexOf(f.cluster());
                for (int g = 0; g < gatewayCount; g++) {
                    if (f.reaches(g)) {
                        int gg = g;
                        cut[g][c] = begin;
                        loop.after(detect, () -> knownReachable[gg][c] = !cut[gg][c]);
                    }
                }
            }
            case LINK_SLOWDOWN -> {
                int c = clusterIds.indexOf(f.cluster());
                double by = begin ? f.factor() : 1 / f.factor();
                for (int g = 0; g < gatewayCount; g++) {
                    if (f.reaches(g)) {
                        for (int j = 0; j < engineCount; j++) {
                            if (clusterOf[j] == c) {
                                rttMs[g][j] *= by;
                                int gg = g;
                                int jj = j;
                                loop.after(detect, () -> knownRttMs[gg][jj] = rttMs[gg][jj]);
                            }
                        }
                    }
                }
            }
            case CONTROL_PLANE_OUTAGE -> controlPlaneUp = !begin;
            case CONTROL_PLANE_RESTART -> {
                controlPlaneUp = !begin;
                if (!begin) {
                    policy.controlPlaneRestarted();
                }
            }
            case DEMAND_SURGE -> {
                for (int g = 0; g < gatewayCount; g++) {
                    if (f.reaches(g)) {
                        surge[g] = begin ? f.factor() : 1.0;
                    }
                }
            }
            case WORKLOAD_SHIFT -> {
                for (int g = 0; g < gatewayCount; g++) {
                    if (f.reaches(g)) {
                        outputShift[g] = begin ? f.factor() : 1.0;
                        promptShift[g] = begin ? f.promptFactor() : 1.0;
                    }
                }
            }
            default -> throw new IllegalStateException("fault: " + f.kind());
        }
    }
}
