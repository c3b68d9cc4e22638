package dev.sextant.sim;

/** {@code round-robin}: each gateway cluster cycles through the class's allowed usable engines. */
final class RoundRobinPolicy extends BaselinePolicy {
    private int[][] next;

    @Override
    public String name() {
        return "round-robin";
    }

    @Override
    public void start(Simulation s) {
        super.start(s);
        next = new int[s.gatewayCount][s.classCount];
    }

    @Override
    protected int choose(SimRequest r, int exclude) {
        int[] allowed = sim.allowed[r.trafficClass];
        int n = allowed.length;
        for (int i = 0; i < n; i++) {
            int idx = next[r.gateway][r.trafficClass]++ % n;
            if (next[r.gateway][r.trafficClass] >= n) {
                next[r.gateway][r.trafficClass] = 0;
            }
            int j = allowed[idx];
            if (candidate(r, j, exclude)) {
                return j;
            }
        }
        return -1;
    }
}
