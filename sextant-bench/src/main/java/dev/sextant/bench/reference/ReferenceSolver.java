package dev.sextant.bench.reference;

import dev.sextant.topology.Engine;
import dev.sextant.topology.LatencyProfile;
import dev.sextant.topology.MeasuredProfile;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.ojalgo.optimisation.Expression;
import org.ojalgo.optimisation.ExpressionsBasedModel;
import org.ojalgo.optimisation.Optimisation;
import org.ojalgo.optimisation.Variable;

/**
 * An independent solver of the routing problem of docs/design.md §3 (without the affinity term), built on
 * ojAlgo's linear programming, to check the optimizer against and to measure it against. It shares no
 * code with the optimizer: only the topology records and the latency profiles' own methods.
 *
 * <p>Formulation. One flow column f_kj ≥ 0 per demanded (gateway cluster, class) k and engine j that may
 * serve it (model served, region allowed by residency, a round trip known, effective capacity &gt; 0),
 * with cost L_kj, the round trip in ms; one shed column s_k ≥ 0 with cost P_k
 * ({@link #shedPenaltyMs(Topology, Map, TrafficClass)}); one demand row Σ_j f_kj + s_k = λ_k per k; one load row
 * Σ_k f_kj − Σ_s z_js = 0 per engine. The engine cost φ_j(x) = x·T_j(x),
 * T_j(x) = TTFT(ρ) + (n̄_j − 1)·TBT(ρ), ρ = x / capacity_rps, is replaced by its piecewise-linear
 * interpolation ψ_j on breakpoints 0 = b_0 &lt; … &lt; b_N = c_j, c_j the effective capacity
 * (capacity_rps × health × penalty × (1 − headroom)): segment columns 0 ≤ z_js ≤ b_s − b_{s−1} with cost
 * the chord's slope. φ_j is convex, so the slopes increase and an optimal LP solution fills each engine's
 * segments in order: Σ_s slope_s·z_js = ψ_j(x_j). The capacity constraint x_j ≤ c_j is the sum of the
 * segments' upper bounds.
 *
 * <p>Breakpoints. The interpolation error of a segment [a, b] is at most (b − a)²/8 · max φ'' on it, and
 * φ''(x) = (2·T'(ρ) + ρ·T''(ρ)) / capacity_rps grows towards capacity, so uniform breakpoints waste most
 * of the segments where φ is nearly straight. The breakpoints equidistribute ∫ √φ'' (the asymptotically
 * optimal grading for linear interpolation, which makes every segment's error about equal); a measured
 * profile's hull vertices are breakpoints too, so that no segment straddles a kink. The a-priori error
 * bound ε_j = max_s (b_s − b_{s−1})²/8 · max(φ''(b_{s−1}), φ''(b_s)) uses that φ'' is monotone within a
 * segment (true for the parametric profile; a measured profile has φ'' constant between its vertices).
 * With N = 400 segments, ε/latency cost is about 1e-6 on the fleets of {@code Fleets}.
 *
 * <p>Expected output tokens n̄_j of an engine that serves several models: the largest among its
 * models' {@code output_tokens} (the same rule as the optimizer's; one latency curve per engine).
 *
 * <p>Aggregation ({@link #aggregated()}): engines of one engine cluster serving one set of models are
 * interchangeable for every class (same round trips, same allowed sets), so flow columns can go to such
 * a group instead of to each engine, with one load row per group summing all its engines' segments; and
 * engines of a group with equal capacity, health, penalty and profile share one block of segments, each
 * segment's bound scaled by their number. Both are exact reformulations of the same LP (the second by
 * convexity and symmetry); per-engine flows are recovered by splitting a group's flows in proportion to
 * engine loads. Without aggregation the LP is exactly the textbook formulation above.
 */
public final class ReferenceSolver {

    /** Default segments per engine cost: ε/latency cost ≈ 1e-6 on the test fleets. */
    public static final int DEFAULT_SEGMENTS = 400;

    /** Least base of the shed penalty, ms per request. */
    public static final double SHED_PENALTY_BASE_MS = 1e7;

    private static final int INTEGRATION_POINTS = 2048;

    private final int segments;
    private final boolean aggregate;

    private ReferenceSolver(int segments, boolean aggregate) {
        if (segments < 1) {
            throw new IllegalArgumentException("segments: " + segments + " (expected: >= 1)");
        }
        this.segments = segments;
        this.aggregate = aggregate;
    }

    /** A solver with {@link #DEFAULT_SEGMENTS} segments per engine, no aggregation. */
    public static ReferenceSolver create() {
        return new ReferenceSolver(DEFAULT_SEGMENTS, false);
    }

    /** A solver with {@code segments} (≥ 1) segments per engine cost, no aggregation. */
    public static ReferenceSolver withSegments(int segments) {
        return new ReferenceSolver(segments, false);
    }

    /** This solver with interchangeable engines grouped (exact, smaller LP); see the class comment. */
    public ReferenceSolver aggregated() {
        return new ReferenceSolver(segments, true);
    }

    /** Segments per engine cost. */
    public int segments() {
        return segments;
    }

    /**
     * The shed penalty of a class, ms per request shed, without outlier penalties; see
     * {@link #shedPenaltyMs(Topology, Map, TrafficClass)}.
     */
    public static double shedPenaltyMs(Topology topology, TrafficClass c) {
        return shedPenaltyMs(topology, Map.of(), c);
    }

    /**
     * The shed penalty of a class, ms per request shed (the optimizer's rule, so that both solve the
     * same problem): {@code P_k = B × (1 + 0.01 × number of distinct priority levels among the
     * topology's classes below the class's priority)} with {@code B = max(1e7, 100 × the largest marginal
     * engine cost φ'_j(c_j) at effective capacity)}. B makes shedding happen only when the allowed engines
     * are full, and the step 0.01·B, at least the largest marginal latency, makes a lower priority shed
     * first.
     *
     * @param penalties engine id → outlier penalty factor (they change effective capacities)
     */
    public static double shedPenaltyMs(Topology topology, Map<String, Double> penalties, TrafficClass c) {
        return penaltyBaseMs(topology, penalties) * (1 + 0.01 * levelsBelow(topology, c));
    }

    private static double penaltyBaseMs(Topology topology, Map<String, Double> penalties) {
        double maxMarginal = 0;
        for (Engine e : topology.engines()) {
            double cap = e.effectiveCapacityRps(topology.headroom(), penalties.getOrDefault(e.id(), 1.0));
            if (cap > 0) {
                double rho = cap / e.capacityRps();
                int n = outputTokens(topology, e);
                maxMarginal = Math.max(maxMarginal,
                        e.profile().latencyMs(rho, n) + rho * e.profile().latencySlope(rho, n));
            }
        }
        return Math.max(SHED_PENALTY_BASE_MS, 100 * maxMarginal);
    }

    private static int levelsBelow(Topology topology, TrafficClass c) {
        TreeSet<Integer> below = new TreeSet<>();
        for (TrafficClass other : topology.classes()) {
            if (other.priority() < c.priority()) {
                below.add(other.priority());
            }
        }
        return below.size();
    }

    /**
     * Expected output tokens n̄ of an engine: the largest {@code output_tokens} among the models it
     * serves.
     */
    public static int outputTokens(Topology topology, Engine e) {
        int n = 1;
        for (String m : e.models()) {
            n = Math.max(n, topology.model(m).outputTokens());
        }
        return n;
    }

    /** Exact engine cost φ(x) = x·T(x) in ms·req/s; infinite at or beyond capacity_rps for the parametric form. */
    public static double engineCost(Engine e, int outputTokens, double loadRps) {
        if (loadRps <= 0) {
            return 0;
        }
        return loadRps * e.profile().latencyMs(loadRps / e.capacityRps(), outputTokens);
    }

    /** Solves the topology with no outlier penalties. */
    public ReferenceSolution solve(Topology topology) {
        return solve(topology, Map.of());
    }

    /**
     * Solves the topology.
     *
     * @param penalties engine id → outlier penalty factor in (0, 1] on its effective capacity (missing: 1)
     */
    public ReferenceSolution solve(Topology topology, Map<String, Double> penalties) {
        List<Engine> engines = topology.engines();
        int engineCount = engines.size();
        double[] cap = new double[engineCount];
        int[] tokens = new int[engineCount];
        for (int j = 0; j < engineCount; j++) {
            Engine e = engines.get(j);
            cap[j] = e.effectiveCapacityRps(topology.headroom(), penalties.getOrDefault(e.id(), 1.0));
            tokens[j] = outputTokens(topology, e);
        }

        // nodes: what flow columns point at (one engine, or a group of interchangeable engines)
        List<List<Integer>> nodes = new ArrayList<>();
        Map<String, Integer> nodeOfKey = new LinkedHashMap<>();
        int[] nodeOf = new int[engineCount];
        for (int j = 0; j < engineCount; j++) {
            nodeOf[j] = -1;
            if (!(cap[j] > 0)) {
                continue;
            }
            Engine e = engines.get(j);
            String key = aggregate ? e.cluster() + "|" + new TreeSet<>(e.models()) : e.id();
            Integer node = nodeOfKey.get(key);
            if (node == null) {
                node = nodes.size();
                nodeOfKey.put(key, node);
                nodes.add(new ArrayList<>());
            }
            nodes.get(node).add(j);
            nodeOf[j] = node;
        }

        ExpressionsBasedModel lp = new ExpressionsBasedModel();
        List<Variable> columns = new ArrayList<>();

        // engine cost blocks: identical engines of a node share one block when aggregating
        List<List<Block>> blocksOfNode = new ArrayList<>();
        double errorBound = 0;
        List<Block> blocks = new ArrayList<>();
        for (List<Integer> members : nodes) {
            List<Block> nodeBlocks = new ArrayList<>();
            for (int j : members) {
                Block same = null;
                if (aggregate) {
                    for (Block b : nodeBlocks) {
                        Engine r = engines.get(b.members.get(0));
                        Engine e = engines.get(j);
                        if (r.capacityRps() == e.capacityRps() && cap[b.members.get(0)] == cap[j]
                                && r.profile().equals(e.profile()) && tokens[b.members.get(0)] == tokens[j]) {
                            same = b;
                            break;
                        }
                    }
                }
                if (same == null) {
                    same = new Block(engines.get(j), tokens[j], cap[j], segments);
                    nodeBlocks.add(same);
                    blocks.add(same);
                }
                same.members.add(j);
            }
            blocksOfNode.add(nodeBlocks);
        }
        Expression[] loadRow = new Expression[nodes.size()];
        for (int n = 0; n < nodes.size(); n++) {
            loadRow[n] = lp.addExpression("load" + n).level(0);
            for (Block b : blocksOfNode.get(n)) {
                int m = b.members.size();
                b.firstColumn = columns.size();
                for (int s = 0; s < b.slope.length; s++) {
                    Variable z = lp.addVariable("z" + columns.size()).lower(0).upper(m * b.width[s]).weight(b.slope[s]);
                    columns.add(z);
                    loadRow[n].set(z, -1);
                }
                errorBound += m * b.errorBound;
            }
        }

        // demand rows, flow and shed columns
        double penaltyBase = penaltyBaseMs(topology, penalties);
        List<Demand> demands = new ArrayList<>();
        for (Map.Entry<String, Map<String, Double>> row : topology.demandRps().entrySet()) {
            String gateway = row.getKey();
            Map<String, Double> rtt = topology.networkRttMs().getOrDefault(gateway, Map.of());
            for (Map.Entry<String, Double> cell : row.getValue().entrySet()) {
                double lambda = cell.getValue();
                if (!(lambda > 0)) {
                    continue;
                }
                TrafficClass c = topology.trafficClass(cell.getKey());
                Demand d = new Demand(gateway, c.id(), lambda);
                Expression dr = lp.addExpression("demand" + demands.size()).level(lambda);
                d.shedColumn = columns.size();
                Variable shed = lp.addVariable("s" + columns.size()).lower(0)
                        .weight(penaltyBase * (1 + 0.01 * levelsBelow(topology, c)));
                columns.add(shed);
                dr.set(shed, 1);
                boolean[] seen = new boolean[nodes.size()];
                for (int j = 0; j < engineCount; j++) {
                    Engine e = engines.get(j);
                    int node = nodeOf[j];
                    if (node < 0 || seen[node] || !topology.allowed(c, e) || !rtt.containsKey(e.cluster())) {
                        continue;
                    }
                    seen[node] = true;
                    double ms = rtt.get(e.cluster());
                    Variable f = lp.addVariable("f" + columns.size()).lower(0).weight(ms);
                    d.nodes.add(node);
                    d.rttMs.add(ms);
                    d.columns.add(columns.size());
                    columns.add(f);
                    dr.set(f, 1);
                    loadRow[node].set(f, 1);
                }
                demands.add(d);
            }
        }

        Optimisation.Result result = lp.minimise();
        double[] value = new double[columns.size()];
        for (int i = 0; i < value.length; i++) {
            value[i] = Math.max(0, result.doubleValue(i));
        }

        // engine loads: a block's segments split evenly over its identical members
        double[] load = new double[engineCount];
        double pwlEngineCost = 0;
        for (Block b : blocks) {
            double sum = 0;
            double cost = 0;
            for (int s = 0; s < b.slope.length; s++) {
                sum += value[b.firstColumn + s];
                cost += b.slope[s] * value[b.firstColumn + s];
            }
            pwlEngineCost += cost;
            for (int j : b.members) {
                load[j] = Math.min(cap[j], sum / b.members.size());
            }
        }
        double[] nodeLoad = new double[nodes.size()];
        for (int n = 0; n < nodes.size(); n++) {
            for (int j : nodes.get(n)) {
                nodeLoad[n] += load[j];
            }
        }

        double networkCost = 0;
        double penaltyCost = 0;
        double totalShed = 0;
        Map<String, Map<String, Double>> shedRps = new TreeMap<>();
        Map<String, Map<String, Map<String, Double>>> flowRps = new TreeMap<>();
        for (Demand d : demands) {
            double shed = Math.min(d.lambda, value[d.shedColumn]);
            totalShed += shed;
            penaltyCost += shed * penaltyBase * (1 + 0.01 * levelsBelow(topology, topology.trafficClass(d.classId)));
            shedRps.computeIfAbsent(d.gateway, g -> new TreeMap<>()).put(d.classId, shed);
            Map<String, Double> flows = new TreeMap<>();
            for (int i = 0; i < d.columns.size(); i++) {
                double f = value[d.columns.get(i)];
                if (f <= 0) {
                    continue;
                }
                networkCost += f * d.rttMs.get(i);
                int node = d.nodes.get(i);
                for (int j : nodes.get(node)) {
                    double share = nodeLoad[node] > 0 ? f * load[j] / nodeLoad[node] : 0;
                    if (share > 0) {
                        flows.merge(engines.get(j).id(), share, Double::sum);
                    }
                }
            }
            flowRps.computeIfAbsent(d.gateway, g -> new TreeMap<>()).put(d.classId, flows);
        }

        double engineCost = 0;
        Map<String, Double> engineLoad = new TreeMap<>();
        for (int j = 0; j < engineCount; j++) {
            engineCost += engineCost(engines.get(j), tokens[j], load[j]);
            engineLoad.put(engines.get(j).id(), load[j]);
        }
        return new ReferenceSolution(result.getState().name(), result.getValue(), networkCost + engineCost,
                networkCost + pwlEngineCost, penaltyCost, errorBound, totalShed, shedRps, engineLoad, flowRps,
                columns.size(), lp.countExpressions(), segments, aggregate);
    }

    /** One demanded (gateway cluster, class) and its columns. */
    private static final class Demand {
        final String gateway;
        final String classId;
        final double lambda;
        int shedColumn;
        final List<Integer> nodes = new ArrayList<>();
        final List<Double> rttMs = new ArrayList<>();
        final List<Integer> columns = new ArrayList<>();

        Demand(String gateway, String classId, double lambda) {
            this.gateway = gateway;
            this.classId = classId;
            this.lambda = lambda;
        }
    }

    /** The interpolated cost of one engine (or of identical engines, one copy's segments). */
    private static final class Block {
        final List<Integer> members = new ArrayList<>();
        final double[] width;
        final double[] slope;
        final double errorBound;
        int firstColumn;

        Block(Engine e, int tokens, double capacity, int segments) {
            double[] b = breakpoints(e, tokens, capacity, segments);
            int n = b.length - 1;
            width = new double[n];
            slope = new double[n];
            double bound = 0;
            double previousCost = 0;
            for (int s = 0; s < n; s++) {
                double cost = engineCost(e, tokens, b[s + 1]);
                width[s] = b[s + 1] - b[s];
                slope[s] = (cost - previousCost) / width[s];
                previousCost = cost;
                double curvature = Math.max(curvature(e, tokens, b[s]), curvature(e, tokens, b[s + 1]));
                bound = Math.max(bound, width[s] * width[s] / 8 * curvature);
            }
            if (!Double.isFinite(previousCost)) {
                throw new IllegalArgumentException("engine " + e.id() + ": latency infinite at its effective capacity "
                        + capacity + " req/s (expected: headroom or health below 1 for an unbounded profile)");
            }
            errorBound = bound;
        }
    }

    /** φ''(x) = (2·T'(ρ) + ρ·T''(ρ)) / capacity_rps, ms per (req/s). */
    private static double curvature(Engine e, int tokens, double x) {
        LatencyProfile p = e.profile();
        double rho = x / e.capacityRps();
        return (2 * p.latencySlope(rho, tokens) + rho * p.latencyCurvature(rho, tokens)) / e.capacityRps();
    }

    /**
     * Breakpoints on [0, capacity]: a measured profile's hull vertices, then {@code segments} segments in
     * all, spread so that ∫ √φ'' is the same on each (within each interval between vertices).
     */
    private static double[] breakpoints(Engine e, int tokens, double capacity, int segments) {
        TreeSet<Double> fixed = new TreeSet<>();
        fixed.add(0.0);
        fixed.add(capacity);
        if (e.profile() instanceof MeasuredProfile m) {
            for (double[][] hull : new double[][][] {m.ttftHull(), m.tbtHull()}) {
                for (double[] v : hull) {
                    double x = v[0] * e.capacityRps();
                    if (x > 0 && x < capacity) {
                        fixed.add(x);
                    }
                }
            }
        }
        Double[] ends = fixed.toArray(new Double[0]);
        int intervals = ends.length - 1;
        double[][] cumulative = new double[intervals][];
        double total = 0;
        for (int i = 0; i < intervals; i++) {
            cumulative[i] = rootCurvatureIntegral(e, tokens, ends[i], ends[i + 1]);
            total += cumulative[i][INTEGRATION_POINTS];
        }
        List<Double> out = new ArrayList<>();
        out.add(0.0);
        int left = Math.max(segments, intervals);
        for (int i = 0; i < intervals; i++) {
            double mass = cumulative[i][INTEGRATION_POINTS];
            int n = i == intervals - 1 ? left
                    : Math.max(1, Math.min(left - (intervals - 1 - i),
                            (int) Math.round(total > 0 ? segments * mass / total : (double) segments / intervals)));
            left -= n;
            double a = ends[i];
            double h = (ends[i + 1] - a) / INTEGRATION_POINTS;
            int cell = 0;
            for (int s = 1; s < n; s++) {
                if (mass > 0) {
                    double target = mass * s / n;
                    while (cumulative[i][cell + 1] < target) {
                        cell++;
                    }
                    double lo = cumulative[i][cell];
                    double hi = cumulative[i][cell + 1];
                    double t = hi > lo ? (target - lo) / (hi - lo) : 0;
                    out.add(a + (cell + t) * h);
                } else {
                    out.add(a + (ends[i + 1] - a) * s / n);
                }
            }
            out.add(ends[i + 1]);
        }
        double[] b = new double[out.size()];
        for (int i = 0; i < b.length; i++) {
            b[i] = out.get(i);
        }
        return b;
    }

    /** Cumulative trapezoid integral of √φ'' on a uniform grid of [a, b]. */
    private static double[] rootCurvatureIntegral(Engine e, int tokens, double a, double b) {
        double[] c = new double[INTEGRATION_POINTS + 1];
        double h = (b - a) / INTEGRATION_POINTS;
        // the midpoint keeps a measured profile's one-sided slopes inside the interval
        double previous = Math.sqrt(Math.max(0, curvature(e, tokens, a + 0.5 * h * 1e-9)));
        for (int i = 1; i <= INTEGRATION_POINTS; i++) {
            double x = i == INTEGRATION_POINTS ? b - h * 1e-9 : a + i * h;
            double v = Math.sqrt(Math.max(0, curvature(e, tokens, x)));
            c[i] = c[i - 1] + 0.5 * h * (previous + v);
            previous = v;
        }
        return c;
    }
}
