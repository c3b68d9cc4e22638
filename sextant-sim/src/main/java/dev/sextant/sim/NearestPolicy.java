package dev.sextant.sim;

/**
 * {@code nearest}: every request to the lowest-round-trip allowed engines, split among them in proportion
 * to capacity by weighted rendezvous hashing of the conversation (so turns return to the same engine),
 * whatever their load. {@code waterfall} does the same but skips an engine that its last scrape showed
 * full (running + waiting ≥ max sequences; scraped metrics arrive with the scenario's signal delay, as a
 * metrics-driven router sees them), spilling to the next nearest; when every engine looks full it falls
 * back to the nearest.
 */
final class NearestPolicy extends BaselinePolicy {
    private final boolean spill;
    private int[] busy;

    NearestPolicy(boolean spill) {
        this.spill = spill;
    }

    @Override
    public String name() {
        return spill ? "waterfall" : "nearest";
    }

    @Override
    public void start(Simulation s) {
        super.start(s);
        busy = new int[s.engineCount];
        if (spill) {
            s.onScrape(scrape -> {
                for (int j = 0; j < busy.length; j++) {
                    busy[j] = scrape.running()[j] + scrape.waiting()[j];
                }
            });
        }
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
                    if (s < bestFreeScore && busy[j] < sim.engines.get(j).params.maxSeqs()) {
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
