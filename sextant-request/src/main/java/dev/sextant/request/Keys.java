package dev.sextant.request;

/**
 * Turns the strings a gateway sees (a session id, a user, a request id) into the 64-bit keys
 * {@link RequestMeta} carries ({@link PromptKeys} derives a prompt's). Allocation-free: characters are read in
 * place.
 *
 * <p>The hash is FNV-1a over UTF-16 code units followed by the SplitMix64 finalizer; it is stable
 * across processes and releases, which affinity needs (two gateways must derive the same key from
 * the same session). It is not a cryptographic hash: a client that wants to collide with another
 * client's key only moves its own requests.
 */
public final class Keys {
    private static final long FNV_OFFSET = 0xCBF29CE484222325L;
    private static final long FNV_PRIME = 0x100000001B3L;

    private Keys() {
    }

    /** The key of {@code s}, any length; equal strings give equal keys. */
    public static long of(CharSequence s) {
        return of(s, 0, s.length(), FNV_OFFSET);
    }

    /**
     * The key of an affinity value of some kind, e.g. {@code of("session", id)}: the kind keeps a user
     * called "42" apart from a session called "42".
     */
    public static long of(String kind, CharSequence value) {
        long h = of(kind, 0, kind.length(), FNV_OFFSET);
        h = (h ^ 0x1F) * FNV_PRIME;
        return of(value, 0, value.length(), h);
    }

    private static long of(CharSequence s, int from, int to, long h) {
        for (int i = from; i < to; i++) {
            char c = s.charAt(i);
            h = (h ^ (c & 0xFF)) * FNV_PRIME;
            h = (h ^ (c >>> 8)) * FNV_PRIME;
        }
        return Hashing.mix(h);
    }
}
