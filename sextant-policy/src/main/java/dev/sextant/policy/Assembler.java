package dev.sextant.policy;

import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Objective;
import dev.sextant.snapshot.RetryBudget;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Engine;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * Builds a snapshot from a policy's decision: per source, the weight of each allowed engine and the
 * shed fraction. Loads, latencies and the mean latency are computed here the same way for every
 * policy, so policies compare on equal terms.
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
        for (double[] w : weights) {
            for (int i = 0; i < w.length; i++) {
                w[i] = Math.min(1, Math.max(0, w[i]));
            }
        }
        for (int k = 0; k < inst.sourceCount; k++) {
            int[] allowed = inst.sourceEngines[k];
            for (int i = 0; i < allowed.length; i++) {
                load[allowed[i]] += weights[k][i] * inst.demand[k];
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
        for (int k = 0; k < inst.sourceCount; k++) {
            int[] allowed = inst.sourceEngines[k];
            Map<String, Double> w = new TreeMap<>();
            for (int i = 0; i < allowed.length; i++) {
                double f = weights[k][i] * inst.demand[k];
                if (weights[k][i] > 0) {
                    w.put(inst.engines.get(allowed[i]).id(), weights[k][i]);
                }
                if (f > 0) {
                    routed += f;
                    latencyCost += f * (inst.rtt(k, allowed[i]) + latency[allowed[i]]);
                }
            }
            shed += shedFraction[k] * inst.demand[k];
            var c = inst.sourceClass[k];
            routes.computeIfAbsent(inst.sourceGateway[k].id(), g -> new LinkedHashMap<>())
                    .put(c.id(), new Route(c.model(), c.residency(), c.priority(), inst.demand[k], w, shedFraction[k],
                            price[k]));
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
}
