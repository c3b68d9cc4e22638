package dev.sextant.request;

import java.util.Arrays;
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
 * quantization error per engine is below 1/M. M is the smallest power of two ≥ 64 slots per engine
 * (at least 4,096, at most 2^22), so at 1,000 engines M = 65,536 and at 10,000, M = 2^20.
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
        int bits = Math.max(MIN_BITS, Math.min(MAX_BITS, 64 - Long.numberOfLeadingZeros(64L * n - 1)));
        int m = 1 << bits;
        int[] target = largestRemainder(weights, total, m);

        char[] owner = new char[m];
        Arrays.fill(owner, FREE);
        int[] counts = new int[n];
        if (previous != null) {
            inherit(previous, ids, owner, counts);
            // Release the surplus of every engine that holds more than its target, from the top down.
            for (int s = m - 1; s >= 0; s--) {
                char j = owner[s];
                if (j != FREE && counts[j] > target[j]) {
                    owner[s] = FREE;
                    counts[j]--;
                }
            }
        }
        // Hand free slots, bottom up, to engines below their target in index order.
        int j = 0;
        for (int s = 0; s < m; s++) {
            if (owner[s] != FREE) {
                continue;
            }
            while (counts[j] >= target[j]) {
                j++;
            }
            owner[s] = (char) j;
            counts[j]++;
        }
        return new WeightedSlotTable(ids, owner, counts, positive);
    }

    /** Copies the previous owners of the slots, by engine id, resampling when the table size changed. */
    private static void inherit(WeightedSlotTable previous, List<String> ids, char[] owner, int[] counts) {
        Map<String, Integer> index = new HashMap<>(ids.size() * 2);
        for (int i = 0; i < ids.size(); i++) {
            index.put(ids.get(i), i);
        }
        int[] remap = new int[previous.ids.size()];
        for (int i = 0; i < remap.length; i++) {
            Integer now = index.get(previous.ids.get(i));
            remap[i] = now == null ? -1 : now;
        }
        int oldBits = Integer.numberOfTrailingZeros(previous.owner.length);
        int newBits = Integer.numberOfTrailingZeros(owner.length);
        for (int s = 0; s < owner.length; s++) {
            // A slot is the top bits of the mixed key: growing the table splits a slot in two halves
            // that keep its owner, shrinking it keeps the owner of the lower half.
            int old = newBits >= oldBits ? s >>> (newBits - oldBits) : s << (oldBits - newBits);
            int j = remap[previous.owner[old]];
            if (j >= 0) {
                owner[s] = (char) j;
                counts[j]++;
            }
        }
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
            Integer[] order = new Integer[n];
            for (int i = 0; i < n; i++) {
                order[i] = i;
            }
            Arrays.sort(order, (a, b) -> {
                int c = Double.compare(rem[b], rem[a]);
                return c != 0 ? c : Integer.compare(a, b);
            });
            for (int k = 0; k < left; k++) {
                int i = order[k % n];
                if (weights[i] > 0) {
                    counts[i]++;
                } else {
                    left++;
                }
            }
        } else if (left < 0) {
            // Rounding of m·w/total above m: take back from the largest counts (cannot happen with
            // floor, kept so the invariant Σ counts = m never depends on floating point).
            for (int k = 0; left < 0; k = (k + 1) % n) {
                if (counts[k] > 0) {
                    counts[k]--;
                    left++;
                }
            }
        }
        return counts;
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
