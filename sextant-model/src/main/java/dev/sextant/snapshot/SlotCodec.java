package dev.sextant.snapshot;

import java.util.Arrays;
import java.util.Base64;
import java.util.List;

/**
 * The text form of a {@link SlotTable}, and what a table's slot counts must be: the format a snapshot carries in
 * {@link Route#slots()} and {@link EngineGroup#slots()}, shared by the data plane that reads tables and the policy
 * that builds them. Part of the snapshot format: its output must never change for equal input.
 *
 * <p>Format: URL-safe base64 without padding of the bytes {@code 1} (format), {@code b} (the table has 2^b
 * slots), varint n (engines), then the slots in order as runs: for each maximal run of slots with one owner,
 * the zigzag varint of (owner − previous run's owner) and the varint run length. The engines themselves are not
 * repeated: index i is the i-th of the engine list the table was built with (for a route, its positive weights
 * in id order).
 */
public final class SlotCodec {
    private static final int FORMAT = 1;

    private SlotCodec() {
    }

    /**
     * Checks {@code weights} for a table over {@code n} engines and returns their sum.
     *
     * @throws IllegalArgumentException unless there is one finite weight ≥ 0 per engine, at least one positive,
     *                                  and at most {@link SlotTable#MAX_ENGINES} engines
     */
    public static double checkWeights(int n, double[] weights) {
        if (weights.length != n) {
            throw new IllegalArgumentException("weights: " + weights.length + " values for " + n
                    + " engines (expected: one weight per engine)");
        }
        if (n > SlotTable.MAX_ENGINES) {
            throw new IllegalArgumentException("engineIds: " + n + " engines (expected: <= " + SlotTable.MAX_ENGINES
                    + ")");
        }
        double total = 0;
        for (int i = 0; i < n; i++) {
            double w = weights[i];
            if (!(w >= 0) || Double.isInfinite(w)) {
                throw new IllegalArgumentException("weights[" + i + "]: " + w + " (expected: a finite number >= 0)");
            }
            total += w;
        }
        if (!(total > 0)) {
            throw new IllegalArgumentException("weights: all zero (expected: at least one positive weight)");
        }
        return total;
    }

    /**
     * Integer slot counts summing to {@code m}, each within 1 of {@code m·w/total}, by the largest remainder
     * method (Hamilton): floors first, then one more slot for each of the largest remainders, ties to the lower
     * index. What a table built without history gives each engine, and what a rebalance aims at.
     *
     * @param weights as checked by {@link #checkWeights}
     * @param total   their sum
     * @param m       the table's slots
     */
    public static int[] slotCounts(double[] weights, double total, int m) {
        int n = weights.length;
        int[] counts = new int[n];
        double[] rem = new double[n];
        long assigned = 0;
        for (int i = 0; i < n; i++) {
            double exact = weights[i] / total * m;
            counts[i] = (int) exact; // exact ≥ 0: the cast is the floor
            rem[i] = exact - counts[i];
            assigned += counts[i];
        }
        int left = (int) (m - assigned);
        if (left > 0) {
            // Largest remainders first, ties by lower index: (remainder, index) packed in a long,
            // remainder in the top 46 bits, the complement of the index in the low 17; keys are
            // distinct, so the `left` largest are those at or above the key of rank p − left.
            long[] order = new long[n];
            int p = 0;
            for (int i = 0; i < n; i++) {
                if (weights[i] > 0) {
                    order[p++] = ((long) (rem[i] * 0x1.0p46) << 17) | (0x1FFFF - i);
                }
            }
            long threshold = left >= p ? Long.MIN_VALUE : select(order, p, p - left);
            for (int k = 0; k < p; k++) {
                if (order[k] >= threshold) {
                    counts[0x1FFFF - (int) (order[k] & 0x1FFFF)]++;
                    left--;
                }
            }
            if (left > 0) { // only if rounding made Σ remainders exceed the positive engines' count
                int heaviest = 0;
                for (int i = 1; i < n; i++) {
                    heaviest = weights[i] > weights[heaviest] ? i : heaviest;
                }
                counts[heaviest] += left;
            }
        }
        return counts;
    }

    /**
     * The value of rank {@code r} (0 = smallest) among the first {@code size} values of {@code a},
     * which it reorders (Hoare's selection, median-of-three pivots): linear time on average where a
     * sort would be n log n, for the slot counts of every route of every snapshot.
     */
    private static long select(long[] a, int size, int r) {
        int lo = 0;
        int hi = size - 1;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            long x = a[lo];
            long y = a[mid];
            long z = a[hi];
            long pivot = x < y ? (y < z ? y : Math.max(x, z)) : (x < z ? x : Math.max(y, z));
            int i = lo;
            int j = hi;
            while (i <= j) {
                while (a[i] < pivot) {
                    i++;
                }
                while (a[j] > pivot) {
                    j--;
                }
                if (i <= j) {
                    long t = a[i];
                    a[i] = a[j];
                    a[j] = t;
                    i++;
                    j--;
                }
            }
            if (r <= j) {
                hi = j;
            } else if (r >= i) {
                lo = i;
            } else {
                return a[r];
            }
        }
        return a[r];
    }

    /**
     * The text of a table over {@code n} engines whose {@code runs} cover all {@code 2^bits} slots, owners in
     * [0, n), in the format of the class comment. Equal runs give equal text; runs that the list splits in two
     * with one owner would give other text, which {@link SlotRuns#add} never does.
     */
    public static String encode(int bits, int n, SlotRuns runs) {
        Bytes out = new Bytes(16 + 3 * runs.size());
        out.write(FORMAT);
        out.write(bits);
        out.varint(n);
        int prev = 0;
        for (int r = 0; r < runs.size(); r++) {
            int delta = runs.owner(r) - prev;
            out.varint((delta << 1) ^ (delta >> 31));
            out.varint(runs.length(r));
            prev = runs.owner(r);
        }
        return out.base64();
    }

    /**
     * The runs {@code encoded} describes for a table over {@code n} engines, checked to be well-formed (format,
     * table size for n engines, owners in [0, n), runs covering every slot and nothing after); adds each engine's
     * slots to {@code counts}. Runs the text splits in two with one owner are joined.
     *
     * @throws IllegalArgumentException naming what is wrong, every message starting {@code "slots: "}
     */
    public static SlotRuns decode(String encoded, int n, int[] counts) {
        byte[] bytes;
        try {
            bytes = Base64.getUrlDecoder().decode(encoded);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("slots: not base64url (" + e.getMessage() + ")");
        }
        Reader in = new Reader(bytes);
        int format = in.next();
        if (format != FORMAT) {
            throw new IllegalArgumentException("slots: format " + format + " (expected: " + FORMAT + ")");
        }
        int bits = in.next();
        int m = SlotTable.slotCountFor(n);
        if (bits != Integer.numberOfTrailingZeros(m)) {
            throw new IllegalArgumentException("slots: 2^" + bits + " slots (expected: " + m + " for " + n
                    + " engines)");
        }
        int declared = in.varint();
        if (declared != n) {
            throw new IllegalArgumentException("slots: " + declared + " engines (expected: " + n
                    + ", one per positive weight)");
        }
        SlotRuns runs = new SlotRuns(bytes.length / 2);
        int prev = 0;
        for (int s = 0; s < m; ) {
            int z = in.varint();
            int j = prev + ((z >>> 1) ^ -(z & 1));
            int run = in.varint();
            if (j < 0 || j >= n) {
                throw new IllegalArgumentException("slots: slot " + s + " owned by engine " + j
                        + " (expected: in [0, " + n + "))");
            }
            if (run < 1 || run > m - s) {
                throw new IllegalArgumentException("slots: run of " + run + " slots at slot " + s
                        + " (expected: in [1, " + (m - s) + "])");
            }
            runs.add(j, run);
            counts[j] += run;
            s += run;
            prev = j;
        }
        if (!in.atEnd()) {
            throw new IllegalArgumentException("slots: " + in.remaining() + " bytes after the last slot"
                    + " (expected: none)");
        }
        return runs;
    }

    /**
     * Checks that every engine holds within one slot of its exact share {@code M·w/total} of the table (none for
     * weight 0), as any table a control plane builds does.
     *
     * @throws IllegalArgumentException e.g.
     *                                  {@code "slots: engine 3 holds 17 slots (expected: 24 ± 1 for weight 0.0059)"}
     */
    public static void checkCounts(List<String> ids, double[] weights, double total, int[] counts) {
        int n = ids.size();
        int m = SlotTable.slotCountFor(n);
        for (int j = 0; j < n; j++) {
            double exact = weights[j] / total * m;
            if (weights[j] == 0 ? counts[j] != 0 : !(Math.abs(counts[j] - exact) < 1 + 1e-9)) {
                throw new IllegalArgumentException("slots: engine " + j + " (" + ids.get(j) + ") holds " + counts[j]
                        + " slots (expected: " + Math.round(exact) + " ± 1 for weight " + weights[j] / total + ")");
            }
        }
    }

    /** A growable byte array: what {@code ByteArrayOutputStream} does without a lock per byte. */
    private static final class Bytes {
        private byte[] b;
        private int size;

        Bytes(int capacity) {
            b = new byte[capacity];
        }

        void write(int v) {
            if (size == b.length) {
                b = Arrays.copyOf(b, size * 2);
            }
            b[size++] = (byte) v;
        }

        void varint(int v) {
            while ((v & ~0x7F) != 0) {
                write((v & 0x7F) | 0x80);
                v >>>= 7;
            }
            write(v);
        }

        String base64() {
            return Base64.getUrlEncoder().withoutPadding().encodeToString(Arrays.copyOf(b, size));
        }
    }

    /** Reads bytes and varints; a read past the end is a truncated table. */
    private static final class Reader {
        private final byte[] b;
        private int at;

        Reader(byte[] b) {
            this.b = b;
        }

        int next() {
            if (at >= b.length) {
                throw new IllegalArgumentException("slots: truncated after " + b.length + " bytes (expected: "
                        + "runs covering every slot)");
            }
            return b[at++] & 0xFF;
        }

        int varint() {
            int v = 0;
            for (int shift = 0; shift < 35; shift += 7) {
                int x = next();
                v |= (x & 0x7F) << shift;
                if ((x & 0x80) == 0) {
                    return v;
                }
            }
            throw new IllegalArgumentException("slots: a number longer than 5 bytes at byte " + at
                    + " (expected: a varint)");
        }

        boolean atEnd() {
            return at == b.length;
        }

        int remaining() {
            return b.length - at;
        }
    }
}
