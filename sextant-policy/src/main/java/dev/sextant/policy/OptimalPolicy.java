package dev.sextant.policy;

import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The optimizer of docs/design.md §3: minimizes expected end-to-end latency over all routings that place
 * or shed every request, keep engines within effective capacity and respect the hard constraints.
 * Solved per connected component of the source–group graph with {@link DualNewton}.
 */
final class OptimalPolicy implements RoutingPolicy {
    /** The fraction of its effective capacity an engine may be short of and still be reported full. */
    static final double NEAR_FULL = 1e-3;
    /** This policy's own memory of its last solve: what makes its next re-solve warm. */
    private final Instance.Memory instances = new Instance.Memory();

    @Override
    public String name() {
        return "optimal";
    }

    @Override
    public Snapshot solve(Topology topology, SolveOptions options) {
        return certify(topology, options).snapshot();
    }

    /** The certified solution, not yet a snapshot: see {@link CertifiedSolution}. */
    CertifiedSolution certify(Topology topology, SolveOptions options) {
        Instance inst = instances.of(topology, options);
        int groupCount = inst.groupCount;
        Group[] groups = new Group[groupCount];
        for (int h = 0; h < groupCount; h++) {
            EngineCost[] members = new EngineCost[inst.groupEngines[h].length];
            for (int i = 0; i < members.length; i++) {
                members[i] = inst.costs[inst.groupEngines[h][i]];
            }
            groups[h] = new Group(members);
        }
        double[] price = new double[groupCount];
        for (int h = 0; h < groupCount; h++) {
            price[h] = groups[h].priceFloor;
        }
        double[][] groupFlow = new double[inst.sourceCount][];
        double[] shed = new double[inst.sourceCount];
        double[][] engineLoads = new double[groupCount][];
        for (int h = 0; h < groupCount; h++) {
            engineLoads[h] = new double[groups[h].engines.length];
        }
        for (int k = 0; k < inst.sourceCount; k++) {
            groupFlow[k] = new double[inst.sourceGroups[k].length];
            if (inst.demand[k] > 0 && inst.sourceGroups[k].length == 0) {
                shed[k] = inst.demand[k];
            }
        }

        double objective = 0;
        double bound = 0;
        int iterations = 0;
        Snapshot warmFrom = options.warmFrom();
        // the previous snapshot's routes were walked when the instance was made; another snapshot's are walked here
        double[] routePrices = warmFrom == null ? null : routePrices(inst, warmFrom,
                warmFrom == options.previous() ? inst.previousRoute : inst.routesOf(warmFrom));
        for (int[][] comp : components(inst)) {
            int[] sources = comp[0];
            int[] compGroups = comp[1];
            int[] local = new int[groupCount];
            for (int i = 0; i < compGroups.length; i++) {
                local[compGroups[i]] = i;
            }
            double[] lambda = new double[sources.length];
            double[] shedCost = new double[sources.length];
            int[][] slotGroup = new int[sources.length][];
            double[][] slotRtt = new double[sources.length][];
            double[][] slotKept = new double[sources.length][];
            double scale = 0;
            for (int s = 0; s < sources.length; s++) {
                int k = sources[s];
                lambda[s] = inst.demand[k];
                shedCost[s] = inst.shedCost[k];
                slotGroup[s] = new int[inst.sourceGroups[k].length];
                double best = Double.POSITIVE_INFINITY;
                for (int a = 0; a < slotGroup[s].length; a++) {
                    slotGroup[s][a] = local[inst.sourceGroups[k][a]];
                    best = Math.min(best, inst.sourceRtt[k][a] + groups[inst.sourceGroups[k][a]].priceFloor);
                }
                slotRtt[s] = inst.sourceRtt[k].clone();
                slotKept[s] = inst.sourceKept[k].clone();
                scale += best / sources.length;
            }
            Group[] localGroups = new Group[compGroups.length];
            for (int i = 0; i < compGroups.length; i++) {
                localGroups[i] = groups[compGroups[i]];
            }
            double[] warm = warmFrom == null ? null : warmPrices(inst, compGroups, warmFrom, routePrices, shedCost);
            DualNewton.Solution sol = null;
            if (warm != null) {
                DualNewton solver = new DualNewton(lambda, shedCost, slotGroup, slotRtt, slotKept, inst.discount,
                        localGroups);
                sol = solver.solve(warm, 1e-4 * scale, options.gapTolerance());
                iterations += solver.iterations;
            }
            if (sol == null || gap(sol) > options.gapTolerance()) {
                // No previous snapshot, or its prices led the small-τ Newton steps astray (seen when the demand
                // change moves which classes shed): start again from the cold guess at a large τ.
                DualNewton solver = new DualNewton(lambda, shedCost, slotGroup, slotRtt, slotKept, inst.discount,
                        localGroups);
                DualNewton.Solution cold = solver.solve(coldPrices(lambda, shedCost, slotGroup, slotRtt, localGroups),
                        0.05 * scale, options.gapTolerance());
                iterations += solver.iterations;
                if (sol == null || gap(cold) < gap(sol)) {
                    sol = cold;
                }
            }
            objective += sol.objective();
            bound += sol.bound();
            for (int i = 0; i < compGroups.length; i++) {
                price[compGroups[i]] = sol.prices()[i];
                engineLoads[compGroups[i]] = sol.engineLoads()[i];
            }
            for (int s = 0; s < sources.length; s++) {
                groupFlow[sources[s]] = sol.flow()[s];
                shed[sources[s]] = sol.shed()[s];
            }
        }
        double shedTotal = 0;
        for (double v : shed) {
            shedTotal += v;
        }
        double cost = objective;
        double lower = bound;
        int steps = iterations;
        return new CertifiedSolution(cost, lower, steps, shedTotal,
                () -> assemble(inst, options, groups, price, groupFlow, shed, engineLoads, cost, lower, steps));
    }

    /**
     * A solution's duality gap, the larger of its two; infinite when it or a shed amount is not a number. A NaN compares
     * false with everything: a warm start that went astray (see {@link #warmPrices}) once certified a gap of 0 with
     * shed amounts of NaN, and was kept.
     */
    private static double gap(DualNewton.Solution sol) {
        double g = Math.max(sol.gap(), sol.fullGap());
        for (double v : sol.shed()) {
            if (Double.isNaN(v)) {
                return Double.POSITIVE_INFINITY;
            }
        }
        return Double.isNaN(g) ? Double.POSITIVE_INFINITY : g;
    }

    /** Groups ever touched by a source with demand, joined into components through shared sources. */
    private static List<int[][]> components(Instance inst) {
        int n = inst.groupCount;
        int[] parent = new int[n];
        for (int i = 0; i < n; i++) {
            parent[i] = i;
        }
        for (int k = 0; k < inst.sourceCount; k++) {
            int[] sg = inst.sourceGroups[k];
            if (inst.demand[k] <= 0 || sg.length == 0) {
                continue;
            }
            for (int a = 1; a < sg.length; a++) {
                int r1 = find(parent, sg[0]);
                int r2 = find(parent, sg[a]);
                if (r1 != r2) {
                    parent[Math.max(r1, r2)] = Math.min(r1, r2);
                }
            }
        }
        // sources and groups bucketed by their component's root in one pass each (not one pass per root)
        List<List<Integer>> sourcesOf = new ArrayList<>(n);
        List<List<Integer>> groupsOf = new ArrayList<>(n);
        for (int h = 0; h < n; h++) {
            sourcesOf.add(null);
            groupsOf.add(null);
        }
        for (int k = 0; k < inst.sourceCount; k++) {
            if (inst.demand[k] > 0 && inst.sourceGroups[k].length > 0) {
                int root = find(parent, inst.sourceGroups[k][0]);
                if (sourcesOf.get(root) == null) {
                    sourcesOf.set(root, new ArrayList<>());
                }
                sourcesOf.get(root).add(k);
            }
        }
        for (int h = 0; h < n; h++) {
            int root = find(parent, h);
            if (groupsOf.get(root) == null) {
                groupsOf.set(root, new ArrayList<>());
            }
            groupsOf.get(root).add(h);
        }
        List<int[][]> out = new ArrayList<>();
        for (int root = 0; root < n; root++) {
            List<Integer> sources = sourcesOf.get(root);
            if (find(parent, root) != root || sources == null) {
                continue;
            }
            out.add(new int[][] {sources.stream().mapToInt(Integer::intValue).toArray(),
                groupsOf.get(root).stream().mapToInt(Integer::intValue).toArray()});
        }
        return out;
    }

    private static int find(int[] parent, int i) {
        while (parent[i] != i) {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        return i;
    }

    /**
     * A first guess from a greedy routing: sources, highest priority first, fill their cheapest groups
     * at idle (network + marginal latency at zero load) up to capacity and shed what fits nowhere. A
     * group left with room is priced at its marginal cost at that load; a full group that some source
     * using it had to shed beside is priced just under that source's shed cost, as it will be at the
     * optimum; any other full group at its marginal cost at capacity.
     */
    private static double[] coldPrices(double[] lambda, double[] shedCost, int[][] slotGroup, double[][] slotRtt,
                                       Group[] groups) {
        int n = groups.length;
        double[] room = new double[n];
        for (int g = 0; g < n; g++) {
            room[g] = groups[g].capacity;
        }
        Integer[] order = new Integer[lambda.length];
        for (int k = 0; k < order.length; k++) {
            order[k] = k;
        }
        java.util.Arrays.sort(order, (a, b) -> Double.compare(shedCost[b], shedCost[a]));
        double[] price = new double[n];
        java.util.Arrays.fill(price, Double.NEGATIVE_INFINITY);
        for (int k : order) {
            int[] sg = slotGroup[k];
            Integer[] slots = new Integer[sg.length];
            for (int a = 0; a < sg.length; a++) {
                slots[a] = a;
            }
            final int src = k;
            java.util.Arrays.sort(slots, java.util.Comparator.comparingDouble(
                    a -> slotRtt[src][a] + groups[sg[a]].priceFloor));
            double left = lambda[k];
            for (int a : slots) {
                double take = Math.min(left, room[sg[a]]);
                room[sg[a]] -= take;
                left -= take;
            }
            if (left > 1e-12 * lambda[k]) {
                for (int a = 0; a < sg.length; a++) {
                    price[sg[a]] = Math.max(price[sg[a]], shedCost[k] - slotRtt[k][a]);
                }
            }
        }
        double demand = 0;
        double capacity = 0;
        for (double l : lambda) {
            demand += l;
        }
        for (Group g : groups) {
            capacity += g.capacity;
        }
        boolean shedding = false;
        for (double v : price) {
            shedding |= v > Double.NEGATIVE_INFINITY;
        }
        for (int g = 0; g < n; g++) {
            double[] scratch = new double[groups[g].engines.length];
            if (!shedding) {
                // everything fits: every group as loaded as the component is on average is closer to
                // the optimum than the greedy routing's full-or-empty groups
                price[g] = groups[g].split(demand / capacity * groups[g].capacity, scratch);
                continue;
            }
            double load = groups[g].capacity - room[g];
            double marginal = groups[g].split(load, scratch);
            price[g] = room[g] > 1e-12 * groups[g].capacity ? marginal : Math.max(price[g], marginal);
        }
        return price;
    }

    /**
     * Each group's price as the routes of {@code previous} (the snapshot the solve starts from) imply it, NaN for a
     * group none of them used. A route's
     * price is its cheapest option's cost, round trip plus group price, so its price less the round trip to a
     * group it used is at most that group's price, and equal to it for the group that was its cheapest: the
     * largest over the routes that used a group is its price, shadow price of capacity included, however far
     * from full the previous solution left it. Round trips are the previous snapshot's where they changed.
     */
    static double[] routePrices(Instance inst, Snapshot previous) {
        return routePrices(inst, previous, inst.routesOf(previous));
    }

    /** As {@link #routePrices(Instance, Snapshot)}, with {@code previous}'s routes by source already found. */
    private static double[] routePrices(Instance inst, Snapshot previous, Route[] routes) {
        double[] price = new double[inst.groupCount];
        Arrays.fill(price, Double.NaN);
        // per gateway cluster, the round trips the previous prices were paid over; null while they are the current ones
        List<Map<String, Double>> previousRtt = new ArrayList<>();
        for (var g : inst.topology.gatewayClusters()) {
            Map<String, Double> before = previous.networkRttMs().getOrDefault(g.id(), Map.of());
            previousRtt.add(before.equals(inst.topology.networkRttMs().get(g.id())) ? null : before);
        }
        inst.forEachUse(routes, (k, a, h, w, ofGroup) -> {
            Route r = routes[k];
            if (!(w > 0) || r.shedFraction() > 0 || !Double.isFinite(r.priceMs())) {
                return;
            }
            Map<String, Double> rtt = previousRtt.get(inst.sourceGatewayIndex[k]);
            double ms = rtt == null ? inst.sourceRtt[k][a] : rtt.getOrDefault(inst.groupCluster[h], Double.NaN);
            double v = r.priceMs() - ms;
            if (!Double.isNaN(v) && !(v <= price[h])) { // the larger, or the first where price[h] is still NaN
                price[h] = v;
            }
        });
        return price;
    }

    /**
     * Prices from the snapshot the solve starts from ({@link SolveOptions#warmFrom}), or null: each group's as its
     * routes imply it ({@link #routePrices}), else the largest marginal cost plus shadow price among its loaded engines,
     * else its price floor.
     */
    private static double[] warmPrices(Instance inst, int[] compGroups, Snapshot previous, double[] routePrices,
                                       double[] shedCost) {
        double maxShed = 0;
        for (double c : shedCost) {
            maxShed = Math.max(maxShed, c);
        }
        double[] p = new double[compGroups.length];
        for (int i = 0; i < compGroups.length; i++) {
            double floor = inst.groupPriceFloor(compGroups[i]);
            // no price the sources would pay is above what shedding costs them (a group whose floor is above it is
            // used by none): a previous snapshot's price above it is no guide. One priced in the trillions of ms
            // (outputs of 200,000 tokens on an engine read as slow), for a fleet whose costs were now a millionth of
            // that, once needed more Newton steps than a solve takes to come down, at a τ below the prices' last
            // place: they ran to -6e12 ms, every flow to zero and the shed fractions to NaN
            double ceiling = Math.max(maxShed, floor);
            double fromRoutes = routePrices[compGroups[i]];
            if (!Double.isNaN(fromRoutes)) {
                p[i] = Math.min(ceiling, Math.max(fromRoutes, floor));
                continue;
            }
            double best = Double.NaN;
            for (int j : inst.groupEngines[compGroups[i]]) {
                EngineState e = previous.engines().get(inst.engines.get(j).id());
                if (e != null && e.loadRps() > 0) {
                    double v = e.marginalCostMs() + e.shadowPriceMs();
                    best = Double.isNaN(best) ? v : Math.max(best, v);
                }
            }
            if (Double.isNaN(best)) {
                best = inst.groupPriceFloor(compGroups[i]);
            }
            if (!Double.isFinite(best)) {
                return null;
            }
            p[i] = Math.min(ceiling, best);
        }
        return p;
    }

    /**
     * Gives the higher priorities the engine groups that answer first, where the objective does not mind which class
     * goes where: classes of one gateway cluster, one model and the same allowed groups cost the same per request on
     * each group (the same round trip, the same engines), so the objective depends only on what they send to each
     * group together, and the solve, which smooths by entropy, splits every such class alike. Their flows are pooled
     * per group and handed out again, highest priority first, from the nearest group (the lowest round trip, then the
     * lowest TTFT at its planned load: round trips are what a request crossing a region pays, and they do not wander
     * with the estimates, so the order does not flip from solve to solve); one priority's classes share each group in
     * proportion to what they send. Every group's load, every class's shed and the mean latency stay as solved; a
     * premium class no longer sends its share of requests across a region when a batch class of the same gateway can
     * take them instead. Returns new flows; the solved ones are left as they are.
     */
    static double[][] byPriority(Instance inst, Group[] groups, double[][] engineLoads, double[][] solved) {
        double[][] groupFlow = solved.clone();
        Map<String, List<Integer>> alike = new HashMap<>();
        for (int k = 0; k < inst.sourceCount; k++) {
            if (inst.sourceGroups[k].length > 1) {
                alike.computeIfAbsent(inst.sourceGatewayIndex[k] + "|" + inst.sourceClass[k].model() + "|"
                        + Arrays.toString(inst.sourceGroups[k]), x -> new ArrayList<>()).add(k);
            }
        }
        for (List<Integer> set : alike.values()) {
            if (set.stream().map(k -> inst.sourceClass[k].priority()).distinct().count() < 2) {
                continue;
            }
            for (int k : set) {
                groupFlow[k] = solved[k].clone();
            }
            int k0 = set.get(0);
            int[] sg = inst.sourceGroups[k0];
            double[] pooled = new double[sg.length];
            for (int k : set) {
                for (int a = 0; a < sg.length; a++) {
                    pooled[a] += groupFlow[k][a];
                }
            }
            Integer[] order = new Integer[sg.length];
            double[] first = new double[sg.length];
            for (int a = 0; a < sg.length; a++) {
                order[a] = a;
                first[a] = firstTokenMs(groups[sg[a]], engineLoads[sg[a]]);
            }
            double[] rtt = inst.sourceRtt[k0];
            Arrays.sort(order, Comparator.comparingDouble((Integer a) -> rtt[a]).thenComparingDouble(a -> first[a])
                    .thenComparingInt(a -> a));
            TreeMap<Integer, List<Integer>> levels = new TreeMap<>(Comparator.reverseOrder());
            for (int k : set) {
                levels.computeIfAbsent(inst.sourceClass[k].priority(), x -> new ArrayList<>()).add(k);
            }
            int next = 0;
            for (List<Integer> level : levels.values()) {
                double[] sent = new double[level.size()];
                double total = 0;
                for (int i = 0; i < sent.length; i++) {
                    for (double f : groupFlow[level.get(i)]) {
                        sent[i] += f;
                    }
                    total += sent[i];
                    Arrays.fill(groupFlow[level.get(i)], 0);
                }
                double left = total;
                while (left > 0 && next < order.length) {
                    int a = order[next];
                    double take = Math.min(left, pooled[a]);
                    for (int i = 0; i < sent.length; i++) {
                        groupFlow[level.get(i)][a] += take * sent[i] / total;
                    }
                    pooled[a] -= take;
                    left -= take;
                    if (pooled[a] <= 1e-12 * Math.max(1, take)) {
                        next++;
                    }
                }
                // each class keeps what it sends to the last place of its own flow, not of the pool's: beside a class
                // a billion times larger, the pool's rounding (left over, or a group's last 1e-12) is all of a tiny
                // one's share
                for (int i = 0; i < sent.length; i++) {
                    double[] f = groupFlow[level.get(i)];
                    double got = 0;
                    for (double x : f) {
                        got += x;
                    }
                    if (got > 0 && got != sent[i]) {
                        for (int a = 0; a < f.length; a++) {
                            f[a] *= sent[i] / got;
                        }
                    }
                }
            }
        }
        return groupFlow;
    }

    /** A group's TTFT at its planned load: its engines' mean, weighted by their loads (at no load, the idle TTFT). */
    private static double firstTokenMs(Group g, double[] loads) {
        double sum = 0;
        double weight = 0;
        for (int i = 0; i < g.engines.length; i++) {
            EngineCost c = g.engines[i];
            if (!(c.capacity > 0)) {
                continue;
            }
            double x = Math.max(loads[i], 1e-9);
            sum += x * c.profile.ttftMs(Math.min(EngineCost.MAX_UTILIZATION, x / c.capacity));
            weight += x;
        }
        return weight > 0 ? sum / weight : Double.POSITIVE_INFINITY;
    }

    private static Snapshot assemble(Instance inst, SolveOptions options, Group[] groups, double[] price,
                                     double[][] groupFlow, double[] shed, double[][] engineLoads, double objective,
                                     double bound, int iterations) {
        int n = inst.engines.size();
        double[] groupLoad = new double[inst.groupCount];
        double[] shadow = new double[n];
        for (int h = 0; h < inst.groupCount; h++) {
            for (int i = 0; i < inst.groupEngines[h].length; i++) {
                int j = inst.groupEngines[h][i];
                double x = engineLoads[h][i];
                groupLoad[h] += x;
                EngineCost c = inst.costs[j];
                // the smoothed solve brings a full engine to within a hair of its capacity, not onto it: an engine
                // within a thousandth of full whose group is priced above its marginal cost at its load has that
                // difference as the price of its capacity, so that marginal cost plus shadow price is its group's
                // price, as the explanation and the certificate read it
                if (x >= c.effectiveCapacity * (1 - NEAR_FULL)) {
                    shadow[j] = Math.max(0, price[h] - c.marginal(x));
                }
            }
        }
        // each engine's share of its group's load: the same for every source that uses the group
        double[][] share = new double[inst.groupCount][];
        for (int h = 0; h < inst.groupCount; h++) {
            share[h] = new double[inst.groupEngines[h].length];
            for (int i = 0; i < share[h].length; i++) {
                int j = inst.groupEngines[h][i];
                share[h][i] = groupLoad[h] > 0 ? engineLoads[h][i] / groupLoad[h]
                        : inst.costs[j].effectiveCapacity / groups[h].capacity;
            }
        }
        double[][] flow = byPriority(inst, groups, engineLoads, groupFlow);
        double[] shedFraction = new double[inst.sourceCount];
        double[] sourcePrice = new double[inst.sourceCount];
        int[] bestSlot = new int[inst.sourceCount];
        for (int k = 0; k < inst.sourceCount; k++) {
            int[] sg = inst.sourceGroups[k];
            double best = inst.shedCost[k];
            bestSlot[k] = -1;
            for (int a = 0; a < sg.length; a++) {
                double c = inst.sourceRtt[k][a] + price[sg[a]];
                if (c < best) {
                    best = c;
                    bestSlot[k] = a;
                }
            }
            double lambda = inst.demand[k];
            if (lambda > 0) {
                shedFraction[k] = Math.min(1, shed[k] / lambda);
                sourcePrice[k] = shed[k] > 0 ? inst.shedCost[k] : best;
            } else {
                shedFraction[k] = sg.length == 0 ? 1 : 0;
                sourcePrice[k] = best;
            }
        }
        // a source's fraction of each group; with no demand expected, a request that comes anyway goes where it
        // costs least
        double[][] fraction = new double[inst.sourceCount][];
        for (int k = 0; k < inst.sourceCount; k++) {
            int[] sg = inst.sourceGroups[k];
            double lambda = inst.demand[k];
            fraction[k] = new double[sg.length];
            for (int a = 0; a < sg.length; a++) {
                fraction[k][a] = lambda > 0 ? Math.min(1, Math.max(0, flow[k][a] / lambda))
                        : a == bestSlot[k] ? 1 : 0;
            }
        }
        double gap = CertifiedSolution.gap(objective, bound);
        return Assembler.assembleGrouped(inst, "optimal", options, fraction, share, shedFraction, sourcePrice, shadow,
                bound, gap, iterations);
    }
}
