package dev.sextant.policy;

import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Objective;
import dev.sextant.snapshot.RetryBudget;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.SlotTable;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Engine;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Builds a snapshot from a policy's decision: per source, the weight of each allowed engine and the
 * shed fraction. Loads, latencies and the mean latency are computed here the same way for every
 * policy, so policies compare on equal terms. Each route's slot table is computed here too, from the
 * previous snapshot's table for the same (gateway cluster, class) when there is one, so that gateways
 * need no history of their own and the keys that move are as few as the weight change allows.
 */
final class Assembler {
    private Assembler() {
    }

    /**
     * @param weights      per source, per allowed engine (index into {@code inst.sourceEngines[k]}), fraction
     * @param shedFraction per source
     * @param price        per source, the class's marginal latency, ms (NaN when the policy has none)
     * @param shadow       per engine, capacity shadow price, ms (zeros when the policy has none)
     */
    static Snapshot assemble(Instance inst, String policy, SolveOptions options, double[][] weights,
                             double[] shedFraction, double[] price, double[] shadow, double lowerBound, double gap,
                             int iterations) {
        int n = inst.engines.size();
        double[] load = new double[n];
        for (int k = 0; k < inst.sourceCount; k++) {
            int[] allowed = inst.sourceEngines[k];
            double[] w = weights[k];
            for (int i = 0; i < allowed.length; i++) {
                w[i] = Math.min(1, Math.max(0, w[i]));
                load[allowed[i]] += w[i] * inst.demand[k];
            }
        }
        double[] latency = new double[n];
        for (int j = 0; j < n; j++) {
            latency[j] = inst.costs[j].latency(load[j]);
        }
        double routed = 0;
        double latencyCost = 0;
        double shed = 0;
        Map<String, Map<String, Route>> routes = new LinkedHashMap<>();
        SlotTable.Batch tables = new SlotTable.Batch();
        int[] rank = new int[n];
        double[] value = new double[n];
        String[] id = new String[n];
        for (int k = 0; k < inst.sourceCount; k++) {
            int[] allowed = inst.sourceEngines[k];
            int positive = 0; // allowed engines come in id order, so ranks ascend
            for (int i = 0; i < allowed.length; i++) {
                double f = weights[k][i] * inst.demand[k];
                if (weights[k][i] > 0) {
                    rank[positive] = inst.engineRank[allowed[i]];
                    id[positive] = inst.engineIds.get(rank[positive]);
                    value[positive++] = weights[k][i];
                }
                if (f > 0) {
                    routed += f;
                    latencyCost += f * (inst.rtt(k, allowed[i]) + latency[allowed[i]]);
                }
            }
            Map<String, Double> w = Route.weights(inst.engineIds, Arrays.copyOf(rank, positive),
                    Arrays.copyOf(value, positive));
            shed += shedFraction[k] * inst.demand[k];
            var c = inst.sourceClass[k];
            String gateway = inst.sourceGateway[k].id();
            Route before = options.previous() == null ? null : options.previous().route(gateway, c.id());
            String slots = slots(tables, before, w, Arrays.asList(Arrays.copyOf(id, positive)),
                    Arrays.copyOf(value, positive));
            routes.computeIfAbsent(gateway, g -> new LinkedHashMap<>())
                    .put(c.id(), new Route(c.model(), c.residency(), c.priority(), inst.demand[k], w, shedFraction[k],
                            price[k], slots));
        }
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
                    inst.penalty[j]));
        }
        Map<String, Map<String, Double>> rtt = new TreeMap<>(inst.topology.networkRttMs());
        double mean = routed > 0 ? latencyCost / routed : 0;
        Objective objective = new Objective(mean, latencyCost, lowerBound, gap, shed, iterations);
        double utilization = totalCapacity > 0 ? totalLoad / totalCapacity : 0;
        return new Snapshot(options.version(), "", policy, utilization, RetryBudget.DEFAULT, routes, engines, rtt,
                objective).sealed(options.version());
    }

    /**
     * The encoded slot table for positive weights {@code w} (sorted by engine id): rebalanced from the
     * previous route's table when it has a valid one, else built from the weights alone; empty when
     * {@code w} is. A pure function of its arguments, so equal inputs give equal snapshots.
     */
    static String slots(Route before, Map<String, Double> w) {
        List<String> ids = new ArrayList<>(w.keySet());
        double[] weights = w.values().stream().mapToDouble(Double::doubleValue).toArray();
        return slots(new SlotTable.Batch(), before, w, ids, weights);
    }

    /** {@link #slots(Route, Map)} with {@code w}'s ids and values given as lists. */
    private static String slots(SlotTable.Batch tables, Route before, Map<String, Double> w, List<String> ids,
                                double[] weights) {
        if (w.isEmpty()) {
            return "";
        }
        if (before != null && !before.slots().isEmpty()) {
            try {
                // on runs of slots, not slots: the same text as decoding, rebalancing and encoding
                String rebalanced = tables.rebalanceEncoded(before.slots(), before.slotEngines(),
                        before.slotWeights(), ids, weights);
                return before.weights().equals(w) ? before.slots() : rebalanced;
            } catch (IllegalArgumentException e) {
                // A previous snapshot with a bad table (hand-edited, or from another producer): start afresh.
            }
        }
        return tables.encodedOf(ids, weights);
    }
}
