package dev.sextant.policy;

import dev.sextant.snapshot.EngineGroup;
import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Objective;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Engine;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Builds a snapshot from a policy's decision: per source, the weight of each allowed engine (the baseline
 * policies) or the fraction of each engine group with each group's engine shares (the optimal policy), and
 * the shed fraction. Loads, latencies, the mean latency and each route's allowed utilization (for its class's
 * retry budget) are computed here the same way for every policy, so policies compare on equal terms. Each slot
 * table is computed here too, from the previous snapshot's table for the same (gateway cluster, class) or group
 * when there is one, so that gateways need no history of their own and the keys that move are as few as the change
 * allows.
 */
final class Assembler {
    private Assembler() {
    }

    /**
     * A snapshot whose routes are weighted engine by engine (the baseline policies').
     *
     * @param weights      per source, per allowed engine (index into {@code inst.sourceEngines[k]}), fraction
     * @param shedFraction per source
     * @param price        per source, the class's marginal latency, ms (NaN when the policy has none)
     * @param shadow       per engine, capacity shadow price, ms (zeros when the policy has none)
     */
    static Snapshot assemble(Instance inst, String policy, SolveOptions options, double[][] weights,
                             double[] shedFraction, double[] price, double[] shadow, double lowerBound, double gap,
                             int iterations) {
        int n = inst.engines.size();
        // one pass over the (source, engine) pairs, a million on a large fleet: loads, the network part
        // of the latency cost and each route's positive weights; the engine part is Σ load × latency
        double[] load = new double[n];
        double routed = 0;
        double networkCost = 0;
        double shed = 0;
        Map<String, Double>[] routeWeights = newMaps(inst.sourceCount);
        int[] rank = new int[n];
        double[] value = new double[n];
        for (int k = 0; k < inst.sourceCount; k++) {
            int[] allowed = inst.sourceEngines[k];
            double[] given = weights[k];
            double demand = inst.demand[k];
            double[] rtt = inst.rttByCluster[inst.sourceGatewayIndex[k]];
            int positive = 0; // allowed engines come in id order, so ranks ascend
            for (int i = 0; i < allowed.length; i++) {
                double wi = Math.min(1, Math.max(0, given[i]));
                if (wi > 0) {
                    int j = allowed[i];
                    rank[positive] = inst.engineRank[j];
                    value[positive++] = wi;
                    double f = wi * demand;
                    if (f > 0) {
                        load[j] += f;
                        routed += f;
                        networkCost += f * rtt[inst.engineCluster[j]];
                    }
                }
            }
            routeWeights[k] = Route.weights(inst.engineIds, Arrays.copyOf(rank, positive),
                    Arrays.copyOf(value, positive));
            shed += shedFraction[k] * demand;
        }
        double[] allowedUtilization = allowedUtilizations(inst, load);
        Map<String, Map<String, Route>> routes = new LinkedHashMap<>();
        SlotTableBatch tables = new SlotTableBatch();
        for (int k = 0; k < inst.sourceCount; k++) {
            Map<String, Double> w = routeWeights[k];
            var c = inst.sourceClass[k];
            String gateway = inst.sourceGateway[k].id();
            Route before = options.previous() == null ? null : inst.previousRoute[k];
            routes.computeIfAbsent(gateway, g -> new LinkedHashMap<>())
                    .put(c.id(), new Route(c.model(), c.residency(), c.priority(), inst.demand[k], w, shedFraction[k],
                            price[k], slots(tables, before, w), Map.of(), allowedUtilization[k]));
        }
        return finish(inst, policy, options, load, routed, networkCost, shed, routes, Map.of(), shadow, lowerBound,
                gap, iterations);
    }

    /**
     * A snapshot whose routes are weighted over engine groups (the optimal policy's): a source's fraction of each
     * group it uses and, once per group, each engine's share of the group's load. A large fleet's routes use a few
     * groups each where they use hundreds of engines, so this touches the (source, group) pairs and the engines,
     * not the (source, engine) pairs; every route's and every group's slot table is rebalanced from the previous
     * snapshot's table of the same id.
     *
     * @param fraction per source, per allowed group (index into {@code inst.sourceGroups[k]}), fraction of the
     *                 source's requests, each in [0, 1]; 0 leaves the group out
     * @param share    per group, per engine (index into {@code inst.groupEngines[h]}), share of the group's load
     */
    static Snapshot assembleGrouped(Instance inst, String policy, SolveOptions options, double[][] fraction,
                                    double[][] share, double[] shedFraction, double[] price, double[] shadow,
                                    double lowerBound, double gap, int iterations) {
        int n = inst.engines.size();
        Snapshot previous = options.previous();
        SlotTableBatch tables = new SlotTableBatch();
        // the groups, each with its engines in id order and its slot table
        EngineGroup[] groups = new EngineGroup[inst.groupCount];
        Map<String, EngineGroup> byId = new TreeMap<>();
        int[] ranks = new int[n];
        double[] values = new double[n];
        long[] sorter = new long[n];
        double[] engineShare = new double[n];
        for (int h = 0; h < inst.groupCount; h++) {
            int[] members = inst.groupEngines[h];
            int count = 0;
            for (int i = 0; i < members.length; i++) {
                if (share[h][i] > 0) { // an engine the group's split leaves idle is not listed, as a weight of 0 is not
                    sorter[count++] = ((long) inst.engineRank[members[i]] << 32) | i;
                }
            }
            Arrays.sort(sorter, 0, count);
            for (int i = 0; i < count; i++) {
                int at = (int) sorter[i];
                ranks[i] = (int) (sorter[i] >>> 32);
                values[i] = Math.min(1, share[h][at]);
                engineShare[members[at]] = values[i];
            }
            Map<String, Double> shares = Route.weights(inst.engineIds, Arrays.copyOf(ranks, count),
                    Arrays.copyOf(values, count));
            EngineGroup before = previous == null ? null : previous.groups().get(inst.groupId[h]);
            String slots = null;
            if (before != null) {
                try {
                    slots = before.shares().equals(shares) ? before.slots()
                            : tables.rebalanceEncoded(before.slots(), before.shares(), shares);
                } catch (IllegalArgumentException e) {
                    // a previous snapshot with a bad table (hand-edited, or from another producer): start afresh
                }
            }
            groups[h] = new EngineGroup(shares, slots != null ? slots : tables.encodedOf(shares));
            byId.put(inst.groupId[h], groups[h]);
        }
        // per group, the position of its id among all groups' ids: a route lists its groups in that order
        Integer[] byName = new Integer[inst.groupCount];
        for (int h = 0; h < byName.length; h++) {
            byName[h] = h;
        }
        Arrays.sort(byName, (a, b) -> inst.groupId[a].compareTo(inst.groupId[b]));
        int[] nameRank = new int[inst.groupCount];
        for (int r = 0; r < byName.length; r++) {
            nameRank[byName[r]] = r;
        }

        // each group's flow, and from it each engine's load, before the routes: a route carries the utilization
        // of the engines its class may use. Summed source by source as below, so the loads are the same numbers.
        double[] groupFlow = new double[inst.groupCount];
        for (int k = 0; k < inst.sourceCount; k++) {
            int[] sg = inst.sourceGroups[k];
            for (int a = 0; a < sg.length; a++) {
                if (fraction[k][a] > 0) {
                    groupFlow[sg[a]] += fraction[k][a] * inst.demand[k];
                }
            }
        }
        double[] load = new double[n];
        for (int h = 0; h < inst.groupCount; h++) {
            int[] members = inst.groupEngines[h];
            for (int i = 0; i < members.length; i++) {
                load[members[i]] = groupFlow[h] * engineShare[members[i]];
            }
        }
        double[] allowedUtilization = allowedUtilizations(inst, load);

        double routed = 0;
        double networkCost = 0;
        double shed = 0;
        Map<String, Map<String, Route>> routes = new TreeMap<>();
        for (int k = 0; k < inst.sourceCount; k++) {
            int[] sg = inst.sourceGroups[k];
            double demand = inst.demand[k];
            double[] rtt = inst.sourceRtt[k];
            int count = 0;
            for (int a = 0; a < sg.length; a++) {
                if (fraction[k][a] > 0) {
                    sorter[count++] = ((long) nameRank[sg[a]] << 32) | a;
                }
            }
            Arrays.sort(sorter, 0, count);
            String[] ids = new String[count];
            double[] f = new double[count];
            EngineGroup[] used = new EngineGroup[count];
            for (int i = 0; i < count; i++) {
                int a = (int) sorter[i];
                int h = sg[a];
                ids[i] = inst.groupId[h];
                f[i] = fraction[k][a];
                used[i] = groups[h];
                double flow = f[i] * demand;
                routed += flow;
                networkCost += flow * rtt[a];
            }
            shed += shedFraction[k] * demand;
            var c = inst.sourceClass[k];
            String gateway = inst.sourceGateway[k].id();
            Route route;
            if (count == 0) {
                route = new Route(c.model(), c.residency(), c.priority(), demand, Map.of(), shedFraction[k], price[k],
                        "", Map.of(), allowedUtilization[k]);
            } else {
                Route before = previous == null ? null : inst.previousRoute[k];
                List<String> idList = Arrays.asList(ids);
                String slots = null;
                if (before != null && before.hasGroups() && !before.slots().isEmpty()) {
                    try {
                        slots = tables.rebalanceEncodedOnce(before.slots(), before.slotGroups(),
                                before.slotFractions(), idList, f);
                    } catch (IllegalArgumentException e) {
                        // as for a group's table above
                    }
                }
                route = Route.grouped(c.model(), c.residency(), c.priority(), demand, ids, f, used, shedFraction[k],
                        price[k], slots != null ? slots : SlotTableBatch.encodedOnce(idList, f), allowedUtilization[k]);
            }
            routes.computeIfAbsent(gateway, g -> new TreeMap<>()).put(c.id(), route);
        }
        // sorted, unmodifiable views from the start: the snapshot takes them as they are instead of copying
        routes.replaceAll((g, byClass) -> Collections.unmodifiableSortedMap((TreeMap<String, Route>) byClass));
        return finish(inst, policy, options, load, routed, networkCost, shed,
                Collections.unmodifiableSortedMap((TreeMap<String, Map<String, Route>>) routes),
                Collections.unmodifiableSortedMap((TreeMap<String, EngineGroup>) byId), shadow, lowerBound, gap,
                iterations);
    }

    /** The engines' states, the objective and the sealed snapshot, the same for every policy. */
    private static Snapshot finish(Instance inst, String policy, SolveOptions options, double[] load, double routed,
                                   double networkCost, double shed, Map<String, Map<String, Route>> routes,
                                   Map<String, EngineGroup> groups, double[] shadow, double lowerBound, double gap,
                                   int iterations) {
        int n = inst.engines.size();
        double[] latency = new double[n];
        double engineCost = 0;
        for (int j = 0; j < n; j++) {
            latency[j] = inst.costs[j].latency(load[j]);
            if (load[j] > 0) {
                engineCost += load[j] * latency[j];
            }
        }
        double latencyCost = networkCost + engineCost;
        Map<String, EngineState> engines = new TreeMap<>();
        double totalLoad = 0;
        double totalCapacity = 0;
        for (int j = 0; j < n; j++) {
            Engine e = inst.engines.get(j);
            EngineCost cost = inst.costs[j];
            double rho = load[j] / e.capacityRps();
            double effective = cost.effectiveCapacity;
            totalLoad += load[j];
            totalCapacity += effective;
            engines.put(e.id(), new EngineState(e.cluster(), inst.engineRegion[j], e.endpoint(), e.models(), load[j],
                    e.capacityRps(), effective, rho, latency[j], cost.marginal(load[j]), shadow[j],
                    inst.penalty[j], e.priorityScheduling(), e.maxNumSeqs() > 0 ? e.maxNumSeqs() : Double.NaN));
        }
        Map<String, Map<String, Double>> rtt = new TreeMap<>(inst.topology.networkRttMs());
        double mean = routed > 0 ? latencyCost / routed : 0;
        Objective objective = new Objective(mean, latencyCost, lowerBound, gap, shed, iterations);
        double utilization = totalCapacity > 0 ? totalLoad / totalCapacity : 0;
        return new Snapshot(options.version(), "", policy, utilization, inst.topology.retryBudget(), routes,
                Collections.unmodifiableSortedMap((TreeMap<String, EngineState>) engines), rtt, objective, groups)
                .sealed(options.version(), inst.hasher);
    }

    /**
     * Per source, the utilization of the engines its class may use from its gateway cluster, as {@code load} plans
     * them: Σ load / Σ effective capacity over its allowed engines (model served, region within the residency,
     * reachable) that have effective capacity, each engine's load counting every class sent there; 1 when none has
     * capacity, as nothing can serve a retry there. This is what the class's retry budget deposits r(u) at.
     *
     * <p>Sources of one model with the same allowed engine clusters share one array of allowed engines
     * ({@link Instance#sourceEngines}), and so one utilization: computed once per array, not per source (a large
     * fleet has thousands of sources over a few hundred engines each).
     */
    static double[] allowedUtilizations(Instance inst, double[] load) {
        double[] out = new double[inst.sourceCount];
        Map<int[], Double> byAllowed = new IdentityHashMap<>();
        for (int k = 0; k < inst.sourceCount; k++) {
            out[k] = byAllowed.computeIfAbsent(inst.sourceEngines[k], allowed -> {
                double sumLoad = 0;
                double sumCapacity = 0;
                for (int j : allowed) {
                    double capacity = inst.costs[j].effectiveCapacity;
                    if (capacity > 0) {
                        sumLoad += load[j];
                        sumCapacity += capacity;
                    }
                }
                return sumCapacity > 0 ? sumLoad / sumCapacity : 1.0;
            });
        }
        return out;
    }

    /**
     * The encoded slot table for positive weights {@code w} (sorted by engine id): rebalanced from the
     * previous route's table when it has a valid one, else built from the weights alone; empty when
     * {@code w} is. A pure function of its arguments, so equal inputs give equal snapshots.
     */
    static String slots(Route before, Map<String, Double> w) {
        return slots(new SlotTableBatch(), before, w);
    }

    private static String slots(SlotTableBatch tables, Route before, Map<String, Double> w) {
        if (w.isEmpty()) {
            return "";
        }
        if (before != null && !before.slots().isEmpty()) {
            try {
                // on runs of slots, not slots: the same text as decoding, rebalancing and encoding
                String rebalanced = tables.rebalanceEncoded(before.slots(), before.weights(), w);
                return before.weights().equals(w) ? before.slots() : rebalanced;
            } catch (IllegalArgumentException e) {
                // A previous snapshot with a bad table (hand-edited, or from another producer): start afresh.
            }
        }
        return tables.encodedOf(w);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Double>[] newMaps(int size) {
        return (Map<String, Double>[]) new Map[size];
    }
}
