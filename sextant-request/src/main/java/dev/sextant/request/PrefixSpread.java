package dev.sextant.request;

import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Spreads a prefix many conversations share (a system prompt, a template) over a few engines, more as its load
 * grows: the rule of docs/request-path.md §4 ("Shared prefixes"). Lock-free and allocation-free; its memory is
 * fixed ({@value #CELLS} cells of two ints).
 *
 * <p>A request with prefix key P and conversation key C is routed on the key P + j·φ, j = jump(C, s) in [0, s):
 * the j-th of P's independent probes (for a single slot table exactly the j-th entry of P's probe sequence), so
 * the prefix's engines are the first s of its own weighted order, the same in every gateway with the same s, and
 * each conversation keeps one of them. Its spread s is the smallest number of probes over which the prefix's
 * requests in flight here stay within a quota each ({@link DefaultDataPlane}: what bounded load leaves above a
 * mean engine's share, at least the bounded load's minimum). s grows at once; it shrinks by one step only when for
 * {@value #HOLD_S} s the prefix has not needed s probes and its requests in flight would now fill no more than half
 * of one probe fewer. A change of s moves conversations, and a moved conversation prefills its whole context again,
 * so the spread follows the prefix's load over minutes, not the in-flight count of the moment: a prefix's requests in
 * flight rise and fall with every wave of turns (a count of ten wanders between four and seventeen), and a spread that
 * followed it moved the same conversations back and forth every few seconds.
 *
 * <p>Implementation note: jump(C, s) is the jump consistent hash of Lamping and Veach ("A Fast, Minimal Memory,
 * Consistent Hash Algorithm", 2014): when s grows to s + 1 exactly 1/(s + 1) of the conversations move, all of them
 * to the new probe, and the rest keep theirs; O(log s) steps. Prefixes share a cell when their keys' top
 * {@value #BITS} bits agree: a rare prefix that shares a hot one's cell is spread as the hot one is, which costs
 * it cache reuse, never correctness.
 */
final class PrefixSpread {
    static final int BITS = 12;
    static final int CELLS = 1 << BITS;
    private static final long SALT = 0x3C6EF372FE94F82BL;

    private final AtomicIntegerArray inFlight = new AtomicIntegerArray(CELLS);
    private final AtomicIntegerArray spread = new AtomicIntegerArray(CELLS);
    /** When each cell's spread last changed or its load last needed all of it (the hold's start). */
    private final AtomicLongArray neededAt = new AtomicLongArray(CELLS);
    /**
     * How long a spread holds after its load last needed it: longer than the pause between two turns of a chat
     * (reading and typing take seconds to tens of seconds), so that a lull between waves of turns moves nothing;
     * short enough that the engines of a prefix whose traffic has gone are given back within minutes, a step a minute.
     */
    static final long HOLD_S = 60;
    private static final long HOLD_NANOS = HOLD_S * 1_000_000_000L;
    /** Marks of "needed" closer together than this are not written: one write per cell per 100 ms at most. */
    private static final long MARK_NANOS = 100_000_000L;

    /** The cell of prefix key {@code prefix}. */
    int cell(long prefix) {
        return (int) (Hashing.mix(prefix ^ SALT) >>> (64 - BITS));
    }

    /**
     * The key to route a request of {@code conversation} with prefix {@code prefix} (of cell {@code cell}) on, given
     * that each probe may carry {@code quota} requests in flight (> 0), at {@code now} on the data plane's ticker.
     */
    long key(int cell, long prefix, long conversation, double quota, long now) {
        int n = inFlight.get(cell) + 1;
        int want = (int) Math.min(Integer.MAX_VALUE, Math.ceil(n / quota));
        int have = Math.max(1, spread.get(cell));
        long since = now - neededAt.get(cell);
        int s = want >= have ? want : 2.0 * n <= (have - 1) * quota && since >= HOLD_NANOS ? have - 1 : have;
        if (s != have || (want == have && since >= MARK_NANOS)) {
            // a race with another request only decides which of two current values stays
            spread.set(cell, s);
            neededAt.set(cell, now);
        }
        return s == 1 ? prefix : prefix + jump(Hashing.mix(conversation ^ SALT), s) * Hashing.GOLDEN;
    }

    /** The spread of {@code prefix}'s cell now: how many of its probes it uses, ≥ 1. */
    int spread(long prefix) {
        return Math.max(1, spread.get(cell(prefix)));
    }

    /** Counts {@code d} in flight in {@code cell} (none when refused or {@code cell} < 0) and returns it. */
    Decision count(Decision d, int cell) {
        if (cell >= 0 && d.routed()) {
            d.prefixCell = cell;
            inFlight.incrementAndGet(cell);
        }
        return d;
    }

    /** An attempt counted in {@code cell} ended (nothing when {@code cell} < 0). */
    void release(int cell) {
        if (cell >= 0) {
            inFlight.decrementAndGet(cell);
        }
    }

    /** Lamping and Veach's jump consistent hash of {@code key} into [0, buckets). */
    static int jump(long key, int buckets) {
        long b = -1;
        long j = 0;
        while (j < buckets) {
            b = j;
            key = key * 2862933555777941757L + 1;
            j = (long) ((b + 1) * ((double) (1L << 31) / (double) ((key >>> 33) + 1)));
        }
        return (int) b;
    }
}
