package dev.sextant.policy;

import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Objective;
import dev.sextant.snapshot.RetryBudget;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.SlotTable;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Engine;
import java.util.Arrays;
import java.util.LinkedHashMap;
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

    /** A policy's weights, given source by source. */
    interface SourceWeights {
        /**
         * Writes source {@code k}'s weight of each allowed engine into {@code out[i]}, i indexing
         * {@code inst.sourceEngines[k]}; {@code out} holds at least that many and its contents are
         * otherwise undefined.
         */
        void fill(int k, double[] out);
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
        return assemble(inst, policy, options, (k, out) -> System.arraycopy(weights[k], 0, out, 0, weights[k].length),
                shedFraction, price, shadow, lowerBound, gap, iterations);
    }

    /**
     * As above with the weights computed source by source, for a policy whose weights follow from fewer
     * numbers (the optimizer's: a fraction per group, a share per engine) than the million (source,
     * engine) pairs of a large fleet, which are then never stored.
     */
    static Snapshot assemble(Instance inst, String policy, SolveOptions options, SourceWeights weights,
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
        double[] given = new double[n];
        for (int k = 0; k < inst.sourceCount; k++) {
            int[] allowed = inst.sourceEngines[k];
            weights.fill(k, given);
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
        double[] latency = new double[n];
        double engineCost = 0;
        for (int j = 0; j < n; j++) {
            latency[j] = inst.costs[j].latency(load[j]);
            if (load[j] > 0) {
                engineCost += load[j] * latency[j];
            }
        }
        double latencyCost = networkCost + engineCost;
        Map<String, Map<String, Route>> routes = new LinkedHashMap<>();
        SlotTable.Batch tables = new SlotTable.Batch();
        for (int k = 0; k < inst.sourceCount; k++) {
            Map<String, Double> w = routeWeights[k];
            var c = inst.sourceClass[k];
            String gateway = inst.sourceGateway[k].id();
            Route before = options.previous() == null ? null : options.previous().route(gateway, c.id());
            routes.computeIfAbsent(gateway, g -> new LinkedHashMap<>())
                    .put(c.id(), new Route(c.model(), c.residency(), c.priority(), inst.demand[k], w, shedFraction[k],
                            price[k], slots(tables, before, w)));
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
        return slots(new SlotTable.Batch(), before, w);
    }

    private static String slots(SlotTable.Batch tables, Route before, Map<String, Double> w) {
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
