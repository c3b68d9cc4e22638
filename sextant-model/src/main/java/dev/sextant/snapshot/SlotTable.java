package dev.sextant.snapshot;

import dev.sextant.hashing.SplitMix64;
import java.util.Arrays;
import java.util.List;

/**
 * Weighted consistent hashing of keys over one class's engines: for every 64-bit key an ordered
 * sequence of distinct engines, the key's own preference order. The first engine is drawn with
 * probability equal to the engine's weight (to within 1/M); the rest is the order the key falls back in
 * (bounded load, retries). The sequence is a function of the table and the key alone, so two gateways
 * holding the same table choose the same engines for the same key. The control plane's policy builds the table
 * (from the previous snapshot's table, to move as few keys as possible) and publishes it in
 * {@link Route#slots()}; the data plane reads it. This class is the reading side: lookup, a table built without
 * history ({@link #of}), and the text form ({@link #encode}, {@link #decode}, through {@link SlotCodec}); the
 * rebalancing from history belongs to the policy module.
 *
 * <p>The table: {@code M = 2^b} slots, each owned by one engine; a key's first choice is the owner of
 * slot {@code top b bits of mix(key)}, its later choices the owners of further independent probes
 * {@code mix(key + i·φ)} with repeats skipped, then the remaining positive-weight engines in a
 * key-rotated order. Instances are immutable; {@link #first}, {@link #fill} and {@link #probe} do not
 * allocate.
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
 *   are exact to 1/M. Moving the minimum number of keys then needs history: the policy's rebalance lets
 *   every engine keep min(old count, new count) of its own slots and hands only the surplus slots to
 *   engines that need more, so the keys moved are exactly the TV distance between the quantized
 *   shares (≤ TV + n/(2M)). The result is a deterministic function of the previous table and the new
 *   weights; because it needs history, the control plane computes it and the snapshot carries it.</li>
 * </ul>
 * Slot counts follow the largest remainder method (Hamilton), ties broken by engine index, so
 * quantization error per engine is below 1/M. M is the smallest power of two ≥ 64 slots per engine
 * (at least 4,096, at most 2^22), so at 1,000 engines M = 65,536 and at 10,000, M = 2^20.
 *
 * <p>Encoding ({@link #encode}, {@link #decode}): runs of slots with one owner, in the format
 * {@link SlotCodec} states. A table built without history has n runs; each rebalance adds about as many runs as
 * engines whose count changed.
 */
public final class SlotTable implements KeyOrder {
    /** Probes into the table before the key's order continues with a rotated list of the rest. */
    public static final int PROBES = 32;
    /** Most engines a table can hold. */
    public static final int MAX_ENGINES = 65_535;
    private static final int MIN_BITS = 12;
    private static final int MAX_BITS = 22;
    private static final long TAIL_SALT = 0xD1B54A32D192ED03L;

    private final List<String> ids;
    private final char[] owner;
    private final int shift;
    private final int[] counts;
    /** Engines with positive weight, ascending index: the key's order ends with these. */
    private final int[] positive;

    private SlotTable(List<String> ids, char[] owner, int[] counts, int[] positive) {
        this.ids = ids;
        this.owner = owner;
        this.shift = 64 - Integer.numberOfTrailingZeros(owner.length);
        this.counts = counts;
        this.positive = positive;
    }

    /**
     * A table for {@code engineIds} with {@code weights}, built without history: engines get slot
     * counts proportional to their weights ({@link SlotCodec#slotCounts}, largest remainder), in consecutive
     * blocks in the order given. Deterministic: equal arguments give equal tables.
     *
     * @param engineIds distinct engine ids, at most {@value #MAX_ENGINES}
     * @param weights   one weight per engine, each finite and ≥ 0, at least one positive; need not sum
     *                  to 1 (they are normalized)
     */
    public static SlotTable of(List<String> engineIds, double[] weights) {
        List<String> ids = List.copyOf(engineIds);
        int n = ids.size();
        double total = SlotCodec.checkWeights(n, weights);
        int m = slotCountFor(n);
        int[] target = SlotCodec.slotCounts(weights, total, m);
        char[] owner = new char[m];
        for (int j = 0, s = 0; j < n; j++) {
            Arrays.fill(owner, s, s + target[j], (char) j);
            s += target[j];
        }
        return new SlotTable(ids, owner, target, positive(weights));
    }

    /** Slots of a table over {@code n} engines: a power of two ≥ 64·n, within [2^12, 2^22]. */
    public static int slotCountFor(int n) {
        return 1 << Math.max(MIN_BITS, Math.min(MAX_BITS, 64 - Long.numberOfLeadingZeros(64L * Math.max(1, n) - 1)));
    }

    private static int[] positive(double[] weights) {
        int count = 0;
        for (double w : weights) {
            count += w > 0 ? 1 : 0;
        }
        int[] positive = new int[count];
        for (int i = 0, p = 0; i < weights.length; i++) {
            if (weights[i] > 0) {
                positive[p++] = i;
            }
        }
        return positive;
    }

    // ------------------------------------------------------------------ encoding

    /**
     * This table as text for {@link Route#slots()}, in {@link SlotCodec}'s format. Equal tables give equal
     * text. About 2–3 characters per run of slots; n runs for a table built without history.
     */
    public String encode() {
        SlotRuns runs = new SlotRuns(ids.size());
        for (int s = 0; s < owner.length; ) {
            int j = owner[s];
            int end = s + 1;
            while (end < owner.length && owner[end] == j) {
                end++;
            }
            runs.add(j, end - s);
            s = end;
        }
        return SlotCodec.encode(Integer.numberOfTrailingZeros(owner.length), ids.size(), runs);
    }

    /**
     * The table {@code encoded} describes, checked against the route it belongs to: well-formed, over
     * exactly {@code engineIds}, with {@link #slotCountFor} slots, and every engine holding within one
     * slot of its exact share {@code M·w/Σw} (an engine with weight 0 holds none). A table that passes
     * routes every key as the control plane meant, whoever built it.
     *
     * @param encoded   text from {@link #encode}
     * @param engineIds the engines index i refers to, in order
     * @param weights   one weight per engine, as in {@link #of}
     * @throws IllegalArgumentException naming what is wrong, e.g.
     *                                  {@code "slots: engine 3 holds 17 slots (expected: 24 ± 1 for weight 0.0059)"}
     */
    public static SlotTable decode(String encoded, List<String> engineIds, double[] weights) {
        List<String> ids = List.copyOf(engineIds);
        int n = ids.size();
        int[] counts = new int[n];
        double total = SlotCodec.checkWeights(n, weights);
        SlotRuns runs = SlotCodec.decode(encoded, n, counts);
        SlotCodec.checkCounts(ids, weights, total, counts);
        char[] owner = new char[slotCountFor(n)];
        for (int r = 0, s = 0; r < runs.size(); r++) {
            Arrays.fill(owner, s, s + runs.length(r), (char) runs.owner(r));
            s += runs.length(r);
        }
        return new SlotTable(ids, owner, counts, positive(weights));
    }

    // ------------------------------------------------------------------ selection (request path)

    /** The index (into {@link #engineIds()}) of the key's first choice. Allocation-free, O(1). */
    @Override
    public int first(long key) {
        return owner[(int) (SplitMix64.mix(key) >>> shift)];
    }

    /**
     * The engine at position {@code i} of the key's raw probe sequence, repeats included: positions
     * below {@link #PROBES} are table probes, the rest walk the positive-weight engines from a
     * key-dependent start. {@code i} in [0, {@link #probeLength()}). Allocation-free.
     */
    @Override
    public int probe(long key, int i) {
        if (i < PROBES) {
            return owner[(int) (SplitMix64.mix(key + i * SplitMix64.GOLDEN) >>> shift)];
        }
        return positive[tail(key, i, positive.length)];
    }

    /**
     * The position, among {@code n} engines, of probe {@code i} ≥ {@link #PROBES} of the key's sequence: the tail
     * walks every engine once from a key-dependent start, the same walk for a {@link GroupedTable}'s engines.
     */
    static int tail(long key, int i, int n) {
        int start = (int) Long.remainderUnsigned(SplitMix64.mix(key ^ TAIL_SALT), n);
        int t = start + i - PROBES;
        return t >= n ? t - n : t;
    }

    /** Number of engines with positive weight: the length of every key's order. */
    @Override
    public int orderLength() {
        return positive.length;
    }

    /** The engines, in the order given when the table was built; indices refer to this list. */
    @Override
    public List<String> engineIds() {
        return ids;
    }

    /** Number of slots, a power of two; an engine's share of first choices is its slots / this. */
    public int slotCount() {
        return owner.length;
    }

    /** The index (into {@link #engineIds()}) of the engine that holds slot {@code s}, in [0, {@link #slotCount()}). */
    public int owner(int s) {
        return owner[s];
    }

    /** Number of slots engine {@code index} holds. */
    public int slots(int index) {
        return counts[index];
    }

    /** True when both tables route every key the same way: same engines, same owner of every slot. */
    public boolean sameAs(SlotTable other) {
        return other == this || other != null && ids.equals(other.ids) && Arrays.equals(owner, other.owner)
                && Arrays.equals(positive, other.positive);
    }
}
