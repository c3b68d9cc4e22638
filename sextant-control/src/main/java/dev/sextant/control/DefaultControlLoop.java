package dev.sextant.control;

import static dev.sextant.control.Explanations.rps;

import dev.sextant.policy.Policies;
import dev.sextant.policy.RoutingPolicy;
import dev.sextant.policy.SolveOptions;
import dev.sextant.request.Ticker;
import dev.sextant.policy.HeldRouting;
import dev.sextant.snapshot.Objective;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Engine;
import dev.sextant.topology.GatewayCluster;
import dev.sextant.topology.LatencyProfile;
import dev.sextant.topology.MeasuredProfile;
import dev.sextant.topology.Model;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * The control loop of {@link ControlLoop}; see {@code docs/control-loop.md} for every rule it applies.
 *
 * <p>Why one long class: a step is one sequence over one state (take the records, judge each engine, estimate demand,
 * build the solver's topology, solve, decide whether to publish), and each stage reads what the previous one wrote.
 * The stages' own machinery lives apart: fitting ({@link LeastSquares}, {@link GroupModel}), batch limits
 * ({@link BatchLimit}), per-engine and per-link tracking ({@link EngineTracker}, {@link LinkTracker}), the demand
 * ({@link DemandModel}) and the explanations ({@link Explanations}); what is left here is the order of the stages
 * and the rules that join them.
 */
final class DefaultControlLoop implements ControlLoop {
    /** A shed that changes by more than this fraction of the demand is always published. */
    static final double SHED_CHANGE = 0.01;
    /**
     * A held routing that loads an engine beyond its effective capacity by more than this factor is always replaced:
     * within it, estimates that move by noise do not force a publication, beyond it the headroom is really eaten.
     */
    static final double HEADROOM_TOLERANCE = 1.05;

    private final ControlOptions options;
    private final Ticker ticker;
    private final RoutingPolicy optimizer = Policies.optimal();
    private Topology topology;
    private final Map<String, EngineTracker> engines = new TreeMap<>();
    private final Map<String, GroupModel> groups = new LinkedHashMap<>();
    /** Each group's engines, rebuilt with the topology: what a scrape's median and rebase go through, not the fleet. */
    private final Map<GroupModel, List<EngineTracker>> members = new HashMap<>();
    /** Each engine cluster's engines, rebuilt with the topology: what a report's link rules ask of a cluster. */
    private final Map<String, List<EngineTracker>> inCluster = new HashMap<>();
    private final DemandModel demand;
    /** gateway cluster → engine cluster → link. */
    private final Map<String, Map<String, LinkTracker>> links = new HashMap<>();
    private Snapshot published;
    private Topology publishedFor;
    private Snapshot restored;
    /**
     * While the held plan is one kept in its region, the unrestricted plan of the step that published it: the next
     * steps' unrestricted solves start from its prices, since the held plan's are those of another problem (the
     * region's engines priced as if they carried all of its requests) and a solve started there takes about three
     * times the Newton steps. Null while the held plan is unrestricted, restored or adopted.
     */
    private Snapshot unrestrictedBehind;
    /** How long each engine's cache keeps a context at each load, by engine id, as the last estimate knows. */
    private final Map<String, CacheReuse> keeping = new HashMap<>();
    private Step last;
    private boolean urgent;
    /** A demand estimate moved since {@link #urgent()} last looked: urgent only if the held routing no longer fits. */
    private boolean demandMoved;
    /** Per model, the times between its conversations' requests the gateways counted, forgotten as the laws are. */
    private final Map<String, ReuseDistribution> reuseByModel = new HashMap<>();
    private long reuseDecayedAt = Long.MIN_VALUE;
    private boolean started;
    private final Set<String> scrapedOnce = new HashSet<>();

    DefaultControlLoop(Topology topology, ControlOptions options, Ticker ticker, Snapshot restored) {
        this.options = Objects.requireNonNull(options, "options");
        this.ticker = Objects.requireNonNull(ticker, "ticker");
        this.restored = restored;
        this.demand = new DemandModel(options);
        install(topology, false);
    }

    // ---- topology

    @Override
    public synchronized void topology(Topology t) {
        install(t, true);
        urgent = true;
    }

    @Override
    public synchronized Topology topology() {
        return topology;
    }

    private void install(Topology t, boolean running) {
        Objects.requireNonNull(t, "topology");
        Map<String, Integer> output = new HashMap<>();
        t.models().forEach(m -> output.put(m.id(), m.outputTokens()));
        Map<String, GroupModel> oldGroups = new HashMap<>(groups);
        groups.clear();
        Set<String> ids = new HashSet<>();
        for (Engine e : t.engines()) {
            ids.add(e.id());
            String key = GroupModel.key(e);
            int tokens = 1;
            for (String m : e.models()) {
                tokens = Math.max(tokens, output.getOrDefault(m, 1));
            }
            int n = tokens;
            GroupModel g = groups.computeIfAbsent(key, k -> {
                GroupModel old = oldGroups.get(k);
                return old != null ? old : new GroupModel(k, e, n, options);
            });
            EngineTracker tr = engines.get(e.id());
            if (tr == null) {
                engines.put(e.id(), new EngineTracker(e, g, running));
            } else {
                tr.config = e;
                tr.group = g;
            }
        }
        engines.keySet().retainAll(ids);
        members.clear();
        engines.values().forEach(tr -> members.computeIfAbsent(tr.group, k -> new ArrayList<>()).add(tr));
        inCluster.clear();
        engines.values().forEach(tr -> inCluster.computeIfAbsent(tr.config.cluster(), k -> new ArrayList<>()).add(tr));
        scrapedOnce.retainAll(ids);
        for (GatewayCluster g : t.gatewayClusters()) {
            Map<String, LinkTracker> row = links.computeIfAbsent(g.id(), k -> new HashMap<>());
            Map<String, Double> rtt = t.networkRttMs().getOrDefault(g.id(), Map.of());
            Map<String, LinkTracker> next = new HashMap<>();
            rtt.forEach((c, ms) -> {
                LinkTracker old = row.get(c);
                next.put(c, old != null && old.configuredMs == ms ? old : new LinkTracker(ms));
            });
            row.clear();
            row.putAll(next);
        }
        Set<String> gateways = new HashSet<>();
        t.gatewayClusters().forEach(g -> gateways.add(g.id()));
        links.keySet().retainAll(gateways);
        demand.retain(t);
        this.topology = t;
    }

    // ---- observations

    @Override
    public synchronized void observe(EngineScrape s) {
        EngineTracker t = engines.get(s.engine());
        if (t == null) {
            return;
        }
        scrapedOnce.add(s.engine());
        if (!started && scrapedOnce.size() == engines.size()) {
            started = true;
        }
        if (!s.ok()) {
            t.scrapeFailed(s.failure(), s.atNanos());
            return;
        }
        t.group.kvStated(s.metrics().kvCapacityTokens());
        Interval i = t.scraped(s.metrics(), s.atNanos());
        // an interval in which the engine held requests and did nothing, or of a stalled engine, tells nothing of its
        // pace, batch or queue
        if (i != null && !t.inert()) {
            t.queueEvidence(i);
            t.judge(i, options);
            double median = paced(t.group, i.atNanos());
            if (t.teachesLaws()) {
                t.group.sample(i, t.lawFactor(median, options), t.batch.slots(t.group.configuredSlots()));
            }
            Batching law = t.group.fitted(i.atNanos());
            rebase(t.group, law);
            t.batch.sample(i, law.beta() * t.speed * i.prefillRate(), t.speed * law.waitWithoutFullBatch(i.load()),
                    t.speed * law.residence(i.load()));
        }
    }

    @Override
    public synchronized void observe(GatewayReport r) {
        if (topology.gatewayClusters().stream().noneMatch(g -> g.id().equals(r.gateway()))) {
            return;
        }
        if (demand.report(r, topology)) {
            demandMoved = true;
        }
        if (!r.reuse().isEmpty()) {
            decayReuse(r.atNanos());
            for (TrafficClass c : topology.classes()) {
                long[] counts = r.reuse().get(c.id());
                if (counts != null) {
                    reuseByModel.computeIfAbsent(c.model(), k -> new ReuseDistribution()).add(counts);
                }
            }
        }
        if (r.inFlight() != null) {
            String from = r.gateway() + "\u0000" + r.instance();
            for (EngineTracker t : engines.values()) {
                t.inFlight(from, r.inFlight().getOrDefault(t.id, 0L), r.atNanos(), r.intervalSeconds());
            }
        }
        Map<String, LinkTracker> row = links.getOrDefault(r.gateway(), Map.of());
        Map<String, ClusterAttempts> byCluster = byCluster(r);
        // a cluster whose every engine this report's attempts reached (two at least) refused a connection while it
        // answers elsewhere, or whose link is cut: the refusals are the link's. An engine that is down refuses every
        // gateway; a link that is down, one, on every engine behind it. Counted against the engines, a link that
        // failed during an interval made the one with the most refusals FAILING until the link was found cut
        Set<String> linkDown = new HashSet<>();
        byCluster.forEach((cluster, c) -> {
            LinkTracker l = row.get(cluster);
            c.elsewhere = l != null && answersElsewhere(cluster, r.gateway(), r.atNanos());
            if (c.elsewhere && (l.cut || c.attempted >= 2 && c.everyRefused())) {
                linkDown.add(cluster);
            }
        });
        r.engines().forEach((id, o) -> {
            EngineTracker t = engines.get(id);
            if (t != null) {
                t.outcomes(o, r.atNanos(), r.intervalSeconds(), linkDown.contains(t.config.cluster()));
            }
        });
        byCluster.forEach((cluster, c) -> {
            LinkTracker l = row.get(cluster);
            // refusals from every engine attempted there, or from the cluster's only engine, can be the link's
            boolean everyEngine = c.everyRefused()
                    && (c.attempted >= 2 || inCluster.getOrDefault(cluster, List.of()).size() == 1);
            if (l != null && l.attempts(c.successes, c.refused, everyEngine, c.elsewhere, r.atNanos())) {
                urgent = true;
            }
        });
        r.roundTrips().forEach((cluster, rt) -> {
            LinkTracker l = row.get(cluster);
            if (l != null) {
                boolean wasCut = l.cut;
                l.roundTrip(rt, r.atNanos());
                urgent |= wasCut;
            }
        });
    }

    /** What one gateway report says of the attempts on one engine cluster's engines. */
    private static final class ClusterAttempts {
        long successes;
        long refused;
        /** Engines the report's attempts reached, and of those, engines that refused a connection. */
        int attempted;
        int refusing;
        /** Whether the cluster answers elsewhere ({@link #answersElsewhere}), read once per report. */
        boolean elsewhere;

        /** True when every engine attempted refused a connection. */
        boolean everyRefused() {
            return refusing == attempted;
        }
    }

    /** Per engine cluster, what report {@code r} says of the attempts on its engines. */
    private Map<String, ClusterAttempts> byCluster(GatewayReport r) {
        Map<String, ClusterAttempts> out = new HashMap<>();
        r.engines().forEach((id, o) -> {
            EngineTracker t = engines.get(id);
            if (t != null) {
                ClusterAttempts c = out.computeIfAbsent(t.config.cluster(), k -> new ClusterAttempts());
                c.successes += o.successes();
                c.refused += o.connectErrors();
                if (o.requests() > 0) {
                    c.attempted++;
                    c.refusing += o.connectErrors() > 0 ? 1 : 0;
                }
            }
        });
        return out;
    }

    /**
     * True when some engine of {@code cluster} answers scrapes, or another gateway cluster got through to it (a probe
     * or an attempt) within {@link #REACHED_NANOS} before {@code now}: evidence that the cluster is up, so that what one
     * gateway cluster cannot reach is its link. Another link merely not cut yet is no such evidence: when a whole
     * cluster of engines without metrics went down, the first gateway clusters to count their refusals cut their links
     * one by one, each on the others' links not cut yet.
     */
    private boolean answersElsewhere(String cluster, String gateway, long now) {
        for (EngineTracker t : inCluster.getOrDefault(cluster, List.of())) {
            if (t.everScraped && t.misses == 0) {
                return true;
            }
        }
        for (Map.Entry<String, Map<String, LinkTracker>> g : links.entrySet()) {
            LinkTracker l = g.getValue().get(cluster);
            if (!g.getKey().equals(gateway) && l != null && !l.cut && l.reachedNanos != Long.MIN_VALUE
                    && now - l.reachedNanos <= REACHED_NANOS) {
                return true;
            }
        }
        return false;
    }

    /** How recent another gateway cluster's probe or answer must be to show that a cluster is up: six 5-s reports. */
    static final long REACHED_NANOS = 30_000_000_000L;

    @Override
    public synchronized void observe(CanaryResult r) {
        EngineTracker t = engines.get(r.engine());
        if (t != null) {
            t.canary(r, options);
            // canaries are the only evidence of a group the plan sends nothing (slow as a whole, then fast again):
            // their factors against the old laws would price it at a pace it never had
            paced(t.group, r.atNanos());
        }
    }

    /**
     * The median speed factor of a group, after its laws were forgotten if most of its engines changed pace: its laws
     * then describe engines that are no longer there.
     */
    private double paced(GroupModel g, long now) {
        double median = medianSpeed(g);
        if (g.paceChanged(median, options)) {
            g.forgetLaws(now, median);
            for (EngineTracker t : members.getOrDefault(g, List.of())) {
                t.dropPooled();
                t.batch.paceChanged();
            }
            rebase(g, g.fitted(now));
            median = medianSpeed(g);
        }
        return median;
    }

    @Override
    public synchronized List<Canary> canariesDue() {
        long now = ticker.nanos();
        long interval = options.canaryInterval().toNanos();
        List<Canary> out = new ArrayList<>();
        for (EngineTracker t : engines.values()) {
            if (t.canaryDue(now, interval)) {
                out.add(new Canary(t.id, t.config.models().get(0), 8, t.condition + ": " + t.conditionWhy));
            }
        }
        return out;
    }

    @Override
    public synchronized boolean urgent() {
        refresh(ticker.nanos());
        if (!urgent && demandMoved) {
            demandMoved = false;
            urgent = heldMisfits();
        }
        return urgent;
    }

    /**
     * True when the demand as now estimated makes the held routing overload an engine, or when the held snapshot
     * sheds: then a change of demand cannot wait for the next scheduled step. Any other change of demand can: among
     * hundreds of (gateway, class) estimates some move every interval by chance or by a slow trend, and a step for
     * each would re-solve, and publish on small gains, every interval.
     */
    private boolean heldMisfits() {
        if (published == null || publishedFor == null) {
            return true;
        }
        if (published.objective().shedRps() > 0) {
            return true;
        }
        // the demand the reports show: the configured floor of a young estimate is a plan's prior, not a load that came
        HeldRouting held = Policies.evaluate(publishedFor.withDemand(rates(demand.reported(topology, ticker.nanos()))),
                published);
        return Double.isInfinite(held.latencyCost()) || held.maxLoadRatio() > HEADROOM_TOLERANCE;
    }

    /** Updates every engine's condition; a change makes the loop urgent. */
    private void refresh(long now) {
        Map<String, double[]> errorsByModel = new HashMap<>();
        for (EngineTracker t : engines.values()) {
            for (String m : t.config.models()) {
                double[] s = errorsByModel.computeIfAbsent(m, k -> new double[2]);
                s[0] += t.errors();
                s[1] += t.attempts;
            }
        }
        Map<GroupModel, Double> medians = medianSpeeds();
        for (EngineTracker t : engines.values()) {
            double errors = 0;
            double attempts = 0;
            for (String m : t.config.models()) {
                double[] s = errorsByModel.get(m);
                errors += s[0];
                attempts += s[1];
            }
            errors -= t.errors() * t.config.models().size();
            attempts -= t.attempts * t.config.models().size();
            double peers = attempts >= options.minAttempts() ? Math.max(0, errors) / attempts : Double.NaN;
            if (t.update(now, options, peers, medians.get(t.group), started)) {
                urgent = true;
            }
        }
    }

    /** Re-expresses the speed factors of group {@code g}'s engines against its law as fitted now. */
    private void rebase(GroupModel g, Batching law) {
        for (EngineTracker u : members.getOrDefault(g, List.of())) {
            u.rebase(law);
        }
    }

    /** The median speed factor of group {@code g}'s engines (see {@link #median}). */
    private double medianSpeed(GroupModel g) {
        return median(members.getOrDefault(g, List.of()));
    }

    private Map<GroupModel, Double> medianSpeeds() {
        Map<GroupModel, Double> out = new HashMap<>();
        members.forEach((g, l) -> out.put(g, median(l)));
        return out;
    }

    /** The median of a group's speed factors; 1 for a group of one or two. */
    private static double median(List<EngineTracker> group) {
        double[] a = group.stream().mapToDouble(t -> t.speed).toArray();
        Arrays.sort(a);
        // a group of one or two has no majority to tell "this engine" from "the group": its law is the engine's
        return a.length < 3 ? 1.0 : a[a.length / 2];
    }

    // ---- estimates

    @Override
    public synchronized Estimates estimates() {
        long now = ticker.nanos();
        refresh(now);
        Estimates est = estimate(now);
        // the failing engines the published snapshot plans as capacity of last resort, at their share that succeeds
        Map<String, Double> planned = new TreeMap<>();
        for (EngineTracker t : engines.values()) {
            dev.sextant.snapshot.EngineState st = published == null ? null : published.engines().get(t.id);
            if (t.lastResort && t.condition == Condition.FAILING && st != null && st.penalty() < 1) {
                planned.put(t.id, st.penalty());
            }
        }
        return planned.isEmpty() ? est : lastResort(est, planned);
    }

    private Estimates estimate(long now) {
        Map<GroupModel, Double> medians = medianSpeeds();
        Map<GroupModel, Batching> fitted = new HashMap<>();
        Map<GroupModel, Double> priorSaturation = new HashMap<>();
        Map<GroupModel, ReuseDistribution> reuse = new HashMap<>();
        for (GroupModel g : groups.values()) {
            fitted.put(g, g.fitted(now));
            priorSaturation.put(g, g.prior().saturation());
            reuse.put(g, reuseFor(g));
        }
        Map<String, EngineEstimate> est = new TreeMap<>();
        Map<String, Estimated> byShape = new HashMap<>();
        keeping.clear();
        for (EngineTracker t : engines.values()) {
            GroupModel g = t.group;
            double applied = t.appliedSpeed(medians.get(g));
            double slots = t.batch.slots(g.configuredSlots());
            String shape = g.id + "\u0000" + applied + "\u0000" + slots + "\u0000" + t.batch.fromEvidence(
                    g.configuredSlots()) + "\u0000" + t.batch.servedRps();
            Estimated e = byShape.get(shape);
            if (e == null) {
                e = engineEstimate(t, g, fitted.get(g), priorSaturation.get(g), reuse.get(g), applied);
                byShape.put(shape, e);
            }
            EngineEstimate shared = e.estimate();
            if (e.keeping() != null) {
                keeping.put(t.id, e.keeping());
            }
            double health = t.condition.outOfService() ? 0 : t.config.health();
            est.put(t.id, new EngineEstimate(t.id, g.id, t.condition, health, shared.capacityRps(),
                    t.config.capacityRps(), shared.profile(), shared.idleTtftMs(), applied, shared.batchSlots(),
                    shared.evidence(), shared.capacityWhy(), t.speedWhy, t.conditionWhy));
        }
        return new Estimates(now, est, demand.planned(topology, now), linkEstimates(), modelEstimates(),
                affinityDiscount(fitted), affinityWhy(fitted));
    }

    /** An engine's estimate, and how long its cache keeps a context at each load (null: unknown). */
    private record Estimated(EngineEstimate estimate, CacheReuse keeping) {
    }

    private Estimated engineEstimate(EngineTracker t, GroupModel g, Batching fit, double muPrior,
                                     ReuseDistribution reuse, double applied) {
        Engine c = t.config;
        double w = g.evidence();
        if (w == 0 && applied == 1 && !t.batch.fromEvidence(g.configuredSlots())) {
            double rated = g.ratedRps();
            String why = rated < c.capacityRps()
                    ? String.format(Locale.ROOT, "capacity %s req/s (no evidence yet)%s", rps(rated), g.ratedWhy())
                    : String.format(Locale.ROOT, "capacity %s req/s as configured (no evidence yet)", rps(rated));
            return new Estimated(new EngineEstimate(t.id, g.id, t.condition, c.health(), rated, c.capacityRps(),
                    c.profile(), c.profile().ttftMs(0), 1, g.prior().slots(), 0, why, t.speedWhy, t.conditionWhy),
                    null);
        }
        double configuredSlots = g.configuredSlots();
        Batching b = (applied == 1 ? fit : fit.slower(applied)).withSlots(t.batch.slots(configuredSlots));
        double law = b.saturation();
        double served = t.batch.servedSaturation(law);
        if (Math.abs(served / law - 1) > 0.001 && served < 0.999 * b.computeLimit()) {
            // measured where its queue starts (what it served while its batch stayed full): above the laws, that is its
            // capacity; below them, as low as the count requires (BatchLimit.servedSaturation)
            b = b.saturatingAt(served);
            double off = b.saturation() / served;
            if (Math.abs(off - 1) > 0.02) {
                // a batch of a few places cannot be set to saturate at the rate measured (places are whole): the
                // rest of the difference is the engine's time at a full batch, which the laws misjudge by that factor
                b = b.slower(off);
            }
        }
        CacheReuse cache = g.cacheReuse(b, reuse);
        if (cache != null) {
            b = b.withCache(cache);
        }
        double mu = Math.max(1e-6, b.saturation());
        double wCap = t.batch.fromEvidence(configuredSlots) ? 1 : w;
        double capacity = Math.min(MAX_RPS, mu * Math.pow(g.ratedRps() / Math.max(1e-6, muPrior), 1 - wCap));
        LatencyProfile configured = c.profile();
        List<MeasuredProfile.Point> points = new ArrayList<>();
        for (double rho : Batching.SAMPLES) {
            double x = rho * mu;
            double ttft = (1 - w) * applied * configured.ttftMs(rho) + w * b.ttft(x);
            double tbt = (1 - w) * applied * configured.tbtMs(rho) + w * b.tbt(x);
            if (!Double.isFinite(ttft) || !Double.isFinite(tbt)) {
                break;
            }
            // at most a topology file's longest time: laws fitted on an exporter's nonsense once said 1.8e14 ms
            points.add(new MeasuredProfile.Point(rho, Math.min(Topology.MAX_MS, Math.max(1e-3, ttft)),
                    Math.min(Topology.MAX_MS, Math.max(0, tbt))));
        }
        double idle = points.isEmpty() ? configured.ttftMs(0) : points.get(0).ttftMs();
        LatencyProfile profile = points.isEmpty() ? configured : new MeasuredProfile(lightLoad(points));
        String why = String.format(Locale.ROOT, "capacity %s req/s, estimated from %s; %s%s; configured %s%s; %s%s",
                rps(capacity), g.evidenceWhy(), t.batch.why(configuredSlots, options.probeMargin()),
                applied == 1 ? "" : applied > 1 ? String.format(Locale.ROOT, "; %.1f× slower than its group's law",
                        applied) : String.format(Locale.ROOT, "; %.1f× faster than its group's law", 1 / applied),
                rps(c.capacityRps()), g.ratedWhy(), g.outputLengthsWhy(), cacheWhy(cache, g.memberLoad(), mu));
        return new Estimated(new EngineEstimate(t.id, g.id, t.condition, c.health(), capacity, c.capacityRps(), profile,
                idle, applied, b.slots(), w, why, t.speedWhy, t.conditionWhy), g.keeping(cache, b, reuse));
    }

    /**
     * {@code points} (sampled at {@link Batching#SAMPLES}, the first at ρ = 0) with the TTFT at ρ = 0 raised to the
     * line of the lightest loads where it lies below that line. The model's TTFT is concave at light load: an idle
     * engine starts a step for an arrival at once, while at any load that keeps its batch busy the arrival waits half
     * a step in progress, and the share of arrivals that wait rises as 1 − e^(−busy places), steeply. A convex hull
     * through the idle point then lies under the curve at every light load (chat on an h100: 7.5 ms at 20% of the
     * saturation against 8.9 measured). So the hull is taken over the points from ρ = 0.1 on, and its first segment,
     * extended to ρ = 0, gives the value there when that is above the idle TTFT: the profile then matches the model
     * at each sampled load. The idle TTFT itself stays the reference of the overload bound
     * ({@link EngineEstimate#idleTtftMs()}).
     */
    static List<MeasuredProfile.Point> lightLoad(List<MeasuredProfile.Point> points) {
        if (points.size() < 2 || points.get(0).utilization() != 0) {
            return points;
        }
        double[][] hull = new MeasuredProfile(points.subList(1, points.size())).ttftHull();
        double line = hull[0][1];
        if (hull.length > 1) {
            line -= hull[0][0] * (hull[1][1] - hull[0][1]) / (hull[1][0] - hull[0][0]);
        }
        MeasuredProfile.Point idle = points.get(0);
        if (!(line > idle.ttftMs())) {
            return points;
        }
        List<MeasuredProfile.Point> out = new ArrayList<>(points);
        out.set(0, new MeasuredProfile.Point(0, line, idle.tbtMs()));
        return out;
    }

    /** What the prefix cache model says, for an estimate's why ("" without one). */
    static String cacheWhy(CacheReuse c, double load, double capacity) {
        if (c == null) {
            return "";
        }
        double kept = c.keptSeconds(load);
        return String.format(Locale.ROOT, "; prefix cache serves %.0f%% of the prompt tokens at %s req/s, %.0f%% at "
                        + "its capacity (%s; conversations back after %.1f s, median)",
                100 * (1 - c.uncached(load) / c.prompt()), rps(load), 100 * (1 - c.uncached(capacity) / c.prompt()),
                Double.isInfinite(kept) ? "room for every conversation between its requests"
                        : String.format(Locale.ROOT, "a context kept %.1f s", kept),
                c.reuse().median());
    }

    /** Forgets the reuse times counted before {@code now} with the laws' half-life. */
    private void decayReuse(long now) {
        if (reuseDecayedAt != Long.MIN_VALUE && now > reuseDecayedAt) {
            double f = Math.exp(-(now - reuseDecayedAt) * Math.log(2) / options.lawHalfLife().toNanos());
            reuseByModel.values().forEach(d -> d.decay(f));
        }
        reuseDecayedAt = Math.max(reuseDecayedAt, now);
    }

    /** The reuse times of the conversations of the models {@code g}'s engines serve (null: none counted). */
    private ReuseDistribution reuseFor(GroupModel g) {
        ReuseDistribution sum = null;
        for (String m : g.config().models()) {
            ReuseDistribution d = reuseByModel.get(m);
            if (d != null) {
                if (sum == null) {
                    sum = new ReuseDistribution();
                }
                sum.add(d);
            }
        }
        return sum;
    }


    private Map<String, Map<String, LinkEstimate>> linkEstimates() {
        Map<String, Map<String, LinkEstimate>> out = new TreeMap<>();
        links.forEach((g, row) -> {
            Map<String, LinkEstimate> m = new TreeMap<>();
            row.forEach((c, l) -> m.put(c, new LinkEstimate(l.cut ? LinkEstimate.UNREACHABLE_MS : l.ms(),
                    l.configuredMs, !l.cut, l.why())));
            out.put(g, m);
        });
        return out;
    }

    /**
     * The largest rate an estimate takes (a capacity, a demand), req/s: a topology's own bound. Counts as large as a
     * report may carry over a millisecond's interval once said 1e15, and the solve's arithmetic failed on it.
     */
    private static final double MAX_RPS = Topology.MAX_RPS;

    /** The most tokens per request (prompt or output) an estimate takes: ten million, beyond any context window. */
    static final int MAX_TOKENS = dev.sextant.topology.Model.MAX_OUTPUT_TOKENS;

    private Map<String, ModelEstimate> modelEstimates() {
        Map<String, ModelEstimate> out = new TreeMap<>();
        for (Model m : topology.models()) {
            double gen = 0;
            double weight = 0;
            for (GroupModel g : groups.values()) {
                if (g.config().models().size() == 1 && g.config().models().get(0).equals(m.id())) {
                    double[] ev = g.outputEvidence();
                    gen += ev[0];
                    weight += ev[1];
                }
            }
            double c0 = options.priorWeight();
            // at most the longest answers any model gives: engines that report more tokens than that per request
            // (a broken exporter) must not turn the mean into a count no model can have
            int n = (int) Math.max(1, Math.min(MAX_TOKENS, Math.round((gen + m.outputTokens() * c0)
                    / (weight + c0))));
            out.put(m.id(), new ModelEstimate(n, m.outputTokens(), weight < 1 ? "as configured (no evidence yet)"
                    : String.format(Locale.ROOT, "%d tokens per request from %.0f recent requests; configured %d", n,
                    weight, m.outputTokens())));
        }
        return out;
    }

    /**
     * The latency one request saves by finding its conversation in the cache, ms: the prefill of its cached tokens,
     * which it would otherwise wait for, and which would otherwise lengthen the steps of every sequence decoding
     * beside it. Per group: the prefill cost per token of its fitted law × the cached prompt tokens per request it
     * sees × (1 + its mean batch); weighted by the requests each group serves. The topology's
     * {@code affinity_discount_ms} is the prior, worth {@code priorWeight} requests.
     */
    private double affinityDiscount(Map<GroupModel, Batching> fitted) {
        double sum = 0;
        double weight = 0;
        for (GroupModel g : groups.values()) {
            double c = g.completionsWeight();
            double saved = c * fitted.get(g).perToken() * g.cachedTokens() * (1 + g.meanBatch());
            if (c > 0 && g.cachedTokens() > 0 && Double.isFinite(saved)) { // not finite: a broken exporter's
                sum += saved;
                weight += c;
            }
        }
        double c0 = options.priorWeight();
        double discount = (sum + topology.affinityDiscountMs() * c0) / (weight + c0);
        // and at most a topology file's longest time: a discount of 1e40 ms, finite, once made the solve's arithmetic
        // on the kept slots NaN
        return Double.isFinite(discount) ? Math.min(Topology.MAX_MS, discount) : topology.affinityDiscountMs();
    }

    private String affinityWhy(Map<GroupModel, Batching> fitted) {
        double weight = 0;
        for (GroupModel g : groups.values()) {
            if (g.cachedTokens() > 0) {
                weight += g.completionsWeight();
            }
        }
        return weight < 1 ? String.format(Locale.ROOT, "%.1f ms as configured (no cache hits seen yet)",
                topology.affinityDiscountMs())
                : String.format(Locale.ROOT, "%.1f ms: the prefill of the cached tokens of %.0f recent requests, for "
                + "each request and the batch it shares steps with; configured %.1f", affinityDiscount(fitted), weight,
                topology.affinityDiscountMs());
    }

    // ---- the step

    @Override
    public synchronized Step step() {
        long now = ticker.nanos();
        refresh(now);
        urgent = false;
        for (EngineTracker t : engines.values()) {
            dev.sextant.snapshot.EngineState st = published == null ? null : published.engines().get(t.id);
            boolean binding = st != null && st.effectiveCapacityRps() > 0
                    && st.loadRps() >= 0.95 * st.effectiveCapacityRps();
            t.batch.probe(binding, published == null ? Long.MIN_VALUE : published.version(),
                    t.group.configuredSlots(), options.probeMargin());
        }
        Estimates est = estimate(now);
        Topology solveFor = solveTopology(est);
        Snapshot base = published != null ? published : restored;
        SolveOptions opts = base == null ? SolveOptions.defaults()
                : new SolveOptions(base.version() + 1, base, Map.of(), SolveOptions.DEFAULT_GAP_TOLERANCE,
                unrestrictedBehind);
        Snapshot candidate;
        Snapshot unrestricted = null;
        String unproven = "";
        try {
            candidate = optimizer.solve(solveFor, opts);
            if (candidate.objective().shedRps() > 0 && demand.anyHeld()) {
                // the engines do not carry every peak held: as much of the recurring ones as they do, else none
                Estimates carried = demand.carried(est, candidate.objective().shedRps());
                Topology carriedFor = carried == null ? null : solveTopology(carried);
                Snapshot fits = carried == null ? null : optimizer.solve(carriedFor, opts);
                if (fits != null && fits.objective().shedRps() <= SHED_PRECISION * plannedRps(carried)) {
                    est = carried;
                    solveFor = carriedFor;
                    candidate = fits;
                } else {
                    est = demand.unheld(est);
                    solveFor = solveTopology(est);
                    candidate = optimizer.solve(solveFor, opts);
                }
            }
            List<String> lastResort = new ArrayList<>();
            Map<String, Double> succeeding = new TreeMap<>();
            Topology withFailing = failingAsLastResort(solveFor, candidate, est, lastResort, succeeding);
            if (!lastResort.isEmpty()) {
                est = lastResort(est, succeeding);
                opts = opts.withPenalties(succeeding);
                candidate = optimizer.solve(withFailing, opts);
                solveFor = withFailing;
                unproven = "; failing engines planned again, priced with their retries, since without them the engines"
                        + " in service would run beyond where their TTFT reaches "
                        + overloadFactorText()
                        + "× idle (" + String.join(", ", lastResort) + ")";
            }
            if (candidate.objective().shedRps() > 0) {
                List<String> relaxed = new ArrayList<>();
                Topology t = unprovenAsRated(solveFor, relaxed);
                if (!relaxed.isEmpty()) {
                    candidate = optimizer.solve(t, opts);
                    solveFor = t;
                    unproven += "; not shed on capacities below the rating that no queue has shown (" + String.join(", ",
                            relaxed) + " planned up to the rating until one does)";
                }
            }
            if (candidate.objective().shedRps() > 0) {
                Map<String, Double> bounds = queueingBounds(solveFor, candidate, est);
                List<String> bounded = List.of();
                double[] top = atTop(candidate);
                // more of the top priority shed is more than the solver's own precision (its certified gap is about
                // 1e-6 of the objective): a difference of 7e-7 req/s once kept a bound that shed none of it
                double more = top[0] + SHED_PRECISION * top[1] + 1e-9;
                // the tightest bound, then halfway back towards none, while it would shed more of the top priority
                for (double part = 1; part >= 0.25 && bounded.isEmpty() && !bounds.isEmpty(); part /= 2) {
                    Topology t = bounded(solveFor, bounds, part);
                    Snapshot c = optimizer.solve(t, opts);
                    if (atTop(c)[0] <= more) {
                        candidate = c;
                        solveFor = t;
                        bounded = List.copyOf(bounds.keySet());
                    }
                }
                if (!bounded.isEmpty()) {
                    unproven += "; engines planned no fuller than where their TTFT reaches "
                            + overloadFactorText()
                            + "× idle while the fleet is short (" + String.join(", ", bounded) + ")";
                }
            }
            List<Forecast> unreported = candidate.objective().shedRps() > 0 && options.observedDemand()
                    ? unreported(est, solveFor) : List.of();
            if (sheds(candidate, unreported)) {
                // the largest share of the forecast that sheds none of it, by bisection (a few solves, only until the
                // first reports: refusing requests on a forecast alone is what the loop must not do)
                Snapshot best = null;
                Topology bestFor = null;
                double lo = 0;
                double hi = 1;
                double share = 0.5;
                for (int i = 0; i < FORECAST_STEPS; i++, share = (lo + hi) / 2) {
                    Topology t = scaled(solveFor, unreported, share);
                    Snapshot c = optimizer.solve(t, opts);
                    if (sheds(c, unreported)) {
                        hi = share;
                    } else {
                        lo = share;
                        best = c;
                        bestFor = t;
                    }
                }
                boolean floors = unreported.stream().anyMatch(f -> f.reportedRps() > 0);
                if (best == null && floors) {
                    // what the reports show sheds by itself: that is shed, the configured demand beyond it is not
                    bestFor = scaled(solveFor, unreported, 0);
                    best = optimizer.solve(bestFor, opts);
                }
                if (best != null) {
                    candidate = best;
                    solveFor = bestFor;
                    unproven += "; not shed on demand that no gateway has reported yet: planned for " + String.format(
                            Locale.ROOT, floors ? "what the reports show and %.0f%% of the topology's demand beyond it"
                                    : "%.0f%% of the topology's", 100 * lo);
                }
            }
        } catch (RuntimeException e) {
            last = new Step(now, null, false, "solve failed: " + e, Double.NaN, Double.NaN, solveFor, est);
            return last;
        }
        last = decide(now, candidate, solveFor, est);
        // the candidate is the optimum of the objective (the affinity credit included), so a plan kept in its region
        // costs at least as much and its gain over the held snapshot is at most the candidate's: where the candidate
        // is not published, neither would it be, and the extra solve (about the cost of the first on a large fleet) is
        // spent only on a step that publishes
        if (options.keepInRegion() && last.published()) {
            try {
                // the plan kept in its region starts from the held plan's prices, kept in its region or not
                InRegion kept = inRegion(candidate, solveFor, opts.withWarmStart(null));
                if (kept != null) {
                    unrestricted = candidate;
                    candidate = kept.snapshot();
                    unproven += kept.reason();
                    last = decide(now, candidate, solveFor, est);
                }
            } catch (RuntimeException e) {
                unproven += "; the plan kept in region could not be solved (" + e + "): the unrestricted plan stands";
            }
        }
        if (!unproven.isEmpty()) {
            last = new Step(last.atNanos(), last.snapshot(), last.published(), last.reason() + unproven, last.gainMs(),
                    last.thresholdMs(), last.solvedFor(), last.estimates());
        }
        if (last.published()) {
            Snapshot stamped = withContextKept(candidate);
            if (stamped != candidate) {
                candidate = stamped;
                last = new Step(last.atNanos(), candidate, true, last.reason(), last.gainMs(), last.thresholdMs(),
                        last.solvedFor(), last.estimates());
            }
            published = candidate;
            publishedFor = solveFor;
            restored = null;
            unrestrictedBehind = unrestricted;
        }
        return last;
    }

    /**
     * {@code s} with each engine's {@link dev.sextant.snapshot.EngineState#contextKeptSeconds()}: how long its cache
     * keeps a conversation's context at the load {@code s} plans for it ({@link CacheReuse#keptSeconds}), where the
     * estimates know; {@code s} itself where they know it for none. The gateways place a conversation away longer than
     * that as a new one (docs/request-path.md §4, "Spacing new conversations").
     */
    private Snapshot withContextKept(Snapshot s) {
        if (keeping.isEmpty()) {
            return s;
        }
        Map<String, dev.sextant.snapshot.EngineState> engines = new LinkedHashMap<>();
        boolean any = false;
        for (Map.Entry<String, dev.sextant.snapshot.EngineState> e : s.engines().entrySet()) {
            CacheReuse k = keeping.get(e.getKey());
            dev.sextant.snapshot.EngineState st = e.getValue();
            double kept = k == null || !(st.loadRps() > 0) ? Double.NaN : k.keptSeconds(st.loadRps());
            st = st.withContextKeptSeconds(kept >= 0 ? kept : Double.NaN);
            any |= !Double.isNaN(st.contextKeptSeconds());
            engines.put(e.getKey(), st);
        }
        return any ? s.withEngines(engines) : s;
    }

    /** Below this strain a failing engine planned as a last resort leaves the plan again (1.2 / 1.5, as for slow ones). */
    static final double LAST_RESORT_LEAVE = 0.8;

    /**
     * {@code t} with its failing engines back in service, each priced with what its failures add to a request sent
     * there (its error rate times its idle TTFT: a fast error costs about a first token before the retry) and its
     * capacity counted at the share of its attempts that succeed (its penalty in {@code succeeding}, which tells the
     * gateways that its errors are expected, so they do not eject it for them), when
     * {@code plan} (a solve of {@code t} without them) runs an engine in service beyond where its estimated TTFT
     * reaches {@link ControlOptions#overloadTtftFactor()} times idle, or sheds (docs/control-loop.md, "Failing engines
     * as a last resort"). Only engines that fail fast qualify: fewer than half their attempts since they were found
     * failing fail (the gateways' and canaries; {@link EngineTracker#attemptsSinceFailing}), with confidence
     * ({@link #errorRateUpper}), and none timed out, so a request sent there more likely succeeds than not and a
     * failure costs a retry, not a timeout. Once planned, they stay until the strain falls below
     * {@link #LAST_RESORT_LEAVE} of that point. Their ids go to {@code planned}; {@code t} itself when there are none.
     */
    private Topology failingAsLastResort(Topology t, Snapshot plan, Estimates est, List<String> planned,
                                         Map<String, Double> succeeding) {
        List<EngineTracker> failing = new ArrayList<>();
        for (EngineTracker tr : engines.values()) {
            boolean fast = tr.attemptsSinceFailing > 0
                    && errorRateUpper(tr.errorsSinceFailing, tr.attemptsSinceFailing) < 0.5 && tr.timeouts < 1;
            if (tr.condition == Condition.FAILING && fast) {
                failing.add(tr);
            } else {
                tr.lastResort = false;
            }
        }
        if (failing.isEmpty()) {
            return t;
        }
        double strain = strain(t, plan, est);
        List<Engine> es = new ArrayList<>(t.engines().size());
        for (Engine e : t.engines()) {
            EngineTracker tr = engines.get(e.id());
            boolean candidate = failing.contains(tr);
            if (candidate) {
                tr.lastResort = strain >= 1 || tr.lastResort && strain >= LAST_RESORT_LEAVE;
            }
            if (candidate && tr.lastResort) {
                double rate = tr.errorsSinceFailing / tr.attemptsSinceFailing;
                double addMs = rate * est.engines().get(e.id()).idleTtftMs();
                es.add(e.rated(e.capacityRps(), withTtftAdded(e.profile(), addMs), tr.config.health()));
                succeeding.put(e.id(), 1 - rate);
                planned.add(String.format(Locale.ROOT, "%s: %.0f%% of its attempts fail, +%.1f ms a request", e.id(),
                        100 * rate, addMs));
            } else {
                es.add(e);
            }
        }
        return planned.isEmpty() ? t : t.withEngines(es);
    }

    /**
     * The upper end of the error rate that {@code errors} of {@code attempts} allow: Wilson's score interval at two
     * standard deviations (about 98% one-sided). A last resort must fail less than half the time with that
     * confidence: twenty recent attempts of which a third failed, some of them from before a fault, do not say that an
     * engine failing every request since would serve most of what it is sent.
     */
    static double errorRateUpper(double errors, double attempts) {
        double z2 = 4; // z = 2
        double p = errors / attempts;
        double centre = p + z2 / (2 * attempts);
        double spread = 2 * Math.sqrt(p * (1 - p) / attempts + z2 / (4 * attempts * attempts));
        return (centre + spread) / (1 + z2 / attempts);
    }

    /** {@code est} with the engines of {@code succeeding} (id → share of attempts that succeed) planned again. */
    private Estimates lastResort(Estimates est, Map<String, Double> succeeding) {
        Map<String, EngineEstimate> engines = new TreeMap<>(est.engines());
        succeeding.forEach((id, share) -> engines.put(id, engines.get(id).planned(this.engines.get(id).config.health(),
                String.format(Locale.ROOT, "; planned as capacity of last resort, at the %.0f%% of its attempts that "
                        + "succeed: without it the others would run beyond where their TTFT reaches %s× idle",
                        100 * share, overloadFactorText()))));
        return new Estimates(est.atNanos(), engines, est.demand(), est.links(), est.models(), est.affinityDiscountMs(),
                est.affinityWhy());
    }

    /**
     * The largest ratio, over the engines in service, of {@code plan}'s load to the load at which the engine's TTFT
     * reaches {@link ControlOptions#overloadTtftFactor()} times idle; infinite when {@code plan} sheds.
     */
    private double strain(Topology t, Snapshot plan, Estimates est) {
        if (plan.objective().shedRps() > 0) {
            return Double.POSITIVE_INFINITY;
        }
        double worst = 0;
        if (Double.isInfinite(options.overloadTtftFactor())) {
            return worst;
        }
        for (Engine e : t.engines()) {
            dev.sextant.snapshot.EngineState st = plan.engines().get(e.id());
            if (e.health() > 0 && st != null) {
                double atFactor = utilizationAtFactor(e, est) * e.capacityRps();
                worst = Math.max(worst, st.loadRps() / Math.max(1e-9, atFactor));
            }
        }
        return worst;
    }

    /**
     * The utilization at which {@code e}'s profile reaches {@link ControlOptions#overloadTtftFactor()} times the TTFT of
     * a request that finds it idle (its estimate's, else the profile's at no load).
     */
    private double utilizationAtFactor(Engine e, Estimates est) {
        EngineEstimate x = est.engines().get(e.id());
        double idle = x == null ? e.profile().ttftMs(0) : x.idleTtftMs();
        return utilizationAtTtft(e.profile(), options.overloadTtftFactor(), idle);
    }

    /** {@link ControlOptions#overloadTtftFactor()} as the step's reasons write it ("2"). */
    private String overloadFactorText() {
        return BigDecimal.valueOf(options.overloadTtftFactor()).stripTrailingZeros().toPlainString();
    }

    /** {@code p} with {@code ms} added to its TTFT at every load, sampled at {@link Batching#SAMPLES}. */
    private static LatencyProfile withTtftAdded(LatencyProfile p, double ms) {
        List<MeasuredProfile.Point> points = new ArrayList<>();
        for (double rho : Batching.SAMPLES) {
            points.add(new MeasuredProfile.Point(rho, p.ttftMs(rho) + ms, p.tbtMs(rho)));
        }
        return new MeasuredProfile(points);
    }

    /**
     * The engines that {@code shedding} (a solve of {@code t} that sheds) fills to their effective capacity, each with
     * the health that plans it no fuller than where its estimated TTFT reaches
     * {@link ControlOptions#overloadTtftFactor()} times its idle TTFT (docs/control-loop.md, "Shedding needs a queue"),
     * where that is below its health; in the topology's order. Empty when the factor is infinite.
     */
    private Map<String, Double> queueingBounds(Topology t, Snapshot shedding, Estimates est) {
        double factor = options.overloadTtftFactor();
        Map<String, Double> out = new LinkedHashMap<>();
        if (Double.isInfinite(factor)) {
            return out;
        }
        for (Engine e : t.engines()) {
            dev.sextant.snapshot.EngineState st = shedding.engines().get(e.id());
            if (st != null && st.effectiveCapacityRps() > 0 && st.loadRps() >= FULL * st.effectiveCapacityRps()) {
                double health = utilizationAtFactor(e, est) / (1 - t.headroom());
                if (health < e.health()) {
                    out.put(e.id(), health);
                }
            }
        }
        return out;
    }

    /**
     * {@code t} with each engine of {@code bounds} given the health {@code part} of the way from its own to its bound:
     * a lower health scales the capacity bound and leaves the latency at each load as it is.
     */
    private static Topology bounded(Topology t, Map<String, Double> bounds, double part) {
        List<Engine> es = new ArrayList<>(t.engines().size());
        for (Engine e : t.engines()) {
            Double bound = bounds.get(e.id());
            es.add(bound == null ? e : e.withHealth(e.health() - part * (e.health() - bound)));
        }
        return t.withEngines(es);
    }

    /** Solves of the bisection that finds how much of an unreported forecast the engines carry: to 1/256. */
    private static final int FORECAST_STEPS = 8;

    /**
     * Demand that no gateway has reported yet, of one (gateway cluster, class): the topology's, beyond what the
     * reports show ({@code reportedRps}: 0 before the first report, more while the configured demand is the floor of
     * a young estimate).
     */
    private record Forecast(String gateway, String cls, double reportedRps) {
    }

    /**
     * The (gateway cluster, class) pairs whose demand is in part or whole a forecast, of the classes that {@code t}
     * has an allowed engine in service for (a class without one is refused whatever its demand).
     */
    private static List<Forecast> unreported(Estimates est, Topology t) {
        Set<String> servable = new HashSet<>();
        for (TrafficClass c : t.classes()) {
            for (Engine e : t.engines()) {
                if (e.health() > 0 && t.allowed(c, e)) {
                    servable.add(c.id());
                    break;
                }
            }
        }
        List<Forecast> out = new ArrayList<>();
        est.demand().forEach((g, row) -> row.forEach((k, d) -> {
            if (servable.contains(k) && d.rps() > 0 && (Double.isNaN(d.standardError()) || d.floored())) {
                out.add(new Forecast(g, k, d.floored() ? d.reportedRps() : 0));
            }
        }));
        return out;
    }

    /** True when {@code s} sheds any of {@code pairs}' demand, beyond the solver's precision. */
    private static boolean sheds(Snapshot s, List<Forecast> pairs) {
        for (Forecast p : pairs) {
            Route r = s.route(p.gateway(), p.cls());
            if (r != null && r.shedFraction() > SHED_PRECISION) {
                return true;
            }
        }
        return false;
    }

    /** {@code t} with the demand of {@code pairs} beyond what the reports show times {@code share}. */
    private static Topology scaled(Topology t, List<Forecast> pairs, double share) {
        Map<String, Map<String, Double>> d = new LinkedHashMap<>();
        t.demandRps().forEach((g, row) -> d.put(g, new LinkedHashMap<>(row)));
        for (Forecast p : pairs) {
            Map<String, Double> row = d.get(p.gateway());
            if (row != null) {
                row.computeIfPresent(p.cls(), (k, v) -> p.reportedRps() + (v - p.reportedRps()) * share);
            }
        }
        return t.withDemand(d);
    }

    /** A solve's load at or above this fraction of an engine's effective capacity fills it. */
    private static final double FULL = 0.999;

    /**
     * The utilization at which {@code profile}'s TTFT reaches {@code factor} times its value at no load, by bisection
     * (TTFT is non-decreasing in ρ); the profile's last point when it never does.
     */
    static double utilizationAtTtft(LatencyProfile profile, double factor) {
        return utilizationAtTtft(profile, factor, profile.ttftMs(0));
    }

    /** As {@link #utilizationAtTtft(LatencyProfile, double)}, where TTFT reaches {@code factor × idleMs}. */
    static double utilizationAtTtft(LatencyProfile profile, double factor, double idleMs) {
        double target = factor * idleMs;
        double lo = 0;
        double hi = Batching.SAMPLES[Batching.SAMPLES.length - 1];
        if (profile.ttftMs(hi) <= target) {
            return hi;
        }
        for (int i = 0; i < 40; i++) {
            double mid = (lo + hi) / 2;
            if (profile.ttftMs(mid) <= target) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /** A share of the top priority's demand below which a solve's shedding of it is the solver's precision. */
    private static final double SHED_PRECISION = 1e-6;

    /** The demand {@code e} plans for, req/s. */
    private static double plannedRps(Estimates e) {
        double sum = 0;
        for (Map<String, DemandEstimate> row : e.demand().values()) {
            for (DemandEstimate d : row.values()) {
                sum += d.rps();
            }
        }
        return sum;
    }

    /** Requests per second {@code s} sheds of the classes of the highest priority it routes, and their demand. */
    private static double[] atTop(Snapshot s) {
        int top = Integer.MIN_VALUE;
        double shed = 0;
        double demand = 0;
        for (Map<String, Route> byClass : s.routes().values()) {
            for (Route r : byClass.values()) {
                if (r.priority() > top) {
                    top = r.priority();
                    shed = 0;
                    demand = 0;
                }
                if (r.priority() == top) {
                    shed += r.demandRps() * r.shedFraction();
                    demand += r.demandRps();
                }
            }
        }
        return new double[] {shed, demand};
    }

    /**
     * What a request sent out of its gateway cluster's region costs the solve for the plan that keeps requests in
     * their region, ms, beyond its round trip: far above what any engine's queue adds short of its capacity, far below
     * the cost of shedding ({@code Instance.SHED_COST_BASE_MS}, 1e7), so that plan leaves a region only where its
     * engines cannot take its requests.
     */
    static final double OUT_OF_REGION_MS = 1e4;

    /** A plan that keeps requests in their region, and the words the step's reason gets for it. */
    private record InRegion(Snapshot snapshot, String reason) {
    }

    /**
     * The plan that keeps each gateway cluster's requests on its own region's engines, in place of {@code candidate},
     * when it costs no more than the publication threshold per request on {@code solveFor} (affinity credited as
     * {@link #decide} credits it), sheds nothing, fills no engine past its effective capacity, and {@code candidate}
     * sheds nothing; else null (docs/control-loop.md, "Requests stay in their region"). Crossing a region costs what the
     * objective does not see: the round trip is all in the first token's wait, traffic between regions is billed, and
     * a plan that spreads over regions for a gain the loop calls noise anywhere else is a plan that follows noise.
     */
    private InRegion inRegion(Snapshot candidate, Topology solveFor, SolveOptions opts) {
        if (candidate.objective().shedRps() > 0 || !leavesRegion(candidate, solveFor)) {
            return null;
        }
        Topology penalized = outOfRegionPenalized(solveFor, OUT_OF_REGION_MS);
        if (penalized == null) {
            return null;
        }
        Snapshot local = optimizer.solve(penalized, opts);
        HeldRouting home = Policies.evaluate(solveFor, local);
        HeldRouting free = Policies.evaluate(solveFor, candidate);
        if (!Double.isFinite(home.latencyCost()) || home.shedRps() > 0 || home.maxLoadRatio() > 1) {
            return null;
        }
        double credit = published == null ? 0 : solveFor.affinityDiscountMs()
                * (kept(local, published, solveFor) - kept(candidate, published, solveFor));
        double routed = Math.max(1e-9, free.routedRps());
        double gain = (home.latencyCost() - free.latencyCost() - credit) / routed;
        double threshold = publicationThreshold(free.meanLatencyMs());
        if (gain > threshold) {
            return null;
        }
        Objective best = candidate.objective();
        // the certificate stays honest: the bound is the unrestricted solve's, on its objective (the latency less the
        // affinity credit for the flow kept where the previous snapshot sends it), and the gap this plan's distance
        // to it on that objective
        double solved = home.latencyCost() - (opts.previous() == null ? 0
                : solveFor.affinityDiscountMs() * kept(local, opts.previous(), solveFor));
        double gap = solved > 0 ? Math.max(0, solved - best.lowerBound()) / solved : 0;
        Objective o = new Objective(home.meanLatencyMs(), home.latencyCost(), best.lowerBound(), gap, 0,
                best.iterations() + local.objective().iterations());
        Snapshot s = new Snapshot(local.version(), "", local.policy(), local.fleetUtilization(), local.retryBudget(),
                local.routes(), local.engines(), solveFor.networkRttMs(), o, local.groups()).sealed(local.version());
        return new InRegion(s, String.format(Locale.ROOT, "; kept in region: sending requests out of their region would"
                + " gain %.2f ms per request, not above the threshold of %.2f ms", gain, threshold));
    }

    /** Whether {@code s} sends any of a gateway cluster's requests to an engine outside its region. */
    private static boolean leavesRegion(Snapshot s, Topology t) {
        Map<String, String> regionOfEngine = new HashMap<>();
        for (Engine e : t.engines()) {
            regionOfEngine.put(e.id(), t.regionOf(e));
        }
        for (GatewayCluster g : t.gatewayClusters()) {
            for (Route r : s.routes().getOrDefault(g.id(), Map.of()).values()) {
                for (Map.Entry<String, Double> w : r.weights().entrySet()) {
                    if (w.getValue() > 0 && !g.region().equals(regionOfEngine.get(w.getKey()))) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /**
     * {@code t} with {@code penaltyMs} added to each round trip from a gateway cluster to an engine cluster outside its
     * region, where the gateway cluster has an engine cluster in its own; null when none is.
     */
    private static Topology outOfRegionPenalized(Topology t, double penaltyMs) {
        Map<String, String> gatewayRegion = new HashMap<>();
        t.gatewayClusters().forEach(g -> gatewayRegion.put(g.id(), g.region()));
        Map<String, String> clusterRegion = new HashMap<>();
        t.engineClusters().forEach(c -> clusterRegion.put(c.id(), c.region()));
        Map<String, Map<String, Double>> rtt = new LinkedHashMap<>();
        boolean any = false;
        for (Map.Entry<String, Map<String, Double>> row : t.networkRttMs().entrySet()) {
            String region = gatewayRegion.get(row.getKey());
            boolean hasLocal = row.getValue().keySet().stream().anyMatch(c -> region != null
                    && region.equals(clusterRegion.get(c)));
            Map<String, Double> r = new LinkedHashMap<>();
            for (Map.Entry<String, Double> c : row.getValue().entrySet()) {
                boolean remote = hasLocal && !region.equals(clusterRegion.get(c.getKey()));
                r.put(c.getKey(), remote ? c.getValue() + penaltyMs : c.getValue());
                any |= remote;
            }
            rtt.put(row.getKey(), r);
        }
        return any ? new Topology(t.gatewayClusters(), t.engineClusters(), rtt, t.models(), t.engines(), t.classes(),
                t.demandRps(), t.headroom(), t.affinityDiscountMs(), t.retryBudget()) : null;
    }

    /** The topology in force with every estimate written in: what the optimizer prices. */
    private Topology solveTopology(Estimates est) {
        List<Engine> es = new ArrayList<>();
        for (Engine e : topology.engines()) {
            EngineEstimate x = est.engines().get(e.id());
            // the batch as estimated, which the snapshot tells the gateways (docs/request-path.md §4)
            double places = Math.floor(Math.min(x.batchSlots(), Engine.MAX_NUM_SEQS));
            Engine rated = e.rated(x.capacityRps(), x.profile(), x.health());
            es.add(places >= 1 ? rated.withMaxNumSeqs((int) places) : rated);
        }
        List<Model> models = new ArrayList<>();
        for (Model m : topology.models()) {
            models.add(new Model(m.id(), est.models().get(m.id()).outputTokens()));
        }
        Map<String, Map<String, Double>> rtt = new LinkedHashMap<>();
        topology.networkRttMs().forEach((g, row) -> {
            Map<String, Double> r = new LinkedHashMap<>();
            Map<String, LinkEstimate> l = est.links().getOrDefault(g, Map.of());
            row.forEach((c, ms) -> r.put(c, l.containsKey(c) ? l.get(c).ms() : ms));
            rtt.put(g, r);
        });
        return new Topology(topology.gatewayClusters(), topology.engineClusters(), rtt, models, es,
                topology.classes(), rates(est.demand()), topology.headroom(), est.affinityDiscountMs(), topology.retryBudget());
    }

    /**
     * {@code t} with each engine in service whose estimated capacity is below its rating, and which has shown no sign
     * of being full ({@link EngineTracker#canBeFull()}), given its rating back as its capacity; the ids of those engines
     * go to {@code relaxed}. Used only when the estimates would shed: refusing requests is a decision an extrapolation
     * must not make alone, and an engine that has not queued may have room. The estimated profile keeps its
     * latencies at each load (its points are moved to the rating's utilizations), and beyond the estimated capacity
     * the latency goes on rising at its last slope, so the optimizer loads such an engine past its estimate only where
     * the alternative is shedding. If the engine is in fact full, requests queue, the next scrape shows it, and the
     * shedding follows.
     */
    private Topology unprovenAsRated(Topology t, List<String> relaxed) {
        List<Engine> es = new ArrayList<>();
        for (Engine e : t.engines()) {
            EngineTracker tr = engines.get(e.id());
            double rated = tr.group.ratedRps();
            if (e.health() > 0 && e.capacityRps() < rated && !tr.canBeFull()
                    && e.profile() instanceof MeasuredProfile m) {
                double k = e.capacityRps() / rated;
                List<MeasuredProfile.Point> points = new ArrayList<>();
                for (MeasuredProfile.Point p : m.points()) {
                    points.add(new MeasuredProfile.Point(p.utilization() * k, p.ttftMs(), p.tbtMs()));
                }
                es.add(e.rated(rated, new MeasuredProfile(points), e.health()));
                relaxed.add(e.id());
            } else {
                es.add(e);
            }
        }
        return relaxed.isEmpty() ? t : t.withEngines(es);
    }

    /** The demand estimates as the topology's demand: gateway cluster → class → req/s. */
    private static Map<String, Map<String, Double>> rates(Map<String, Map<String, DemandEstimate>> demand) {
        Map<String, Map<String, Double>> d = new LinkedHashMap<>();
        demand.forEach((g, row) -> {
            Map<String, Double> r = new LinkedHashMap<>();
            row.forEach((c, x) -> r.put(c, x.rps()));
            d.put(g, r);
        });
        return d;
    }

    private Step decide(long now, Snapshot candidate, Topology solveFor, Estimates est) {
        if (published == null) {
            String why = restored != null ? "first snapshot, going on from snapshot " + restored.version()
                    + " of the state file" : "first snapshot";
            return new Step(now, candidate, true, why, Double.NaN, Double.NaN, solveFor, est);
        }
        // a failing engine taken into the plan as a last resort is back in service for the solve; say why
        String structural = lastResortChange(published, candidate);
        if (structural == null) {
            structural = structuralChange(publishedFor, solveFor);
        }
        if (structural != null) {
            return new Step(now, candidate, true, structural, Double.POSITIVE_INFINITY, 0, solveFor, est);
        }
        HeldRouting held = Policies.evaluate(solveFor, published);
        Objective next = candidate.objective();
        double total = 0;
        for (Map<String, Double> row : solveFor.demandRps().values()) {
            for (double v : row.values()) {
                total += v;
            }
        }
        if (Double.isInfinite(held.latencyCost())) {
            return new Step(now, candidate, true, "the held routing no longer fits the estimates (an engine at or over "
                    + "its capacity, or a class sent where it may not go)", Double.POSITIVE_INFINITY, 0, solveFor, est);
        }
        if (held.maxLoadRatio() > HEADROOM_TOLERANCE) {
            return new Step(now, candidate, true, String.format(Locale.ROOT, "the held routing loads %s to %.0f%% of its "
                    + "effective capacity", held.maxLoadEngine(), 100 * held.maxLoadRatio()), Double.POSITIVE_INFINITY,
                    0, solveFor, est);
        }
        if (Math.abs(held.shedRps() - next.shedRps()) > SHED_CHANGE * total + 1e-9) {
            return new Step(now, candidate, true, String.format(Locale.ROOT, "shed %.1f → %.1f req/s", held.shedRps(),
                    next.shedRps()), Double.POSITIVE_INFINITY, 0, solveFor, est);
        }
        double discount = solveFor.affinityDiscountMs();
        double heldCost = held.latencyCost() - discount * kept(published, published, solveFor);
        double nextCost = next.latencyCost() - discount * kept(candidate, published, solveFor);
        double routed = Math.max(1e-9, total - next.shedRps());
        double gain = (heldCost - nextCost) / routed;
        double threshold = publicationThreshold(held.meanLatencyMs());
        if (gain > threshold) {
            return new Step(now, candidate, true, String.format(Locale.ROOT,
                    "expected gain %.2f ms per request, above the threshold of %.2f ms", gain, threshold), gain,
                    threshold, solveFor, est);
        }
        return new Step(now, candidate, false, String.format(Locale.ROOT,
                "expected gain %.2f ms per request, not above the threshold of %.2f ms: snapshot %d stays", gain,
                threshold, published.version()), gain, threshold, solveFor, est);
    }

    /** The gain per request, ms, a plan must exceed against one whose mean latency is {@code meanLatencyMs}. */
    private double publicationThreshold(double meanLatencyMs) {
        return Math.max(options.publishGainMs(), options.publishGain() * meanLatencyMs);
    }

    /**
     * Flow that stays where {@code previous} sent it if {@code s} is published for {@code t}'s demand, req/s: per
     * (gateway cluster, class) and engine group, the smaller of the new flow and the previous one (the optimizer's
     * affinity term credits exactly this).
     */
    private static double kept(Snapshot s, Snapshot previous, Topology t) {
        double sum = 0;
        for (Map.Entry<String, Map<String, Double>> g : t.demandRps().entrySet()) {
            for (Map.Entry<String, Double> c : g.getValue().entrySet()) {
                Route now = s.route(g.getKey(), c.getKey());
                Route before = previous.route(g.getKey(), c.getKey());
                if (now == null || before == null) {
                    continue;
                }
                double lambda = c.getValue();
                Map<String, Double> a = now.hasGroups() ? now.groups() : now.weights();
                Map<String, Double> b = before.hasGroups() ? before.groups() : before.weights();
                for (Map.Entry<String, Double> e : a.entrySet()) {
                    Double w = b.get(e.getKey());
                    if (w != null) {
                        sum += Math.min(e.getValue() * lambda, w * before.demandRps());
                    }
                }
            }
        }
        return sum;
    }

    /** Why {@code after} must be published over {@code before} whatever the gain, or null. */
    private static String structuralChange(Topology before, Topology after) {
        if (!before.classes().equals(after.classes()) || !before.gatewayClusters().equals(after.gatewayClusters())
                || !before.engineClusters().equals(after.engineClusters())) {
            return "topology changed";
        }
        if (before.engines().size() != after.engines().size()) {
            return "engines changed";
        }
        for (int j = 0; j < after.engines().size(); j++) {
            Engine a = before.engines().get(j);
            Engine b = after.engines().get(j);
            if (!a.id().equals(b.id()) || !a.endpoint().equals(b.endpoint()) || !a.models().equals(b.models())
                    || !a.cluster().equals(b.cluster())) {
                return "engine " + b.id() + " changed";
            }
            if ((a.health() > 0) != (b.health() > 0)) {
                return "engine " + b.id() + (b.health() > 0 ? " back in service" : " out of service");
            }
        }
        for (Map.Entry<String, Map<String, Double>> g : after.networkRttMs().entrySet()) {
            Map<String, Double> row = before.networkRttMs().getOrDefault(g.getKey(), Map.of());
            for (Map.Entry<String, Double> c : g.getValue().entrySet()) {
                boolean cutNow = c.getValue() >= LinkEstimate.UNREACHABLE_MS;
                boolean cutBefore = row.getOrDefault(c.getKey(), 0.0) >= LinkEstimate.UNREACHABLE_MS;
                if (cutNow != cutBefore) {
                    return "link " + g.getKey() + " → " + c.getKey() + (cutNow ? " cut" : " restored");
                }
            }
        }
        return null;
    }

    /**
     * The first engine that {@code after} plans as a failing engine of last resort (a penalty below 1) and
     * {@code before} does not, or the other way round, or null: the gateways must learn at once whether its errors
     * are expected, since they eject it for them otherwise.
     */
    private static String lastResortChange(Snapshot before, Snapshot after) {
        for (Map.Entry<String, dev.sextant.snapshot.EngineState> e : after.engines().entrySet()) {
            dev.sextant.snapshot.EngineState was = before.engines().get(e.getKey());
            boolean now = e.getValue().penalty() < 1;
            if (now != (was != null && was.penalty() < 1)) {
                return "engine " + e.getKey() + (now ? " failing, planned as capacity of last resort: its errors expected"
                        : "'s errors no longer expected");
            }
            if (now && Math.abs(e.getValue().penalty() / was.penalty() - 1) > LAST_RESORT_SHARE_MOVED) {
                return String.format(Locale.ROOT, "engine %s, a last resort, now succeeds in %.0f%% of its attempts "
                        + "(planned at %.0f%%)", e.getKey(), 100 * e.getValue().penalty(), 100 * was.penalty());
            }
        }
        return null;
    }

    /**
     * How far the share of a last resort's attempts that succeed may move before the change is published at once: the
     * capacity it is counted at moves with it, and 10% is the accuracy the loop holds its capacity estimates to.
     */
    static final double LAST_RESORT_SHARE_MOVED = 0.1;

    @Override
    public synchronized Step lastStep() {
        return last;
    }

    @Override
    public synchronized Snapshot published() {
        return published;
    }

    @Override
    public synchronized Topology publishedFor() {
        return publishedFor;
    }

    @Override
    public synchronized void adopt(Snapshot snapshot) {
        Snapshot held = published != null ? published : restored;
        if (held != null && snapshot.version() <= held.version()) {
            throw new IllegalArgumentException("version: " + snapshot.version() + " (expected: above the held "
                    + held.version() + ")");
        }
        unrestrictedBehind = null;
        if (published != null) {
            published = snapshot;
        } else {
            restored = snapshot;
        }
    }
}
