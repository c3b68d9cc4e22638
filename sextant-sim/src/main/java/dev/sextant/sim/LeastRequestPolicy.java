package dev.sextant.sim;

/**
 * {@code least-request}: power of two choices: two distinct allowed usable engines at random, the one
 * with fewer requests in flight from this gateway cluster wins (Mitzenmacher, "The power of two choices in
 * randomized load balancing", 2001; Envoy's LEAST_REQUEST default).
 */
final class LeastRequestPolicy extends BaselinePolicy {
    @Override
    public String name() {
        return "least-request";
    }

    @Override
    protected int choose(SimRequest r, int exclude) {
        int[] allowed = sim.allowed[r.trafficClass];
        int n = allowed.length;
        int a = -1;
        int b = -1;
        // a few random probes find usable engines without building a list
        for (int tries = 0; tries < 4 * n + 8 && (a < 0 || b < 0); tries++) {
            int j = allowed[random.nextInt(n)];
            if (!candidate(r, j, exclude) || j == a) {
                continue;
            }
            if (a < 0) {
                a = j;
            } else {
                b = j;
            }
        }
        if (a < 0) {
            return -1;
        }
        if (b < 0) {
            return a;
        }
        int[] f = sim.inFlight[r.gateway];
        return f[b] < f[a] ? b : a;
    }
}
