package dev.sextant.sim;

/**
 * {@code nearest}: every request to the lowest-round-trip allowed engines, split among them in proportion
 * to capacity by weighted rendezvous hashing of the conversation (so turns return to the same engine),
 * whatever their load. {@code waterfall} does the same but skips an engine whose batch is full
 * (running + waiting ≥ max sequences), spilling to the next nearest, as priority-based failover in
 * L7 proxies does; when every engine is full it falls back to the nearest.
 */
final class NearestPolicy extends BaselinePolicy {
    private final boolean spill;

    NearestPolicy(boolean spill) {
        this.spill = spill;
    }

    @Override
    public String name() {
        return spill ? "waterfall" : "nearest";
    }

    @Override
    protected int choose(SimRequest r, int exclude) {
        int[] allowed = sim.allowed[r.trafficClass];
        double[] rtt = sim.rttMs[r.gateway];
        long key = r.affinityKey();
        // walk tiers of equal round trip in increasing order
        double tier = Double.NEGATIVE_INFINITY;
        int fallback = -1;
        while (true) {
            double next = Double.POSITIVE_INFINITY;
            for (int j : allowed) {
                if (rtt[j] > tier && rtt[j] < next && candidate(r, j, exclude)) {
                    next = rtt[j];
                }
            }
            if (Double.isInfinite(next)) {
                return fallback;
            }
            int best = -1;
            double bestScore = Double.POSITIVE_INFINITY;
            int bestFree = -1;
            double bestFreeScore = Double.POSITIVE_INFINITY;
            for (int j : allowed) {
                if (rtt[j] == next && candidate(r, j, exclude)) {
                    double s = Hashing.score(key, j, sim.topology.engines().get(j).capacityRps());
                    if (s < bestScore) {
                        bestScore = s;
                        best = j;
                    }
                    EngineSim e = sim.engines.get(j);
                    if (s < bestFreeScore && e.runningCount() + e.waitingCount() < e.params.maxSeqs()) {
                        bestFreeScore = s;
                        bestFree = j;
                    }
                }
            }
            if (!spill) {
                return best;
            }
            if (fallback < 0) {
                fallback = best;
            }
            if (bestFree >= 0) {
                return bestFree;
            }
            tier = next;
        }
    }
}
