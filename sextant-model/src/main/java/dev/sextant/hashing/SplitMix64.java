package dev.sextant.hashing;

/**
 * SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014): the one
 * 64-bit mixer every module uses, for consistent hashing, admission, jitter, the simulator's baselines and the
 * engine emulator's seeded streams. Its results are part of what a snapshot means (a key's engine) and of what a
 * seeded run produces (docs/design.md §6, 7), so they must never change.
 */
public final class SplitMix64 {
    /** 2^64 / φ, the generator's increment: successive draws of one stream, or probes of one key, step by it. */
    public static final long GOLDEN = 0x9E3779B97F4A7C15L;

    private SplitMix64() {
    }

    /** The finalizer: a bijection of the 64-bit numbers with full avalanche. */
    public static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** Draw {@code n} (0, 1, …) of the stream seeded with {@code seed}: the generator's n+1-th output. */
    public static long draw(long seed, long n) {
        return mix(seed + (n + 1) * GOLDEN);
    }

    /** A uniform number in [0, 1) from the top 53 bits of {@code h}. */
    public static double unit(long h) {
        return (h >>> 11) * 0x1.0p-53;
    }
}
