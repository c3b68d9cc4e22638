package dev.sextant.request;

import dev.sextant.hashing.SplitMix64;

/**
 * 64-bit mixing shared by selection, admission and jitter. Each use has its own salt so that the
 * decisions drawn from one request (which engine, whether to shed, how long to back off) are
 * independent even when they hash the same number.
 */
final class Hashing {
    /** 2^64 / φ, the SplitMix64 increment; successive probes of one key step by it. */
    static final long GOLDEN = SplitMix64.GOLDEN;
    static final long ADMISSION_SALT = 0x5DEECE66DL * GOLDEN;
    static final long TAIL_SALT = 0xD1B54A32D192ED03L;
    static final long JITTER_SALT = 0x8CB92BA72F3D8DD7L;
    static final long SPILL_SALT = 0xA0761D6478BD642FL;
    static final long RECENT_SALT = 0xE7037ED1A0B428DBL;

    private Hashing() {
    }

    /** The SplitMix64 finalizer: see {@link SplitMix64#mix}. */
    static long mix(long z) {
        return SplitMix64.mix(z);
    }

    /** A uniform double in [0, 1) from the top 53 bits of {@code h}. */
    static double unit(long h) {
        return SplitMix64.unit(h);
    }
}
