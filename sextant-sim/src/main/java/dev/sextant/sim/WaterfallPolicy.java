package dev.sextant.sim;

import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;

/**
 * {@code waterfall}: nearest first, spilling over to the next nearest when those engines are full. Two layers, as
 * an L7 proxy with priority levels and an engine-aware load balancer would stack them: the weights are the
 * production baseline {@link Policies#waterfall()} computed once from the scenario's demand and the engines' rated
 * capacity (a static configuration); and per request, an engine the last scrape showed full (running + waiting ≥
 * its sequence limit) is skipped for the next engine by that hash, the nearest first, among engines its health checks
 * believe usable. It falls back to {@code nearest} when no engine with weight is usable.
 */
final class WaterfallPolicy extends BaselinePolicy {
    /** Gateway → class → engine → weight. */
    private double[][][] weights;
    /** Engine → the last scrape showed it full. */
    private boolean[] full;

    @Override
    public String name() {
        return "waterfall";
    }

    @Override
    public void start(Simulation s) {
        super.start(s);
        full = new boolean[s.engineCount];
        s.onScrape(scrape -> {
            for (int j = 0; j < s.engineCount; j++) {
                full[j] = scrape.up()[j]
                        && scrape.running()[j] + scrape.waiting()[j] >= s.scenario.hardware().get(j).maxSeqs();
            }
        });
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
        if (best >= 0 && full[best]) {
            int spill = spill(r, exclude);
            if (spill >= 0) {
                return spill;
            }
        }
        return best >= 0 ? best : NearestPolicy.nearest(sim, r, exclude);
    }

    /** The engine the key hashes to among the nearest usable engines the last scrape did not show full, or −1. */
    private int spill(SimRequest r, int exclude) {
        double[] rtt = sim.knownRttMs[r.gateway];
        int best = -1;
        double bestRtt = Double.POSITIVE_INFINITY;
        double bestScore = Double.POSITIVE_INFINITY;
        for (int j : sim.allowed[r.trafficClass]) {
            if (!candidate(r, j, exclude) || full[j]) {
                continue;
            }
            double s = Hashing.score(r.affinityKey(), j, sim.topology.engines().get(j).capacityRps());
            if (rtt[j] < bestRtt || rtt[j] == bestRtt && s < bestScore) {
                best = j;
                bestRtt = rtt[j];
                bestScore = s;
            }
        }
        return best;
    }

    @Override
    public double weight(int gateway, int cls, int engine) {
        return share(cls, engine, weights[gateway][cls]);
    }
}
