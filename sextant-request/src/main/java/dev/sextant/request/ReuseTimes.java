package dev.sextant.request;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * How long a gateway's conversations leave between their requests: per class, a count of the times from the end of a
 * conversation's request to its next request, in buckets of {@link #BOUNDS_SECONDS}. Whether an engine's prefix cache
 * still holds a conversation's context when its next turn comes depends on that time against how long the cache
 * keeps a context at the engine's load (docs/control-loop.md, "The prefix cache's capacity"); the gateway reports
 * the counts and the control loop reads the distribution from them.
 *
 * <p>Implementation note. A fixed, direct-mapped table of {@code 2^bits} longs holds, per conversation key, 32 bits of
 * the key and when its last request ended (in 1/64 s, 32 bits: it wraps after two years, and a time is read modulo
 * that). One atomic read when a request arrives, one write when it ends, no allocation: a key that another key has
 * pushed out of its slot is taken as not seen before, which only thins the counts. The counts of a class are made once
 * and kept, so a class that goes and comes back keeps counting.
 */
public final class ReuseTimes {
    /** Upper bounds of the buckets, s: 0.25 · 2^i up to about an hour; a last bucket counts every longer time. */
    public static final double[] BOUNDS_SECONDS = new double[15];

    static {
        for (int i = 0; i < BOUNDS_SECONDS.length; i++) {
            BOUNDS_SECONDS[i] = 0.25 * (1L << i);
        }
    }

    /**
     * Counts per class, each request counted by its prompt's size (bytes at a gateway), since the tokens a cache serves
     * a request grow with its prompt: one bucket per bound, one for the times beyond the last, then the requests whose
     * key the table does not hold (a conversation's first request, or one whose slot another key took since), and
     * last the number of requests (each counted once).
     */
    public static final int BUCKETS = BOUNDS_SECONDS.length + 3;
    /** The index of the prompt sizes of requests whose key was not seen before. */
    public static final int FIRST_SEEN = BUCKETS - 2;
    /** The index of the number of requests. */
    public static final int REQUESTS = BUCKETS - 1;

    private static final long UNIT_NANOS = 1_000_000_000L / 64;

    private final AtomicLongArray ends;
    private final int mask;
    private final ConcurrentHashMap<String, AtomicLongArray> counts = new ConcurrentHashMap<>();

    /** A table of {@code 2^bits} keys (bits in [4, 26]). */
    public ReuseTimes(int bits) {
        if (bits < 4 || bits > 26) {
            throw new IllegalArgumentException("bits: " + bits + " (expected: 4 to 26)");
        }
        ends = new AtomicLongArray(1 << bits);
        mask = (1 << bits) - 1;
    }

    /**
     * The counts of class {@code id}, made the first time: what {@link #arrived} adds to. After the first time one
     * map read, without the lock {@code computeIfAbsent} may take; where the classes are known ahead, look them up
     * once.
     */
    public AtomicLongArray counts(String id) {
        AtomicLongArray c = counts.get(id);
        return c != null ? c : counts.computeIfAbsent(id, k -> new AtomicLongArray(BUCKETS));
    }

    /**
     * A request with conversation key {@code key} (0: none) and a prompt of {@code size} (≥ 1; bytes, or any measure
     * of it used alike by every request) arrived at {@code nanos} (a monotonic clock): counts, in {@code classCounts},
     * the time since the key's last request ended if the table holds it, else a first request.
     */
    public void arrived(AtomicLongArray classCounts, long key, long size, long nanos) {
        if (key == 0) {
            return;
        }
        long w = Math.max(1, size);
        classCounts.incrementAndGet(REQUESTS);
        long e = ends.get(index(key));
        if (e == 0 || (int) (e >>> 32) != tag(key)) {
            classCounts.addAndGet(FIRST_SEEN, w);
            return;
        }
        long units = (units(nanos) - e) & 0xFFFF_FFFFL;
        classCounts.addAndGet(bucket(units / 64.0), w);
    }

    /**
     * How long ago, at {@code nanos}, the last request of conversation {@code key} ended, ns (to 1/64 s); -1 when the
     * table does not hold the key (key 0, a first request, or a slot another key took since); 0 for an end recorded as
     * later than {@code nanos} (another thread's clock read). Times are kept modulo about two years, so one over a
     * year reads as such an end. One atomic read.
     */
    public long sinceEnd(long key, long nanos) {
        if (key == 0) {
            return -1;
        }
        long e = ends.get(index(key));
        if (e == 0 || (int) (e >>> 32) != tag(key)) {
            return -1;
        }
        int units = (int) (units(nanos) - e);
        return Math.max(0, units) * UNIT_NANOS;
    }

    /** A request with conversation key {@code key} (0: none) ended at {@code nanos}. */
    public void ended(long key, long nanos) {
        if (key != 0) {
            ends.set(index(key), ((long) tag(key) << 32) | (units(nanos) & 0xFFFF_FFFFL));
        }
    }

    /**
     * Every class's counts since the last call, which it resets; classes without a count since are left out. A count
     * added while this runs goes to this call or the next, never to none.
     */
    public java.util.Map<String, long[]> drain() {
        java.util.Map<String, long[]> out = new java.util.TreeMap<>();
        counts.forEach((id, a) -> {
            long[] c = new long[BUCKETS];
            long sum = 0;
            for (int i = 0; i < BUCKETS; i++) {
                c[i] = a.getAndSet(i, 0);
                sum += c[i];
            }
            if (sum > 0) {
                out.put(id, c);
            }
        });
        return out;
    }

    /** The bucket of a time of {@code seconds} (never {@link #FIRST_SEEN}). */
    public static int bucket(double seconds) {
        for (int i = 0; i < BOUNDS_SECONDS.length; i++) {
            if (seconds < BOUNDS_SECONDS[i]) {
                return i;
            }
        }
        return BOUNDS_SECONDS.length;
    }

    private int index(long key) {
        return (int) key & mask;
    }

    private static int tag(long key) {
        return (int) (key >>> 32) | 1;
    }

    private static long units(long nanos) {
        return Math.floorDiv(nanos, UNIT_NANOS);
    }
}
