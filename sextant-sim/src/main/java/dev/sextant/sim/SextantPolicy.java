package dev.sextant.sim;

import dev.sextant.policy.Policies;
import dev.sextant.policy.RoutingPolicy;
import dev.sextant.policy.SolveOptions;
import dev.sextant.request.DataPlane;
import dev.sextant.request.DataPlaneOptions;
import dev.sextant.request.Decision;
import dev.sextant.request.Outcome;
import dev.sextant.request.Refusal;
import dev.sextant.request.RequestMeta;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Engine;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * {@code sextant}: the product as built. The control plane runs the production optimizer
 * ({@link Policies#optimal()}) on its schedule from delayed, smoothed, noisy signals; each gateway
 * cluster runs the production data plane ({@link DataPlane}: weighted consistent hashing, bounded load,
 * outlier ejection, retry budget, admission) on its own copy of the snapshot, swapped in after a
 * propagation delay. The simulator only feeds them: it never decides where a request goes.
 *
 * <p>What the simulated control plane observes, per scrape: engines that answered (a down engine gets
 * health 0), demand per (gateway cluster, class) (smoothed, with relative noise), engine TBT compared
 * with the profile's TBT at the planned utilization (an engine slower than 1.5× its profile gets a
 * capacity penalty of expected/observed, at least 0.1), and links gateways report unreachable (priced at
 * {@link #UNREACHABLE_MS} so no traffic is planned across them). During a control plane outage no
 * solve happens and gateways keep their last snapshot.
 */
final class SextantPolicy implements SimPolicy {
    /** Round trip the control plane assigns to a link gateways report as cut, ms. */
    static final double UNREACHABLE_MS = 10_000;

    private final RoutingPolicy optimizer = Policies.optimal();
    private Simulation sim;
    private Topology base;
    private DataPlane[] planes;
    private Snapshot[] held;
    private Snapshot latest;
    private final Map<String, Integer> engineIndex = new HashMap<>();
    private RequestMeta[] classMeta;
    private double[][] demand;
    private double[] penalty;
    private boolean[] up;
    private SplittableRandom noise;
    private long solveFailures;
    private long solves;
    private long solveWallNanos;
    private double maxGap;
    /** Outcome of the attempt that just failed, for the retry that follows it at once. */
    private Outcome lastOutcome = Outcome.SERVER_ERROR;

    @Override
    public String name() {
        return "sextant";
    }

    @Override
    public void start(Simulation s) {
        this.sim = s;
        this.base = s.topology;
        noise = new SplittableRandom(Hashing.mix(s.seed ^ 0x5e7a47L));
        for (int j = 0; j < s.engineCount; j++) {
            engineIndex.put(base.engines().get(j).id(), j);
        }
        classMeta = new RequestMeta[s.classCount];
        for (int k = 0; k < s.classCount; k++) {
            TrafficClass c = base.classes().get(k);
            classMeta[k] = new RequestMeta(c.model(), c.residency(), c.priority(), 0, 0);
        }
        demand = new double[s.gatewayCount][s.classCount];
        for (int g = 0; g < s.gatewayCount; g++) {
            Map<String, Double> row = base.demandRps().getOrDefault(base.gatewayClusters().get(g).id(), Map.of());
            for (int k = 0; k < s.classCount; k++) {
                demand[g][k] = row.getOrDefault(base.classes().get(k).id(), 0.0);
            }
        }
        penalty = new double[s.engineCount];
        java.util.Arrays.fill(penalty, 1.0);
        up = new boolean[s.engineCount];
        java.util.Arrays.fill(up, true);
        // the first snapshot is solved for the operator's forecast (the topology's demand)
        latest = optimizer.solve(base, SolveOptions.defaults());
        planes = new DataPlane[s.gatewayCount];
        held = new Snapshot[s.gatewayCount];
        DataPlaneOptions options = DataPlaneOptions.defaults();
        for (int g = 0; g < s.gatewayCount; g++) {
            planes[g] = DataPlane.create(base.gatewayClusters().get(g).id(), latest,
                    () -> Math.round(sim.loop.now() * 1e6), options.toBuilder().seed(Hashing.mix(s.seed + g)).build());
            held[g] = latest;
        }
        s.onScrape(this::observe);
        s.loop.at(s.scenario.control().solveMs(), this::solveTick);
    }

    private void observe(Simulation.Scrape scrape) {
        double a = sim.scenario.control().smoothing();
        double n = sim.scenario.control().noise();
        for (int g = 0; g < sim.gatewayCount; g++) {
            for (int k = 0; k < sim.classCount; k++) {
                double seen = scrape.demandRps()[g][k] * (1 + n * (2 * noise.nextDouble() - 1));
                demand[g][k] = a * seen + (1 - a) * demand[g][k];
            }
        }
        for (int j = 0; j < sim.engineCount; j++) {
            up[j] = scrape.up()[j];
            double observed = scrape.tbtMs()[j];
            var state = latest.engines().get(base.engines().get(j).id());
            double rho = state == null ? 0 : Math.min(0.99, state.utilization());
            double expected = base.engines().get(j).profile().tbtMs(rho);
            double target = 1.0;
            if (!Double.isNaN(observed) && expected > 0 && observed > 1.5 * expected) {
                target = Math.max(0.1, expected / observed);
            }
            // penalties fall at once and recover gradually, as DESIGN.md §5 asks
            penalty[j] = target < penalty[j] ? target : a * target + (1 - a) * penalty[j];
        }
    }

    private void solveTick() {
        if (sim.controlPlaneUp) {
            solve();
        }
        if (sim.loop.now() < sim.scenario.durationMs() || sim.metrics.open() > 0) {
            sim.loop.after(sim.scenario.control().solveMs(), this::solveTick);
        }
    }

    private void solve() {
        Map<String, Map<String, Double>> d = new LinkedHashMap<>();
        for (int g = 0; g < sim.gatewayCount; g++) {
            Map<String, Double> row = new LinkedHashMap<>();
            for (int k = 0; k < sim.classCount; k++) {
                if (base.demandRps().getOrDefault(base.gatewayClusters().get(g).id(), Map.of())
                        .containsKey(base.classes().get(k).id()) || demand[g][k] > 0) {
                    row.put(base.classes().get(k).id(), Math.max(0, demand[g][k]));
                }
            }
            d.put(base.gatewayClusters().get(g).id(), row);
        }
        List<Engine> engines = new ArrayList<>();
        Map<String, Double> penalties = new LinkedHashMap<>();
        for (int j = 0; j < sim.engineCount; j++) {
            Engine e = base.engines().get(j);
            engines.add(up[j] ? e : e.withHealth(0));
            if (penalty[j] < 1) {
                penalties.put(e.id(), penalty[j]);
            }
        }
        Map<String, Map<String, Double>> rtt = new LinkedHashMap<>();
        for (int g = 0; g < sim.gatewayCount; g++) {
            String gw = base.gatewayClusters().get(g).id();
            Map<String, Double> row = new LinkedHashMap<>(base.networkRttMs().getOrDefault(gw, Map.of()));
            for (int c = 0; c < sim.clusterIds.size(); c++) {
                if (!sim.knownReachable[g][c] && row.containsKey(sim.clusterIds.get(c))) {
                    row.put(sim.clusterIds.get(c), UNREACHABLE_MS);
                }
            }
            rtt.put(gw, row);
        }
        Topology t = new Topology(base.gatewayClusters(), base.engineClusters(), rtt, base.models(), engines,
                base.classes(), d, base.headroom(), base.affinityDiscountMs());
        Snapshot next;
        try {
            long t0 = System.nanoTime(); // wall time of the solve, for the report only
            next = optimizer.solve(t, SolveOptions.defaults().after(latest).withPenalties(penalties));
            solveWallNanos += System.nanoTime() - t0;
            solves++;
            maxGap = Math.max(maxGap, next.objective().gapRelative());
        } catch (RuntimeException e) {
            // the control plane keeps serving the last snapshot; counted, shown in the report
            solveFailures++;
            return;
        }
        latest = next;
        Snapshot published = next;
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
        RequestMeta c = classMeta[r.trafficClass];
        Decision d = planes[r.gateway].route(new RequestMeta(c.model(), c.residency(), c.priority(),
                Hashing.mix(r.affinityKey() + 0x51L), Hashing.mix(r.id ^ 0x7265717565737431L)));
        return toEngine(r, d);
    }

    private int toEngine(SimRequest r, Decision d) {
        if (d.routed()) {
            r.decision = d;
            r.backoffMs = d.backoffNanos() / 1e6;
            return engineIndex.get(d.engineId());
        }
        r.decision = null;
        Refusal why = d.refusal();
        return why == Refusal.SHED || why == Refusal.ENGINE_LIMIT ? SHED : NO_ENGINE;
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

    /** A sentence about the control plane's work in this run, for the report. */
    String controlPlaneSummary() {
        return String.format(java.util.Locale.ROOT,
                "%d solves (%d failed and kept the previous snapshot), mean solve %.0f ms wall, largest certified "
                        + "relative gap %.2g", solves, solveFailures,
                solves == 0 ? 0.0 : solveWallNanos / 1e6 / solves, maxGap);
    }
}
