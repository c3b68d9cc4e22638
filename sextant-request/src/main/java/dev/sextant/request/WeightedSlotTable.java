package dev.sextant.request;

import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A slot table: {@code M = 2^b} slots, each owned by one engine; a key's first choice is the owner
 * of slot {@code top b bits of mix(key)}, its later choices the owners of further independent probes
 * {@code mix(key + i·φ)} with repeats skipped, then the remaining positive-weight engines in a
 * key-rotated order.
 *
 * <p>Implementation note. Why a table and why rebalanced from history, by measurement
 * ({@code SelectorBenchmark}, and {@code SlotTableTest} for disruption):
 * <ul>
 *   <li>Weighted rendezvous hashing (score {@code -ln(u_j)/w_j}, Schindelhauer and Schomaker 2005; the
 *   exponential race that P-MinHash also uses) gives exact shares with no state but costs O(n) per key:
 *   hundreds of ns at 1,000 engines and microseconds at 10,000, against a budget of 150 ns. Worse, it
 *   is a function of the weights alone, and Moulton and Jiang (2018, "Maximally consistent sampling and
 *   the Jaccard index of probability distributions") show that no such memoryless scheme can beat its
 *   collision probability J_P on every pair of weight vectors: when many weights change at once it
 *   moves well over the total variation (TV) distance (we measured 1.3–1.5× on random perturbations).</li>
 *   <li>A plain ring with virtual nodes (Karger et al. 1997) is O(log(n·v)) per key with binary search
 *   and its shares are only as good as its virtual-node count; weighted Maglev (Eisenbud et al. 2016)
 *   is O(1) but its turn-based fill reshuffles slots well beyond TV on a weight change.</li>
 *   <li>A slot table is O(1) (one hash, one array read: tens of ns at any engine count) and its shares
 *   are exact to 1/M. Moving the minimum number of keys then needs history: {@link #rebalance} lets
 *   every engine keep min(old count, new count) of its own slots and hands only the surplus slots to
 *   engines that need more, so the keys moved are exactly the TV distance between the quantized
 *   shares (≤ TV + n/(2M)). The result is a deterministic function of the previous table and the new
 *   weights.</li>
 * </ul>
 * Slot counts follow the largest remainder method (Hamilton), ties broken by engine index, so
 * quantization error per engine is below 1/M. M is the smallest power of two ≥ 32 slots per engine
 * (at least 4,096, at most 2^22), so at 1,000 engines M = 32,768 and at 10,000, M = 2^19. Why 32: the
 * rounding of slot counts adds to the keys moved, most when changes are small; with ±2% changes to
 * 1,000 weights, moved/TV was at most 1.07 with 16 slots per engine, 1.05 with 32 and 1.05 with 64
 * (1.18 with 16 or 32 at 100 engines, where the 4,096-slot floor applies), and every slot costs time
 * at swap.
 */
final class WeightedSlotTable implements SlotTable {
    /** Probes into the table before the key's order continues with a rotated list of the rest. */
    static final int PROBES = 32;
    static final int MAX_ENGINES = 65_535;
    private static final int MIN_BITS = 12;
    private static final int MAX_BITS = 22;
    private static final char FREE = Character.MAX_VALUE;

    private final List<String> ids;
    private final char[] owner;
    private final int shift;
    private final int[] counts;
    /** Engines with positive weight, ascending index: the key's order ends with these. */
    private final int[] positive;

    private WeightedSlotTable(List<String> ids, char[] owner, int[] counts, int[] positive) {
        this.ids = ids;
        this.owner = owner;
        this.shift = 64 - Integer.numberOfTrailingZeros(owner.length);
        this.counts = counts;
        this.positive = positive;
    }

    static WeightedSlotTable build(WeightedSlotTable previous, List<String> engineIds, double[] weights) {
        return build(previous, engineIds, weights, null);
    }

    /** Slots of a table over {@code n} engines: a power of two ≥ 32·n, within [2^12, 2^22]. */
    static int slotCountFor(int n) {
        return 1 << Math.max(MIN_BITS, Math.min(MAX_BITS, 64 - Long.numberOfLeadingZeros(32L * n - 1)));
    }

    /** As {@link #build(WeightedSlotTable, List, double[])}, with the slot counts already computed (or null). */
    static WeightedSlotTable build(WeightedSlotTable previous, List<String> engineIds, double[] weights,
                                   int[] targetCounts) {
        List<String> ids = List.copyOf(engineIds);
        int n = ids.size();
        if (weights.length != n) {
            throw new IllegalArgumentException("weights: " + weights.length + " values for " + n
                    + " engines (expected: one weight per engine)");
        }
        if (n > MAX_ENGINES) {
            throw new IllegalArgumentException("engineIds: " + n + " engines (expected: <= " + MAX_ENGINES + ")");
        }
        double total = 0;
        int positiveCount = 0;
        for (int i = 0; i < n; i++) {
            double w = weights[i];
            if (!(w >= 0) || Double.isInfinite(w)) {
                throw new IllegalArgumentException("weights[" + i + "]: " + w + " (expected: a finite number >= 0)");
            }
            total += w;
            if (w > 0) {
                positiveCount++;
            }
        }
        if (!(total > 0)) {
            throw new IllegalArgumentException("weights: all zero (expected: at least one positive weight)");
        }
        int[] positive = new int[positiveCount];
        for (int i = 0, p = 0; i < n; i++) {
            if (weights[i] > 0) {
                positive[p++] = i;
            }
        }
        int m = slotCountFor(n);
        int[] target = targetCounts != null ? targetCounts : largestRemainder(weights, total, m);

        char[] owner = new char[m];
        int[] counts = new int[n];
        if (previous == null) {
            // No history: consecutive blocks in engine order.
            for (int j = 0, s = 0; j < n; j++) {
                Arrays.fill(owner, s, s + target[j], (char) j);
                s += target[j];
                counts[j] = target[j];
            }
            return new WeightedSlotTable(ids, owner, counts, positive);
        }
        int free = inherit(previous, ids, owner, counts);
        // Release the surplus of every engine that holds more than its target, from the top down,
        // and remember the freed slots. excess[j] > 0 marks an engine with surplus.
        int[] excess = new int[n];
        int surplus = 0;
        for (int j = 0; j < n; j++) {
            excess[j] = counts[j] - target[j];
            surplus += Math.max(0, excess[j]);
        }
        int[] freed = new int[free + surplus];
        int f = 0;
        for (int s = m - 1; s >= 0 && f < freed.length; s--) {
            char j = owner[s];
            if (j == FREE) {
                freed[f++] = s;
            } else if (excess[j] > 0) {
                excess[j]--;
                counts[j]--;
                owner[s] = FREE;
                freed[f++] = s;
            }
        }
        // Hand the free slots, bottom up, to engines below their target in index order.
        int j = 0;
        for (int i = f - 1; i >= 0; i--) {
            while (counts[j] >= target[j]) {
                j++;
            }
            owner[freed[i]] = (char) j;
            counts[j]++;
        }
        return new WeightedSlotTable(ids, owner, counts, positive);
    }

    /** Copies the previous owners into {@code owner}; returns how many slots were left free. */
    private static int inherit(WeightedSlotTable previous, List<String> ids, char[] owner, int[] counts) {
        char[] remap = new char[previous.ids.size()];
        boolean identity = previous.ids.equals(ids);
        if (!identity) {
            Map<String, Integer> index = new HashMap<>(ids.size() * 2);
            for (int i = 0; i < ids.size(); i++) {
                index.put(ids.get(i), i);
            }
            for (int i = 0; i < remap.length; i++) {
                Integer now = index.get(previous.ids.get(i));
                remap[i] = now == null ? FREE : (char) (int) now;
            }
        }
        int oldBits = Integer.numberOfTrailingZeros(previous.owner.length);
        int newBits = Integer.numberOfTrailingZeros(owner.length);
        if (identity && oldBits == newBits) {
            System.arraycopy(previous.owner, 0, owner, 0, owner.length);
            System.arraycopy(previous.counts, 0, counts, 0, counts.length);
            return 0;
        }
        int free = 0;
        for (int s = 0; s < owner.length; s++) {
            // A slot is the top bits of the mixed key: growing the table splits a slot in two halves
            // that keep its owner, shrinking it keeps the owner of the lower half.
            int old = newBits >= oldBits ? s >>> (newBits - oldBits) : s << (oldBits - newBits);
            char j = identity ? previous.owner[old] : remap[previous.owner[old]];
            owner[s] = j;
            if (j != FREE) {
                counts[j]++;
            } else {
                free++;
            }
        }
        return free;
    }

    /** Integer slot counts summing to {@code m}, each within 1 of {@code m·w/total} (Hamilton's method). */
    static int[] largestRemainder(double[] weights, double total, int m) {
        int n = weights.length;
        int[] counts = new int[n];
        double[] rem = new double[n];
        long assigned = 0;
        for (int i = 0; i < n; i++) {
            double exact = weights[i] / total * m;
            counts[i] = (int) Math.floor(exact);
            rem[i] = exact - counts[i];
            assigned += counts[i];
        }
        int left = (int) (m - assigned);
        if (left > 0) {
            // Largest remainders first, ties by lower index: sort (remainder, index) packed in a long,
            // remainder in the top 46 bits, the complement of the index in the low 17.
            long[] order = new long[n];
            for (int i = 0; i < n; i++) {
                order[i] = weights[i] > 0 ? ((long) (rem[i] * 0x1.0p46) << 17) | (0x1FFFF - i) : -1L;
            }
            Arrays.sort(order);
            for (int k = n - 1; k >= 0 && left > 0; k--) {
                if (order[k] >= 0) {
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

    private static final String ENCODING = "st1:";

    @Override
    public String encode() {
        byte[] bytes = new byte[owner.length * 2];
        for (int s = 0; s < owner.length; s++) {
            bytes[2 * s] = (byte) (owner[s] >>> 8);
            bytes[2 * s + 1] = (byte) owner[s];
        }
        return ENCODING + Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    static WeightedSlotTable decode(List<String> engineIds, double[] weights, String encoded) {
        if (encoded == null || !encoded.startsWith(ENCODING)) {
            throw new IllegalArgumentException("slots: " + (encoded == null ? "missing" : "unknown encoding")
                    + " (expected: text starting with '" + ENCODING + "')");
        }
        WeightedSlotTable shape = build(null, engineIds, weights); // validates ids and weights
        byte[] bytes;
        try {
            bytes = Base64.getUrlDecoder().decode(encoded.substring(ENCODING.length()));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("slots: not base64url (" + e.getMessage() + ")", e);
        }
        int m = shape.owner.length;
        if (bytes.length != 2 * m) {
            throw new IllegalArgumentException("slots: " + bytes.length / 2 + " slots (expected: " + m + " for "
                    + engineIds.size() + " engines)");
        }
        char[] owner = new char[m];
        int[] counts = new int[engineIds.size()];
        for (int s = 0; s < m; s++) {
            char j = (char) (((bytes[2 * s] & 0xFF) << 8) | (bytes[2 * s + 1] & 0xFF));
            if (j >= counts.length) {
                throw new IllegalArgumentException("slots[" + s + "]: engine " + (int) j + " (expected: < "
                        + counts.length + ")");
            }
            owner[s] = j;
            counts[j]++;
        }
        for (int j = 0; j < counts.length; j++) {
            if (counts[j] != shape.counts[j]) {
                throw new IllegalArgumentException("slots: engine '" + engineIds.get(j) + "' holds " + counts[j]
                        + " slots (expected: " + shape.counts[j] + " from its weight)");
            }
        }
        return new WeightedSlotTable(shape.ids, owner, counts, shape.positive);
    }

    @Override
    public SlotTable rebalance(List<String> engineIds, double[] weights) {
        return build(this, engineIds, weights);
    }

    @Override
    public int first(long key) {
        return owner[(int) (Hashing.mix(key) >>> shift)];
    }

    /**
     * The engine at position {@code i} of the key's raw probe sequence, repeats included: positions
     * below {@link #PROBES} are table probes, the rest walk the positive-weight engines from a
     * key-dependent start. Length {@link #probeLength()}.
     */
    int probe(long key, int i) {
        if (i < PROBES) {
            return owner[(int) (Hashing.mix(key + i * Hashing.GOLDEN) >>> shift)];
        }
        int n = positive.length;
        int start = (int) Long.remainderUnsigned(Hashing.mix(key ^ Hashing.TAIL_SALT), n);
        int t = start + i - PROBES;
        return positive[t >= n ? t - n : t];
    }

    int probeLength() {
        return PROBES + positive.length;
    }

    /**
     * True when position {@code i} repeats an engine seen at an earlier position. The tail positions
     * are distinct among themselves, so only the table probes need checking: O(PROBES) at most.
     */
    boolean repeats(long key, int i, int engine) {
        for (int k = 0, end = Math.min(i, PROBES); k < end; k++) {
            if (probe(key, k) == engine) {
                return true;
            }
        }
        return false;
    }

    /** Number of engines with positive weight: the length of every key's order. */
    int orderLength() {
        return positive.length;
    }

    @Override
    public int fill(long key, int[] out) {
        int want = Math.min(out.length, positive.length);
        int k = 0;
        for (int i = 0, len = probeLength(); i < len && k < want; i++) {
            int e = probe(key, i);
            if (!contains(out, k, e)) {
                out[k++] = e;
            }
        }
        return k;
    }

    private static boolean contains(int[] a, int len, int v) {
        for (int i = 0; i < len; i++) {
            if (a[i] == v) {
                return true;
            }
        }
        return false;
    }

    @Override
    public List<String> engineIds() {
        return ids;
    }

    @Override
    public int slotCount() {
        return owner.length;
    }

    @Override
    public int slots(int index) {
        return counts[index];
    }
}
