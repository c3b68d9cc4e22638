package dev.sextant.sim;

/**
 * Weighted rendezvous hashing for the baselines that need key affinity: an engine's score for a key is
 * {@code −ln(u) / w} with u a uniform hash of (key, engine), and the key goes to the lowest score. The
 * probability of an engine is its weight's share, and a weight change moves only the keys it must.
 *
 * <p>Reference: Schindelhauer and Schomaker, "Weighted distributed hash tables" (SPAA 2005), the
 * logarithmic method. The simulator uses it only for baselines; the {@code sextant} policy runs the
 * production selector.
 */
final class Hashing {
    private Hashing() {
    }

    /** SplitMix64 finalizer: a bijective 64-bit mixer. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    /** Uniform in (0, 1) from (key, engine). */
    static double unit(long key, int engine) {
        long h = mix(key * 0x9e3779b97f4a7c15L + engine + 1);
        return ((h >>> 11) + 0.5) * 0x1.0p-53;
    }

    /** Score of {@code engine} for {@code key} at weight {@code w} (&gt; 0); lower wins. */
    static double score(long key, int engine, double w) {
        return -Math.log(unit(key, engine)) / w;
    }
}
