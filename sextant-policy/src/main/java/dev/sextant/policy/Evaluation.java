package dev.sextant.policy;

import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.TrafficClass;
import dev.sextant.topology.Topology;
import java.util.HashMap;
import java.util.Map;

/**
 * What a snapshot's routing would cost if it were kept while the fleet changed: its weights applied to another
 * topology's demand, priced with that topology's profiles, capacities and round trips (the optimizer's own cost
 * functions). A control plane compares this with a fresh solve to decide whether publishing is worth it.
 */
final class Evaluation {
    private Evaluation() {
        // static only
    }

    static HeldRouting of(Topology topology, Snapshot held) {
        Instance inst = Instance.of(topology, SolveOptions.defaults());
        int n = inst.engines.size();
        Map<String, Integer> index = new HashMap<>(n * 2);
        for (int j = 0; j < n; j++) {
            index.put(inst.engines.get(j).id(), j);
        }
        double[] load = new double[n];
        double network = 0;
        double routed = 0;
        double shed = 0;
        boolean feasible = true;
        for (int k = 0; k < inst.sourceCount; k++) {
            double lambda = inst.demand[k];
            if (lambda <= 0) {
                continue;
            }
            TrafficClass c = inst.sourceClass[k];
            Route r = held.route(inst.sourceGateway[k].id(), c.id());
            if (r == null) {
                shed += lambda;
                continue;
            }
            shed += lambda * r.shedFraction();
            for (Map.Entry<String, Double> w : r.weights().entrySet()) {
                if (w.getValue() <= 0) {
                    continue;
                }
                Integer j = index.get(w.getKey());
                double f = lambda * w.getValue();
                if (j == null) {
                    feasible = false; // the engine left the fleet: its share has nowhere to go
                    continue;
                }
                double rtt = inst.rtt(k, j);
                if (Double.isNaN(rtt) || !inst.topology.allowed(c, inst.engines.get(j))) {
                    feasible = false;
                    continue;
                }
                load[j] += f;
                network += f * rtt;
                routed += f;
            }
        }
        double engineCost = 0;
        double worst = 0;
        String worstEngine = null;
        for (int j = 0; j < n; j++) {
            if (load[j] <= 0) {
                continue;
            }
            double ratio = inst.costs[j].effectiveCapacity > 0 ? load[j] / inst.costs[j].effectiveCapacity
                    : Double.POSITIVE_INFINITY;
            if (ratio > worst) {
                worst = ratio;
                worstEngine = inst.engines.get(j).id();
            }
            // beyond effective capacity the profile still prices it (the headroom is eaten into), up to capacity
            engineCost += inst.costs[j].cost(load[j]);
        }
        double cost = feasible && Double.isFinite(engineCost) ? network + engineCost : Double.POSITIVE_INFINITY;
        return new HeldRouting(cost, routed > 0 ? cost / routed : 0, routed, shed, worst, worstEngine);
    }
}
