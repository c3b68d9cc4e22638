package dev.sextant.sim;

/**
 * {@code nearest}: every request to the lowest-round-trip allowed engines its health checks believe
 * usable, split among them in proportion to capacity by weighted rendezvous hashing of the conversation
 * (so turns return to the same engine), whatever their load.
 */
final class NearestPolicy extends BaselinePolicy {
    @Override
    public String name() {
        return "nearest";
    }

    @Override
    protected int choose(SimRequest r, int exclude) {
        return nearest(sim, r, exclude);
    }

    /** The engine of the lowest-round-trip usable tier that the conversation hashes to, or −1. */
    static int nearest(Simulation sim, SimRequest r, int exclude) {
        int[] allowed = sim.allowed[r.trafficClass];
        double[] rtt = sim.knownRttMs[r.gateway];
        double nearest = Double.POSITIVE_INFINITY;
        for (int j : allowed) {
            if (rtt[j] < nearest && (j != exclude && sim.usable(r.gateway, j))) {
                nearest = rtt[j];
            }
        }
        long key = r.affinityKey();
        int best = -1;
        double bestScore = Double.POSITIVE_INFINITY;
        for (int j : allowed) {
            if (rtt[j] == nearest && (j != exclude && sim.usable(r.gateway, j))) {
                double s = Hashing.score(key, j, sim.topology.engines().get(j).capacityRps());
                if (s < bestScore) {
                    bestScore = s;
                    best = j;
                }
            }
        }
        return best;
    }
}
