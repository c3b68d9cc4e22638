package dev.sextant.sim;

import dev.sextant.hashing.SplitMix64;

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

    /** Uniform in (0, 1) from (key, engine). */
    static double unit(long key, int engine) {
        long h = SplitMix64.mix(key * SplitMix64.GOLDEN + engine + 1);
        return ((h >>> 11) + 0.5) * 0x1.0p-53;
    }

    /** Score of {@code engine} for {@code key} at weight {@code w} (&gt; 0); lower wins. */
    static double score(long key, int engine, double w) {
        return -Math.log(unit(key, engine)) / w;
    }
}
