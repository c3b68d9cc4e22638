package dev.sextant.sim;

import dev.sextant.control.Canary;
import dev.sextant.control.CanaryResult;
import dev.sextant.control.ControlLoop;
import dev.sextant.control.ControlOptions;
import dev.sextant.control.EngineScrape;
import dev.sextant.control.GatewayReport;
import dev.sextant.control.Step;
import dev.sextant.hashing.SplitMix64;
import dev.sextant.request.DataPlane;
import dev.sextant.request.DataPlaneListener;
import dev.sextant.request.DataPlaneOptions;
import dev.sextant.request.Decision;
import dev.sextant.request.Ejection;
import dev.sextant.request.HttpFields;
import dev.sextant.request.Outcome;
import dev.sextant.request.PromptKeys;
import dev.sextant.request.Refusal;
import dev.sextant.request.RequestMeta;
import dev.sextant.request.ReuseTimes;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * {@code sextant}: the product as built. The control plane is the production control loop
 * ({@link ControlLoop}: estimation of every engine's profile, capacity and condition, demand, round trips and the
 * value of a warm cache; the production optimizer on those estimates; the publication rule), fed the same records
 * the control plane feeds it: each engine's metrics as its {@code /metrics} exports them (scraped every
 * {@code scrape_s}, seen {@code signal_delay_s} later), each gateway cluster's report of its arrivals and of how its
 * attempts ended (same cadence and delay), and the canaries the loop asks for. Each gateway cluster runs the
 * production data plane ({@link DataPlane}: weighted consistent hashing, bounded load, outlier ejection, retry
 * budget, admission) on its own copy of the snapshot, swapped in {@code propagation_s} after publication. The
 * simulator only feeds them: it never decides where a request goes, and it has no control rule of its own.
 *
 * <p>During a control plane outage nothing reaches the loop and nothing is solved; gateways keep their last
 * snapshot.
 */
final class SextantPolicy implements SimPolicy {
    /** Prompt and output tokens of a canary request. */
    static final int CANARY_PROMPT = 16;
    static final int CANARY_OUTPUT = 8;
    /** The longest a canary may take, as the control plane ends its canaries (docs/servers.md, "Canaries"). */
    static final double CANARY_TIMEOUT_MS = 10_000;
    /** The control plane's policy thread ticks every second: urgent steps and canaries wait for a tick. */
    static final double DRIVER_TICK_MS = 1000;

    private Simulation sim;
    private Topology base;
    private ControlLoop loop;
    private DataPlane[] planes;
    private Snapshot[] held;
    private final Map<String, Integer> engineIndex = new HashMap<>();
    private RequestMeta[] classMeta;
    private long solveFailures;
    private long solves;
    private long publications;
    /** Times the control plane was restarted ({@code control_plane_restart}). */
    private int restarts;
    private long solveWallNanos;
    private double maxGap;
    private double lastStepMs = Double.NEGATIVE_INFINITY;
    /** Outcome of the attempt that just failed, for the retry that follows it at once. */
    private Outcome lastOutcome = Outcome.SERVER_ERROR;

    // what each gateway cluster counts for its next report
    private long[][] arrivals;
    private Outcomes[][] outcomes;

    /** One gateway cluster's counts for one engine since its last report. */
    private static final class Outcomes {
        long requests;
        long successes;
        long connectErrors;
        long timeouts;
        long serverErrors;
        double ttftSum;
        long ttftCount;
        double tbtSum;
        long tbtCount;
        double e2eSum;
        long e2eCount;

        GatewayReport.EngineOutcomes drain() {
            GatewayReport.EngineOutcomes o = new GatewayReport.EngineOutcomes(requests, successes, connectErrors,
                    timeouts, serverErrors, 0, mean(ttftSum, ttftCount), mean(tbtSum, tbtCount), mean(e2eSum, e2eCount),
                    GatewayReport.Mean.NONE, 0, 0);
            requests = successes = connectErrors = timeouts = serverErrors = ttftCount = tbtCount = e2eCount = 0;
            ttftSum = tbtSum = e2eSum = 0;
            return o;
        }

        private static GatewayReport.Mean mean(double sum, long count) {
            return count == 0 ? GatewayReport.Mean.NONE : new GatewayReport.Mean(Math.max(0, sum / count), count);
        }
    }

    private final String name;
    /** The gateways' data plane options, before each gateway's seed. */
    private final DataPlaneOptions options;
    /** The control loop's options. */
    private final ControlOptions control;

    /** The product as it ships. */
    SextantPolicy() {
        this("sextant", DataPlaneOptions.defaults(), ControlOptions.defaults());
    }

    /** Named {@code name}, its gateways' data planes with {@code options}, its control loop with {@code control}. */
    SextantPolicy(String name, DataPlaneOptions options, ControlOptions control) {
        this.name = name;
        this.options = options;
        this.control = control;
    }

    @Override
    public String name() {
        return name;
    }

    private long nanos() {
        return Math.round(sim.loop.now() * 1e6);
    }

    @Override
    public void start(Simulation s) {
        this.sim = s;
        this.base = s.topology;
        for (int j = 0; j < s.engineCount; j++) {
            engineIndex.put(base.engines().get(j).id(), j);
        }
        classMeta = new RequestMeta[s.classCount];
        for (int k = 0; k < s.classCount; k++) {
            TrafficClass c = base.classes().get(k);
            classMeta[k] = new RequestMeta(c.model(), c.residency(), c.priority(), 0, 0);
        }
        arrivals = new long[s.gatewayCount][s.classCount];
        reuse = new ReuseTimes[s.gatewayCount];
        reuseCounts = new AtomicLongArray[s.gatewayCount][s.classCount];
        for (int g = 0; g < s.gatewayCount; g++) {
            reuse[g] = new ReuseTimes(REUSE_BITS);
            for (int k = 0; k < s.classCount; k++) {
                reuseCounts[g][k] = reuse[g].counts(base.classes().get(k).id());
            }
        }
        outcomes = new Outcomes[s.gatewayCount][s.engineCount];
        for (int g = 0; g < s.gatewayCount; g++) {
            for (int j = 0; j < s.engineCount; j++) {
                outcomes[g][j] = new Outcomes();
            }
        }
        loop = ControlLoop.create(base, control, this::nanos, null);
        // the first snapshot is solved before any evidence: the operator's forecast (the topology's demand)
        Step first = timedStep();
        Snapshot latest = first.snapshot();
        planes = new DataPlane[s.gatewayCount];
        held = new Snapshot[s.gatewayCount];
        for (int g = 0; g < s.gatewayCount; g++) {
            int gateway = g;
            planes[g] = DataPlane.create(base.gatewayClusters().get(g).id(), latest, this::nanos,
                    options.toBuilder().seed(SplitMix64.mix(s.seed + g))
                            // the control plane speaks at every step, as a long-poll answers within its wait
                            .controlPlaneCadence(java.time.Duration.ofMillis(Math.max(1,
                                    (long) Math.ceil(s.scenario.control().solveMs()))))
                            .listener(new DataPlaneListener() {
                        @Override
                        public void onEjection(Ejection e) {
                            ejections.add(new SimEjection(gateway, sim.loop.now(), e));
                        }
                    }).build(), java.time.Duration.ZERO, reuse[g]);
            held[g] = latest;
        }
        s.onScrape(this::scraped);
        s.loop.at(s.scenario.control().scrapeMs(), this::report);
        s.loop.at(s.scenario.control().solveMs(), this::solveTick);
        s.loop.at(DRIVER_TICK_MS, this::driverTick);
    }

    /** The engines' scrapes reach the control plane (unless it is down). */
    private void scraped(Simulation.Scrape scrape) {
        if (!sim.controlPlaneUp) {
            return;
        }
        long at = Math.round(scrape.atMs() * 1e6);
        for (int j = 0; j < sim.engineCount; j++) {
            String id = base.engines().get(j).id();
            loop.observe(scrape.metrics()[j] != null ? EngineScrape.of(id, at, scrape.metrics()[j])
                    : EngineScrape.failed(id, at, "connection refused"));
        }
    }

    /** Every scrape interval each gateway cluster reports what it counted; the report arrives after the delay. */
    private void report() {
        double interval = sim.scenario.control().scrapeMs() / 1000;
        List<GatewayReport> reports = new ArrayList<>();
        // the engine clusters where an engine is up to answer a probe, the same for every gateway
        boolean[] answers = new boolean[sim.clusterIds.size()];
        for (int j = 0; j < sim.engineCount; j++) {
            answers[sim.clusterOf[j]] |= sim.engines.get(j).isUp();
        }
        for (int g = 0; g < sim.gatewayCount; g++) {
            Map<String, Long> a = new LinkedHashMap<>();
            for (int k = 0; k < sim.classCount; k++) {
                a.put(base.classes().get(k).id(), arrivals[g][k]);
                arrivals[g][k] = 0;
            }
            Map<String, GatewayReport.EngineOutcomes> e = new LinkedHashMap<>();
            for (int j = 0; j < sim.engineCount; j++) {
                if (outcomes[g][j].requests > 0) {
                    e.put(base.engines().get(j).id(), outcomes[g][j].drain());
                }
            }
            // the gateway's probes: one round trip per engine cluster it can reach, as it is now, where an engine there
            // is up to answer the probe (a probe that fails is no round trip, as in the production gateway's Prober)
            Map<String, GatewayReport.RoundTrip> rtt = new LinkedHashMap<>();
            double[] roundTrips = sim.roundTripsMs(g);
            for (int c = 0; c < sim.clusterIds.size(); c++) {
                double ms = roundTrips[c];
                if (Double.isFinite(ms) && !sim.cut[g][c] && answers[c]) {
                    rtt.put(sim.clusterIds.get(c), new GatewayReport.RoundTrip(ms, ms, 1));
                }
            }
            // the requests it has in flight per engine, as the data plane counts them when the report is made
            Map<String, Long> held = new LinkedHashMap<>();
            if (planes[g] != null) {
                planes[g].inFlightByEngine().forEach((id, n) -> held.put(id, (long) n));
            }
            reports.add(new GatewayReport(base.gatewayClusters().get(g).id(), "", 0, interval, a, e, rtt,
                    reuse[g].drain(), held));
        }
        sim.loop.after(sim.scenario.control().signalDelayMs(), () -> {
            if (!sim.controlPlaneUp) {
                return;
            }
            long at = nanos();
            for (GatewayReport r : reports) {
                loop.observe(new GatewayReport(r.gateway(), r.instance(), at, r.intervalSeconds(), r.arrivals(),
                        r.engines(), r.roundTrips(), r.reuse(), r.inFlight()));
            }
        });
        double next = sim.loop.now() + sim.scenario.control().scrapeMs();
        if (next <= sim.scenario.durationMs() || sim.metrics.open() > 0) {
            sim.loop.at(next, this::report);
        }
    }

    /**
     * The control plane's policy thread, which ticks every second: a step at once when the signals changed something
     * that matters ({@link ControlLoop#urgent()}), then the canaries the loop finds due. Signals only update the
     * estimates; as in production, nothing acts on them before the next tick.
     */
    private void driverTick() {
        if (sim.controlPlaneUp) {
            if (sim.loop.now() - lastStepMs >= DRIVER_TICK_MS && loop.urgent()) {
                solve();
            }
            sendCanaries();
        }
        if (sim.loop.now() < sim.scenario.durationMs() || sim.metrics.open() > 0) {
            sim.loop.after(DRIVER_TICK_MS, this::driverTick);
        }
    }

    private void sendCanaries() {
        for (Canary c : loop.canariesDue()) {
            int j = engineIndex.get(c.engine());
            boolean[] ended = new boolean[1];
            sim.canary(j, CANARY_PROMPT, c.maxTokens(), new Simulation.CanaryListener() {
                @Override
                public void ok(double ttftMs, double tbtMs) {
                    if (!ended[0] && sim.controlPlaneUp) {
                        loop.observe(CanaryResult.ok(c.engine(), nanos(), ttftMs, tbtMs));
                    }
                    ended[0] = true;
                }

                @Override
                public void failed(String why) {
                    if (!ended[0] && sim.controlPlaneUp) {
                        loop.observe(CanaryResult.failed(c.engine(), nanos(), why));
                    }
                    ended[0] = true;
                }
            });
            sim.loop.after(CANARY_TIMEOUT_MS, () -> {
                if (!ended[0]) {
                    ended[0] = true;
                    if (sim.controlPlaneUp) {
                        loop.observe(CanaryResult.failed(c.engine(), nanos(), "no complete answer within 10 s"));
                    }
                }
            });
        }
    }

    /**
     * The control plane process starts again, as a deploy restarts it: a new loop, from the state file (the last
     * snapshot published), which knows nothing else of what the old one learned; the gateways hold their snapshots
     * meanwhile.
     */
    @Override
    public void controlPlaneRestarted() {
        loop = ControlLoop.create(base, control, this::nanos, loop.published());
        restarts++;
        solve(); // the control plane steps at start, as it does when first started
    }

    private void solveTick() {
        if (sim.controlPlaneUp) {
            solve();
        }
        if (sim.loop.now() < sim.scenario.durationMs() || sim.metrics.open() > 0) {
            sim.loop.after(sim.scenario.control().solveMs(), this::solveTick);
        }
    }

    private Step timedStep() {
        long t0 = System.nanoTime(); // wall time of the step, for the report only
        Step step = loop.step();
        solveWallNanos += System.nanoTime() - t0;
        if (step.snapshot() == null) {
            solveFailures++;
        } else {
            solves++;
            maxGap = Math.max(maxGap, step.snapshot().objective().gapRelative());
        }
        if (step.published()) {
            publications++;
        }
        steps.add(step);
        return step;
    }

    private void solve() {
        lastStepMs = sim.loop.now();
        Step step = timedStep();
        // a publication, or (as the control plane's long-poll answers "not modified") the held snapshot confirmed,
        // which keeps its age from reaching the gateways' max_snapshot_age
        Snapshot published = step.published() ? step.snapshot() : loop.published();
        sim.loop.after(sim.scenario.control().propagationMs(), () -> publish(published));
    }

    private void publish(Snapshot s) {
        for (int g = 0; g < sim.gatewayCount; g++) {
            if (planes[g].swap(s)) {
                sim.metrics.churn(churn(g, held[g], s));
                held[g] = s;
            }
        }
    }

    private double churn(int g, Snapshot before, Snapshot after) {
        String gw = base.gatewayClusters().get(g).id();
        double total = 0;
        for (TrafficClass c : base.classes()) {
            Route a = before.route(gw, c.id());
            Route b = after.route(gw, c.id());
            if (a == null || b == null) {
                continue;
            }
            java.util.Set<String> ids = new java.util.TreeSet<>(a.weights().keySet());
            ids.addAll(b.weights().keySet());
            for (String e : ids) {
                total += Math.abs(b.weights().getOrDefault(e, 0.0) - a.weights().getOrDefault(e, 0.0));
            }
        }
        return total;
    }

    @Override
    public int select(SimRequest r) {
        arrivals[r.gateway][r.trafficClass]++;
        RequestMeta c = classMeta[r.trafficClass];
        long requestId = SplitMix64.mix(r.id ^ 0x7265717565737431L);
        Conversation conv = r.conversation;
        RequestMeta m;
        if (conv != null && conv.structured) {
            if (conv.gatewayKey == 0) {
                derive(conv, c.model());
            }
            m = new RequestMeta(c.model(), c.residency(), c.priority(), conv.gatewayKey, conv.gatewayPrefixKey,
                    requestId);
        } else {
            m = new RequestMeta(c.model(), c.residency(), c.priority(), keyOf(r), requestId);
        }
        reuse[r.gateway].arrived(reuseCounts[r.gateway][r.trafficClass], m.affinityKey(), r.promptTokens, nanos());
        Decision d = planes[r.gateway].route(m);
        decisions++;
        if (d.fallback()) {
            fallbackDecisions++;
        }
        return toEngine(r, d);
    }

    /** The affinity key of a request whose conversation has no structured prompt: its client's explicit key. */
    private static long keyOf(SimRequest r) {
        return SplitMix64.mix(r.affinityKey() + 0x51L);
    }

    /** The conversation key the gateway routes {@code r} by (its own, whatever a prefix's spread makes of it). */
    private static long conversationKey(SimRequest r) {
        Conversation conv = r.conversation;
        return conv != null && conv.structured ? conv.gatewayKey : keyOf(r);
    }

    private final PromptKeys promptKeys = new PromptKeys();

    /**
     * The keys the production gateway derives for {@code conv} ({@link HttpFields}, {@link PromptKeys}): an explicit
     * key when its client sends one, else the key of its first turn, with its shared system prompt as the prefix key.
     * Its texts stand for what they are: one text per system prompt, one first message per conversation.
     */
    private void derive(Conversation conv, String model) {
        PromptKeys keys = promptKeys.reset();
        if (conv.systemPrompt >= 0) {
            keys.beginMessage();
            keys.text("system prompt " + conv.systemPrompt);
            keys.endMessage("system");
        }
        keys.userMessage("the first message of conversation " + conv.id);
        RequestMeta m = new HttpFields(model, null, null, conv.keyed ? "conversation-" + conv.id : null, null, null,
                keys.result(), "sim").toMeta();
        conv.gatewayKey = m.affinityKey() == 0 ? 1 : m.affinityKey();
        conv.gatewayPrefixKey = m.prefixKey();
    }

    private int toEngine(SimRequest r, Decision d) {
        if (d.routed()) {
            r.decision = d;
            r.backoffMs = d.backoffNanos() / 1e6;
            r.enginePriority = d.enginePriority(); // as the gateway writes it into the body (NO_PRIORITY alike)
            watchFirstToken(r.gateway, d, planes[r.gateway].awaitingFirstToken(d));
            return engineIndex.get(d.engineId());
        }
        r.decision = null;
        Refusal why = d.refusal();
        return why == Refusal.SHED || why == Refusal.ENGINE_LIMIT ? SHED : NO_ENGINE;
    }

    /**
     * Asks gateway {@code gateway}'s data plane about attempt {@code d} again {@code inNanos} from now, as the
     * production gateway does while a stream awaits its first token ({@link DataPlane#awaitingFirstToken}); every
     * simulated request streams.
     */
    private void watchFirstToken(int gateway, Decision d, long inNanos) {
        if (inNanos >= 0) {
            sim.loop.at(sim.loop.now() + inNanos / 1e6,
                    () -> watchFirstToken(gateway, d, planes[gateway].awaitingFirstToken(d)));
        }
    }

    /** An ejection by gateway {@code gateway}'s data plane at {@code atMs} of simulated time. */
    record SimEjection(int gateway, double atMs, Ejection ejection) {
    }

    /** The gateways' ejections so far, in the order they happened. */
    final List<SimEjection> ejections = new ArrayList<>();

    @Override
    public void firstToken(SimRequest r, int engine) {
        Decision d = (Decision) r.decision;
        if (d != null) { // it reaches the gateway half a round trip later (when firstTokenMs says)
            long ttftNanos = Math.round((r.firstTokenMs - r.attemptStartMs) * 1e6);
            sim.loop.at(sim.loop.now() + sim.rttMs[r.gateway][engine] / 2,
                    () -> planes[r.gateway].onFirstToken(d, ttftNanos));
        }
    }

    @Override
    public int retry(SimRequest r, int failedEngine) {
        Decision failed = (Decision) r.decision;
        if (failed == null || r.firstByteSent) {
            return -1;
        }
        Decision next = planes[r.gateway].retry(failed, lastOutcome);
        int e = toEngine(r, next);
        return e == SHED ? -1 : e;
    }

    @Override
    public void attemptEnded(SimRequest r, int engine, AttemptEnd how) {
        Outcomes o = outcomes[r.gateway][engine];
        o.requests++;
        double rtt = sim.rttMs[r.gateway][engine];
        switch (how) {
            case OK -> {
                o.successes++;
                double first = r.firstTokenMs - r.attemptStartMs;
                double end = sim.loop.now() + rtt / 2 - r.attemptStartMs;
                o.ttftSum += first;
                o.ttftCount++;
                o.e2eSum += end;
                o.e2eCount++;
                if (r.outputTokens > 1) {
                    o.tbtSum += end - first;
                    o.tbtCount += r.outputTokens - 1;
                }
                // the client has the whole answer half a round trip later: its next turn's time counts from then
                reuse[r.gateway].ended(conversationKey(r), Math.round((sim.loop.now() + rtt / 2) * 1e6));
            }
            case TIMEOUT -> o.timeouts++;
            case CONNECT_ERROR -> o.connectErrors++;
            case SERVER_ERROR -> o.serverErrors++;
            default -> throw new IllegalStateException("attempt end: " + how);
        }
        Decision d = (Decision) r.decision;
        if (d == null) {
            return;
        }
        switch (how) {
            case OK -> planes[r.gateway].onFinish(d, Outcome.SUCCESS,
                    Math.round((r.firstTokenMs - r.attemptStartMs) * 1e6));
            case TIMEOUT -> planes[r.gateway].onFinish(d, Outcome.CANCELLED, -1);
            case CONNECT_ERROR -> {
                lastOutcome = Outcome.CONNECT_ERROR;
                if (r.firstByteSent) {
                    planes[r.gateway].onFinish(d, Outcome.CONNECT_ERROR, -1);
                }
            }
            case SERVER_ERROR -> {
                lastOutcome = Outcome.SERVER_ERROR;
                if (r.firstByteSent) {
                    planes[r.gateway].onFinish(d, Outcome.SERVER_ERROR, -1);
                }
            }
            default -> throw new IllegalStateException("attempt end: " + how);
        }
    }

    @Override
    public double weight(int gateway, int cls, int engine) {
        if (!sim.allowedMask[cls][engine]) {
            return Double.NaN;
        }
        Route route = held[gateway].route(base.gatewayClusters().get(gateway).id(), base.classes().get(cls).id());
        return route == null ? Double.NaN : route.weights().getOrDefault(base.engines().get(engine).id(), 0.0);
    }

    /** Each gateway cluster's count of the times between its conversations' requests, and its per-class counts. */
    private ReuseTimes[] reuse;
    private AtomicLongArray[][] reuseCounts;
    /** The reuse-time table's size: 2^16 conversations per gateway cluster. */
    private static final int REUSE_BITS = 16;

    /** First attempts decided, and of them those decided in fallback mode (a snapshot past its maximum age). */
    private long decisions;
    private long fallbackDecisions;

    /**
     * First attempts the gateways decided in fallback mode, on a snapshot older than the data plane's
     * {@code max_snapshot_age} (docs/request-path.md §6).
     */
    long fallbackDecisions() {
        return fallbackDecisions;
    }

    /** A sentence about the control plane's work in this run, for the report. */
    String controlPlaneSummary() {
        String s = String.format(java.util.Locale.ROOT,
                "%d solves (%d failed and kept the previous snapshot), %d published, mean step %.0f ms wall (estimates "
                        + "and solve), largest certified relative gap %.2g", solves, solveFailures, publications,
                solves == 0 ? 0.0 : solveWallNanos / 1e6 / solves, maxGap);
        if (restarts > 0) {
            s += String.format(java.util.Locale.ROOT, "; restarted %d× from its state file", restarts);
        }
        return fallbackDecisions == 0 ? s : s + String.format(java.util.Locale.ROOT,
                "; %,d of %,d requests decided in fallback mode (a snapshot older than the gateways' "
                        + "`max_snapshot_age`)", fallbackDecisions, decisions);
    }

    /** Every step of the control loop, in order: what the report's control CSV files show. */
    List<Step> steps() {
        return steps;
    }

    private final List<Step> steps = new ArrayList<>();

    /** The control loop, for tests that look at its estimates. */
    ControlLoop controlLoop() {
        return loop;
    }
}
