package dev.sextant.sim;

import dev.sextant.hashing.SplitMix64;
import java.util.SplittableRandom;

/**
 * What the baselines share: they filter to allowed engines (model, residency) that their health checks
 * believe up and reachable, never shed, and retry a failed attempt once on another engine, as a typical
 * proxy does.
 */
abstract class BaselinePolicy implements SimPolicy {
    protected Simulation sim;
    protected SplittableRandom random;

    @Override
    public void start(Simulation s) {
        this.sim = s;
        this.random = new SplittableRandom(SplitMix64.mix(s.seed ^ name().hashCode()));
    }

    @Override
    public final int select(SimRequest r) {
        int e = choose(r, -1);
        if (e < 0) {
            // no engine believed up: try any allowed engine rather than refuse outright
            int[] a = sim.allowed[r.trafficClass];
            return a.length == 0 ? NO_ENGINE : a[(int) Math.floorMod(SplitMix64.mix(r.affinityKey()), (long) a.length)];
        }
        return e;
    }

    @Override
    public int retry(SimRequest r, int failedEngine) {
        if (r.attempts >= 2) {
            return -1;
        }
        return choose(r, failedEngine);
    }

    /** An allowed, usable engine other than {@code exclude}, or −1. */
    protected abstract int choose(SimRequest r, int exclude);

    /**
     * {@code engine}'s share of {@code weights} (indexed by engine) among the engines class {@code cls} may use, as
     * {@link SimPolicy#weight} gives it: NaN when the class may not use {@code engine}, 0 when they all weigh nothing.
     */
    protected final double share(int cls, int engine, double[] weights) {
        if (!sim.allowedMask[cls][engine]) {
            return Double.NaN;
        }
        double sum = 0;
        for (int j : sim.allowed[cls]) {
            sum += weights[j];
        }
        return sum == 0 ? 0 : weights[engine] / sum;
    }

    protected boolean candidate(SimRequest r, int j, int exclude) {
        return j != exclude && sim.usable(r.gateway, j);
    }
}
