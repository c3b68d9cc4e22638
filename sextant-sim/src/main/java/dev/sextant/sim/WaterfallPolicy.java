package dev.sextant.sim;

import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;

/**
 * {@code waterfall}: nearest first, spilling over to the next nearest when those engines are full, as
 * rated: the weights are the production baseline {@link Policies#waterfall()} computed once from the
 * scenario's demand and the engines' effective capacity (a static configuration, like priority levels in
 * an L7 proxy). The data plane hashes the conversation over those weights (weighted rendezvous) among
 * engines its health checks believe usable, and falls back to {@code nearest} when no engine with weight is usable.
 */
final class WaterfallPolicy extends BaselinePolicy {
    /** Gateway → class → engine → weight. */
    private double[][][] weights;

    @Override
    public String name() {
        return "waterfall";
    }

    @Override
    public void start(Simulation s) {
        super.start(s);
        Snapshot snap = Policies.waterfall().solve(s.topology, SolveOptions.defaults());
        weights = new double[s.gatewayCount][s.classCount][s.engineCount];
        for (int g = 0; g < s.gatewayCount; g++) {
            for (int k = 0; k < s.classCount; k++) {
                Route r = snap.route(s.topology.gatewayClusters().get(g).id(), s.topology.classes().get(k).id());
                if (r == null) {
                    continue;
                }
                for (int j : s.allowed[k]) {
                    weights[g][k][j] = r.weights().getOrDefault(s.topology.engines().get(j).id(), 0.0);
                }
            }
        }
    }

    @Override
    protected int choose(SimRequest r, int exclude) {
        double[] w = weights[r.gateway][r.trafficClass];
        long key = r.affinityKey();
        int best = -1;
        double bestScore = Double.POSITIVE_INFINITY;
        for (int j : sim.allowed[r.trafficClass]) {
            if (!candidate(r, j, exclude)) {
                continue;
            }
            if (w[j] > 0) {
                double s = Hashing.score(key, j, w[j]);
                if (s < bestScore) {
                    bestScore = s;
                    best = j;
                }
            }
        }
        return best >= 0 ? best : NearestPolicy.nearest(sim, r, exclude);
    }

    @Override
    public double weight(int gateway, int cls, int engine) {
        if (!sim.allowedMask[cls][engine]) {
            return Double.NaN;
        }
        double sum = 0;
        for (int j : sim.allowed[cls]) {
            sum += weights[gateway][cls][j];
        }
        return sum == 0 ? 0 : weights[gateway][cls][engine] / sum;
    }
}
