package dev.sextant.sim;

/**
 * {@code random}: each request to one of the class's allowed engines drawn uniformly (as Envoy's {@code RANDOM} load
 * balancer), or, where that one is not usable, the next usable one in the class's order (which so takes the unusable
 * one's share). It spreads load as evenly as {@code round-robin} on average, but each engine's arrivals stay as
 * irregular as the gateway's own; set beside {@code round-robin} it separates what an even share buys from what
 * a regular one does (docs/evaluation.md, long context). Not in the default set: run it with {@code --policies}.
 */
final class RandomPolicy extends BaselinePolicy {
    @Override
    public String name() {
        return "random";
    }

    @Override
    protected int choose(SimRequest r, int exclude) {
        int[] allowed = sim.allowed[r.trafficClass];
        int n = allowed.length;
        if (n == 0) {
            return -1;
        }
        int start = random.nextInt(n);
        for (int i = 0; i < n; i++) { // from a uniform start, the first usable one
            int j = allowed[(start + i) % n];
            if (candidate(r, j, exclude)) {
                return j;
            }
        }
        return -1;
    }
}
