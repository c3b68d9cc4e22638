package dev.sextant.snapshot;

import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Weighted consistent hashing of keys over one class's engines: for every 64-bit key an ordered
 * sequence of distinct engines, the key's own preference order. The first engine is drawn with
 * probability equal to the engine's weight (to within 1/M); the rest is the order the key falls back in
 * (bounded load, retries). The sequence is a function of the table and the key alone, so two gateways
 * holding the same table choose the same engines for the same key. The control plane builds the table
 * (from the previous snapshot's table, to move as few keys as possible) and publishes it in
 * {@link Route#slots()}; the data plane reads it.
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
 *   are exact to 1/M. Moving the minimum number of keys then needs history: {@link #rebalance} lets
 *   every engine keep min(old count, new count) of its own slots and hands only the surplus slots to
 *   engines that need more, so the keys moved are exactly the TV distance between the quantized
 *   shares (≤ TV + n/(2M)). The result is a deterministic function of the previous table and the new
 *   weights; because it needs history, the control plane computes it and the snapshot carries it.</li>
 * </ul>
 * Slot counts follow the largest remainder method (Hamilton), ties broken by engine index, so
 * quantization error per engine is below 1/M. M is the smallest power of two ≥ 64 slots per engine
 * (at least 4,096, at most 2^22), so at 1,000 engines M = 65,536 and at 10,000, M = 2^20.
 *
 * <p>Encoding ({@link #encode}, {@link #decode}): URL-safe base64 without padding of the bytes
 * {@code 1} (format), {@code b}, varint n, then the slots in order as runs: for each maximal run of
 * slots with one owner, the zigzag varint of (owner − previous run's owner) and the varint run length.
 * The engines themselves are not repeated: index i is the i-th of the engine list the table was built
 * with (for a route, its positive weights in id order). A table built without history has n runs; each
 * rebalance adds about as many runs as engines whose count changed.
 */
public final class SlotTable implements KeyOrder {
    /** Probes into the table before the key's order continues with a rotated list of the rest. */
    public static final int PROBES = 32;
    /** Most engines a table can hold. */
    public static final int MAX_ENGINES = 65_535;
    private static final int MIN_BITS = 12;
    private static final int MAX_BITS = 22;
    private static final int FORMAT = 1;
    private static final char FREE = Character.MAX_VALUE;
    /** 2^64 / φ, the SplitMix64 increment; successive probes of one key step by it. */
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;
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
     * counts proportional to their weights (largest remainder), in consecutive blocks in the order
     * given. Deterministic: equal arguments give equal tables.
     *
     * @param engineIds distinct engine ids, at most {@value #MAX_ENGINES}
     * @param weights   one weight per engine, each finite and ≥ 0, at least one positive; need not sum
     *                  to 1 (they are normalized)
     */
    public static SlotTable of(List<String> engineIds, double[] weights) {
        return build(null, engineIds, weights);
    }

    /**
     * The table for new weights that keeps as many slots as possible on the engine that held them in
     * this table: an engine keeps min(old, new) of its slots, so the fraction of keys whose first
     * choice changes is the total variation distance between the old and the new slot shares, the
     * minimum any scheme can move. Deterministic: equal tables and arguments give equal tables.
     *
     * @param engineIds distinct engine ids (engines may come and go), at most {@value #MAX_ENGINES}
     * @param weights   as in {@link #of}
     */
    public SlotTable rebalance(List<String> engineIds, double[] weights) {
        return build(this, engineIds, weights);
    }

    /** Slots of a table over {@code n} engines: a power of two ≥ 64·n, within [2^12, 2^22]. */
    public static int slotCountFor(int n) {
        return 1 << Math.max(MIN_BITS, Math.min(MAX_BITS, 64 - Long.numberOfLeadingZeros(64L * Math.max(1, n) - 1)));
    }

    private static SlotTable build(SlotTable previous, List<String> engineIds, double[] weights) {
        List<String> ids = List.copyOf(engineIds);
        int n = ids.size();
        double total = checkWeights(n, weights);
        int[] positive = positive(weights);
        int m = slotCountFor(n);
        int[] target = largestRemainder(weights, total, m);

        char[] owner = new char[m];
        int[] counts = new int[n];
        if (previous == null) {
            // No history: consecutive blocks in engine order.
            for (int j = 0, s = 0; j < n; j++) {
                Arrays.fill(owner, s, s + target[j], (char) j);
                s += target[j];
                counts[j] = target[j];
            }
            return new SlotTable(ids, owner, counts, positive);
        }
        inherit(previous, ids, owner, counts);
        release(owner, counts, target);
        assign(owner, counts, target);
        return new SlotTable(ids, owner, counts, positive);
    }

    /**
     * Frees the surplus slots of every engine holding more than its target. Which of its slots an
     * engine gives up does not change how many keys move, but it decides how fragmented the table
     * becomes, and so how long its encoding grows over many rebalances: an engine gives up its
     * shortest runs of slots whole first (highest first among equal lengths), then the top of the
     * shortest run longer than what is left. Fragments left by earlier rebalances are thus the first
     * to go, and the number of runs stays near a small multiple of the engine count.
     */
    private static void release(char[] owner, int[] counts, int[] target) {
        int m = owner.length;
        // One long per run of a surplus engine: owner (16 bits) | length (23) | complement of start (22).
        long[] runs = new long[64];
        int r = 0;
        for (int s = 0; s < m; ) {
            char j = owner[s];
            int end = s + 1;
            while (end < m && owner[end] == j) {
                end++;
            }
            if (j != FREE && counts[j] > target[j]) {
                if (r == runs.length) {
                    runs = Arrays.copyOf(runs, r * 2);
                }
                runs[r++] = ((long) j << 45) | ((long) (end - s) << 22) | (m - 1 - s);
            }
            s = end;
        }
        Arrays.sort(runs, 0, r);
        for (int i = 0; i < r; i++) {
            int j = (int) (runs[i] >>> 45);
            int len = (int) ((runs[i] >>> 22) & 0x7FFFFF);
            int start = m - 1 - (int) (runs[i] & 0x3FFFFF);
            int excess = counts[j] - target[j];
            if (excess <= 0) {
                continue;
            }
            int give = Math.min(len, excess);
            Arrays.fill(owner, start + len - give, start + len, FREE);
            counts[j] -= give;
        }
    }

    /**
     * Hands the free slots to engines below their target. First, a free run goes to the engine just
     * below it or just above it if that engine needs slots (its run grows, no new run appears); then
     * what is left, bottom up, to the engines still short, in index order.
     */
    private static void assign(char[] owner, int[] counts, int[] target) {
        int m = owner.length;
        for (int s = 0; s < m; ) {
            if (owner[s] != FREE) {
                s++;
                continue;
            }
            int end = s + 1;
            while (end < m && owner[end] == FREE) {
                end++;
            }
            if (s > 0) {
                char below = owner[s - 1];
                int give = Math.min(end - s, target[below] - counts[below]);
                if (give > 0) {
                    Arrays.fill(owner, s, s + give, below);
                    counts[below] += give;
                }
            }
            if (end < m) {
                char above = owner[end];
                int from = s;
                while (from < end && owner[from] != FREE) {
                    from++;
                }
                int give = Math.min(end - from, target[above] - counts[above]);
                if (give > 0) {
                    Arrays.fill(owner, end - give, end, above);
                    counts[above] += give;
                }
            }
            s = end;
        }
        int j = 0;
        for (int s = 0; s < m; s++) {
            if (owner[s] == FREE) {
                while (counts[j] >= target[j]) {
                    j++;
                }
                owner[s] = (char) j;
                counts[j]++;
            }
        }
    }

    /** Validates {@code weights} for {@code n} engines and returns their sum. */
    private static double checkWeights(int n, double[] weights) {
        if (weights.length != n) {
            throw new IllegalArgumentException("weights: " + weights.length + " values for " + n
                    + " engines (expected: one weight per engine)");
        }
        if (n > MAX_ENGINES) {
            throw new IllegalArgumentException("engineIds: " + n + " engines (expected: <= " + MAX_ENGINES + ")");
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

    /** Copies the previous owners into {@code owner}, leaving the slots of engines that left free. */
    private static void inherit(SlotTable previous, List<String> ids, char[] owner, int[] counts) {
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
            return;
        }
        for (int s = 0; s < owner.length; s++) {
            // A slot is the top bits of the mixed key: growing the table splits a slot in two halves
            // that keep its owner, shrinking it keeps the owner of the lower half.
            int old = newBits >= oldBits ? s >>> (newBits - oldBits) : s << (oldBits - newBits);
            char j = identity ? previous.owner[old] : remap[previous.owner[old]];
            owner[s] = j;
            if (j != FREE) {
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

    // ------------------------------------------------------------------ encoding

    /**
     * This table as text for {@link Route#slots()}: see the class comment for the format. Equal tables
     * give equal text. About 2–3 characters per run of slots; n runs for a table built without history.
     */
    public String encode() {
        Bytes out = new Bytes(16 + 4 * ids.size());
        out.write(FORMAT);
        out.write(Integer.numberOfTrailingZeros(owner.length));
        out.varint(ids.size());
        int prev = 0;
        for (int s = 0; s < owner.length; ) {
            int j = owner[s];
            int end = s + 1;
            while (end < owner.length && owner[end] == j) {
                end++;
            }
            int delta = j - prev;
            out.varint((delta << 1) ^ (delta >> 31));
            out.varint(end - s);
            prev = j;
            s = end;
        }
        return out.base64();
    }

    /** The encoding of runs that cover all {@code 2^bits} slots, owners in [0, n): as {@link #encode}. */
    private static String encode(int bits, int n, SlotRuns runs) {
        Bytes out = new Bytes(16 + 3 * runs.size);
        out.write(FORMAT);
        out.write(bits);
        out.varint(n);
        int prev = 0;
        for (int r = 0; r < runs.size; r++) {
            int delta = runs.owner[r] - prev;
            out.varint((delta << 1) ^ (delta >> 31));
            out.varint(runs.length[r]);
            prev = runs.owner[r];
        }
        return out.base64();
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
        SlotRuns runs = parse(encoded, ids, weights, counts);
        char[] owner = new char[slotCountFor(n)];
        for (int r = 0, s = 0; r < runs.size; r++) {
            Arrays.fill(owner, s, s + runs.length[r], (char) runs.owner[r]);
            s += runs.length[r];
        }
        return new SlotTable(ids, owner, counts, positive(weights));
    }

    /**
     * The runs {@code encoded} describes, checked as {@link #decode} documents; fills {@code counts}
     * (slots per engine). Runs that the text splits in two with one owner are joined.
     */
    private static SlotRuns parse(String encoded, List<String> ids, double[] weights, int[] counts) {
        int n = ids.size();
        double total = checkWeights(n, weights);
        SlotRuns runs = parseRuns(encoded, n, counts);
        checkCounts(ids, weights, total, counts);
        return runs;
    }

    /** The runs {@code encoded} describes for a table over {@code n} engines, well-formed; fills {@code counts}. */
    private static SlotRuns parseRuns(String encoded, int n, int[] counts) {
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
        int m = slotCountFor(n);
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

    /** Every engine holds within one slot of its exact share of the table (none for weight 0). */
    private static void checkCounts(List<String> ids, double[] weights, double total, int[] counts) {
        int n = ids.size();
        int m = slotCountFor(n);
        for (int j = 0; j < n; j++) {
            double exact = weights[j] / total * m;
            if (weights[j] == 0 ? counts[j] != 0 : !(Math.abs(counts[j] - exact) < 1 + 1e-9)) {
                throw new IllegalArgumentException("slots: engine " + j + " (" + ids.get(j) + ") holds " + counts[j]
                        + " slots (expected: " + Math.round(exact) + " ± 1 for weight " + weights[j] / total + ")");
            }
        }
    }

    // ------------------------------------------------------------------ the control plane's shortcuts

    /**
     * {@code SlotTable.of(engineIds, weights).encode()}, without building the slot array: one run per
     * engine with a positive weight.
     */
    public static String encodedOf(List<String> engineIds, double[] weights) {
        return new Batch().encodedOf(engineIds, weights);
    }

    /**
     * {@code SlotTable.decode(previous, previousIds, previousWeights).rebalance(engineIds, weights).encode()},
     * the same text, computed on runs of slots instead of slots: time proportional to the number of runs
     * (a few per engine) and engines rather than to the number of slots. The control plane rebalances
     * every route of every snapshot this way.
     *
     * @throws IllegalArgumentException when {@code previous} fails {@link #decode}'s check, or when
     *                                  {@code weights} are invalid as in {@link #of}
     */
    public static String rebalanceEncoded(String previous, List<String> previousIds, double[] previousWeights,
                                          List<String> engineIds, double[] weights) {
        return new Batch().rebalanceEncoded(previous, previousIds, previousWeights, engineIds, weights);
    }

    /**
     * {@link SlotTable#encodedOf} and {@link SlotTable#rebalanceEncoded} for the routes of one snapshot, each
     * distinct table computed once. A table is a function of the previous table, the engines and their
     * integer slot counts only, and on a large fleet many routes share all three: the classes of one
     * model at one gateway cluster get the same shares, and weights that differ in their last bits give
     * the same counts (the L benchmark fleet's 3,072 routes have 694 distinct tables). Same results as
     * the static methods, same checks of every argument. The lists and arrays given must not change while
     * the batch is in use (it keys on them). Not thread-safe: one per snapshot being built.
     */
    public static final class Batch {
        private final Map<ParseKey, Parsed> parsed = new HashMap<>();
        private final Map<Object, String> built = new HashMap<>();
        private SortedEngineIds lastA;
        private SortedEngineIds lastB;
        private boolean lastSame;

        /** As {@link SlotTable#encodedOf}, for a route's weights (the positive ones, in engine-id order). */
        public String encodedOf(Map<String, Double> weights) {
            if (weights instanceof SortedWeights w && ranked(w)) {
                RankedIds ids = new RankedIds(w);
                int m = slotCountFor(ids.size());
                int[] target = largestRemainder(w.value, w.total, m);
                return built.computeIfAbsent(new RankedKey(null, ids, ids, target), k -> fresh(m, target));
            }
            return encodedOf(Route.positiveIds(weights), Route.positiveValues(weights));
        }

        /** As {@link SlotTable#encodedOf}. */
        public String encodedOf(List<String> engineIds, double[] weights) {
            return encoded(engineIds, weights, target -> new BuildKey(null, null, engineIds, target));
        }

        private String encoded(List<String> engineIds, double[] weights,
                               java.util.function.Function<int[], Object> key) {
            int n = engineIds.size();
            double total = checkWeights(n, weights);
            int m = slotCountFor(n);
            int[] target = largestRemainder(weights, total, m);
            return built.computeIfAbsent(key.apply(target), k -> fresh(m, target));
        }

        /** A table without history: one run per engine, in order. */
        private static String fresh(int m, int[] target) {
            SlotRuns runs = new SlotRuns(target.length);
            for (int j = 0; j < target.length; j++) {
                runs.add(j, target[j]);
            }
            return encode(Integer.numberOfTrailingZeros(m), target.length, runs);
        }

        /**
         * As {@link SlotTable#rebalanceEncoded}, for two routes' weights: the previous route's table
         * {@code previous} over its positive weights {@code previousWeights}, rebalanced to the positive
         * weights {@code weights}, both iterating in engine-id order as {@link Route#weights()} does.
         * Routes built by a policy ({@link Route#weights(SortedEngineIds, int[], double[])}) are keyed by
         * their ranks, which is most of what a large fleet's snapshot saves by batching.
         */
        public String rebalanceEncoded(String previous, Map<String, Double> previousWeights,
                                       Map<String, Double> weights) {
            if (previousWeights instanceof SortedWeights p && weights instanceof SortedWeights w && ranked(p)
                    && ranked(w)) {
                // the weights were checked when made (each in [0, 1], so the sums are finite)
                RankedIds previousIds = new RankedIds(p);
                RankedIds ids = new RankedIds(w);
                boolean sameIds = sameContent(p.ids, w.ids);
                return rebalance(previous, previousIds, p.value, p.total, ids, w.value, w.total,
                        target -> new RankedKey(previous, previousIds, ids, target),
                        () -> sameIds ? remap(p.rank, w.rank) : remap(previousIds, ids));
            }
            List<String> previousIds = Route.positiveIds(previousWeights);
            List<String> ids = Route.positiveIds(weights);
            return rebalanceEncoded(previous, previousIds, Route.positiveValues(previousWeights), ids,
                    Route.positiveValues(weights));
        }

        /**
         * As {@link SlotTable#rebalanceEncoded}, without remembering the table: for tables that no other route of
         * the snapshot shares (a grouped route's table over its groups), where looking a table up would cost
         * more than computing it. When the engines and their slot counts are those of {@code previous}, returns
         * {@code previous} itself (for a table this class encoded, the same text rebalancing would give).
         */
        public String rebalanceEncodedOnce(String previous, List<String> previousIds, double[] previousWeights,
                                           List<String> engineIds, double[] weights) {
            double previousTotal = checkWeights(previousIds.size(), previousWeights);
            double total = checkWeights(engineIds.size(), weights);
            return rebalance(previous, previousIds, previousWeights, previousTotal, engineIds, weights, total,
                    null, () -> remap(previousIds, engineIds));
        }

        /** As {@link SlotTable#rebalanceEncoded}. */
        public String rebalanceEncoded(String previous, List<String> previousIds, double[] previousWeights,
                                       List<String> engineIds, double[] weights) {
            double previousTotal = checkWeights(previousIds.size(), previousWeights);
            double total = checkWeights(engineIds.size(), weights);
            return rebalance(previous, previousIds, previousWeights, previousTotal, engineIds, weights, total,
                    target -> new BuildKey(previous, previousIds, engineIds, target),
                    () -> remap(previousIds, engineIds));
        }

        /**
         * Whether a policy-built route's weights can take the ranked path: all positive (as a slot table's
         * engines are) and within the engines a table can hold; the others take the path of the list methods,
         * which checks them and says what is wrong.
         */
        private static boolean ranked(SortedWeights w) {
            return w.allPositive && w.rank.length > 0 && w.rank.length <= MAX_ENGINES;
        }

        /** Whether two id lists are equal, remembered for the last pair asked (one pair per snapshot). */
        private boolean sameContent(SortedEngineIds a, SortedEngineIds b) {
            if (a != lastA || b != lastB) {
                lastA = a;
                lastB = b;
                lastSame = a.sameAs(b);
            }
            return lastSame;
        }

        private String rebalance(String previous, List<String> previousIds, double[] previousWeights,
                                 double previousTotal, List<String> engineIds, double[] weights, double total,
                                 java.util.function.Function<int[], Object> key,
                                 java.util.function.Supplier<int[]> remap) {
            ParseKey pk = key == null ? null : new ParseKey(previous, previousIds.size());
            Parsed old = pk == null ? null : parsed.get(pk);
            if (old == null) {
                int[] counts = new int[previousIds.size()];
                old = new Parsed(parseRuns(previous, previousIds.size(), counts), counts);
                if (pk != null) {
                    parsed.put(pk, old);
                }
            }
            checkCounts(previousIds, previousWeights, previousTotal, old.counts);
            int n = engineIds.size();
            int m = slotCountFor(n);
            int[] target = largestRemainder(weights, total, m);
            if (key == null && Arrays.equals(old.counts, target) && previousIds.equals(engineIds)) {
                return previous; // nothing to move: a third of a large fleet's grouped routes after a re-solve
            }
            Parsed from = old;
            java.util.function.Function<Object, String> compute = k -> {
                int oldBits = Integer.numberOfTrailingZeros(slotCountFor(previousIds.size()));
                int bits = Integer.numberOfTrailingZeros(m);
                int[] counts = new int[n];
                // the runs below are new arrays, or the shared parsed ones read but never written
                SlotRuns runs = inheritRuns(from.runs, from.counts, oldBits, remap.get(),
                        bits, counts);
                runs = releaseRuns(runs, counts, target, m);
                runs = assignRuns(runs, counts, target, m);
                return encode(bits, n, runs);
            };
            return key == null ? compute.apply(null) : built.computeIfAbsent(key.apply(target), compute);
        }
    }

    private record ParseKey(String encoded, int engines) {
    }

    /**
     * The engines of a route whose weights are {@link SortedWeights} (as a policy builds them), as a list
     * view: index i is {@code ids.get(rank[i])}. Two such views over one {@code ids} compare by their
     * ranks, so a batch keys on int arrays instead of hashing and comparing hundreds of strings per route.
     */
    private static final class RankedIds extends java.util.AbstractList<String> {
        final SortedEngineIds ids;
        final int[] rank;

        private final int rankHash;

        RankedIds(SortedWeights w) {
            this.ids = w.ids;
            this.rank = w.rank;
            this.rankHash = w.rankHash();
        }

        @Override
        public String get(int i) {
            return ids.get(rank[i]);
        }

        @Override
        public int size() {
            return rank.length;
        }

        /** Same ids object, same ranks: then the lists are equal (the converse need not hold). */
        boolean sameAs(RankedIds other) {
            return ids == other.ids && Arrays.equals(rank, other.rank);
        }
    }

    /**
     * A {@link BuildKey} for routes given as {@link RankedIds}: identity of the shared ids, then ranks.
     * Without history ({@code previous} null) both id lists are the route's own.
     */
    private record RankedKey(String previous, RankedIds previousIds, RankedIds ids, int[] target) {
        @Override
        public boolean equals(Object o) {
            return o instanceof RankedKey k && java.util.Objects.equals(previous, k.previous)
                    && previousIds.sameAs(k.previousIds)
                    && ids.sameAs(k.ids) && Arrays.equals(target, k.target);
        }

        @Override
        public int hashCode() {
            int h = java.util.Objects.hashCode(previous);
            h = h * 31 + System.identityHashCode(previousIds.ids) * 17 + previousIds.rankHash;
            h = h * 31 + System.identityHashCode(ids.ids) * 17 + ids.rankHash;
            return h * 31 + Arrays.hashCode(target);
        }
    }

    private record Parsed(SlotRuns runs, int[] counts) {
    }

    /** A table's inputs: the previous table and its engines (null without history), the engines and their counts. */
    private record BuildKey(String previous, List<String> previousIds, List<String> ids, int[] target) {
        @Override
        public boolean equals(Object o) {
            return o instanceof BuildKey k && java.util.Objects.equals(previous, k.previous)
                    && java.util.Objects.equals(previousIds, k.previousIds) && ids.equals(k.ids)
                    && Arrays.equals(target, k.target);
        }

        @Override
        public int hashCode() {
            return ((java.util.Objects.hashCode(previous) * 31 + java.util.Objects.hashCode(previousIds)) * 31
                    + ids.hashCode()) * 31 + Arrays.hashCode(target);
        }
    }

    /**
     * Where each previous engine is in the new list ({@link SlotRuns#FREE} when it left), or null when the
     * lists are equal.
     */
    private static int[] remap(List<String> previousIds, List<String> ids) {
        if (previousIds.equals(ids)) {
            return null;
        }
        if (ids.size() <= 16) { // a grouped route's few groups: a scan costs less than a map
            int[] remap = new int[previousIds.size()];
            for (int i = 0; i < remap.length; i++) {
                remap[i] = SlotRuns.FREE;
                String id = previousIds.get(i);
                for (int j = 0; j < ids.size(); j++) {
                    if (id.equals(ids.get(j))) {
                        remap[i] = j;
                        break;
                    }
                }
            }
            return remap;
        }
        Map<String, Integer> index = new HashMap<>(ids.size() * 2);
        for (int i = 0; i < ids.size(); i++) {
            index.put(ids.get(i), i);
        }
        int[] remap = new int[previousIds.size()];
        for (int i = 0; i < remap.length; i++) {
            Integer now = index.get(previousIds.get(i));
            remap[i] = now == null ? SlotRuns.FREE : now;
        }
        return remap;
    }

    /**
     * {@link #remap(List, List)} for ranks into equal id lists: both ascend, so one merge, no hashing.
     */
    private static int[] remap(int[] previousRanks, int[] ranks) {
        if (Arrays.equals(previousRanks, ranks)) {
            return null;
        }
        int[] remap = new int[previousRanks.length];
        for (int i = 0, j = 0; i < previousRanks.length; i++) {
            while (j < ranks.length && ranks[j] < previousRanks[i]) {
                j++;
            }
            remap[i] = j < ranks.length && ranks[j] == previousRanks[i] ? j : SlotRuns.FREE;
        }
        return remap;
    }

    /** {@link #inherit} on runs: the previous owners, remapped to the new engine list and table size. */
    private static SlotRuns inheritRuns(SlotRuns old, int[] oldCounts, int oldBits, int[] remap, int newBits,
                                        int[] counts) {
        boolean identity = remap == null;
        if (identity && oldBits == newBits) {
            System.arraycopy(oldCounts, 0, counts, 0, counts.length);
            return old;
        }
        SlotRuns out = new SlotRuns(old.size + 1);
        int shrink = oldBits - newBits;
        for (int r = 0, at = 0; r < old.size; r++) {
            int from = at;
            at += old.length[r];
            int who = identity ? old.owner[r] : remap[old.owner[r]];
            // growing splits every slot in two halves that keep its owner; shrinking keeps the owner of
            // the lowest old slot of each new slot: new slot s takes old slot s << shrink
            int len = shrink <= 0 ? old.length[r] << -shrink
                    : ((at + (1 << shrink) - 1) >> shrink) - ((from + (1 << shrink) - 1) >> shrink);
            out.add(who, len);
            if (who != SlotRuns.FREE && len > 0) {
                counts[who] += len;
            }
        }
        return out;
    }

    /** {@link #release} on runs. */
    private static SlotRuns releaseRuns(SlotRuns runs, int[] counts, int[] target, int m) {
        int[] starts = new int[runs.size];
        long[] surplus = new long[runs.size];
        int r = 0;
        for (int i = 0, at = 0; i < runs.size; i++) {
            starts[i] = at;
            int j = runs.owner[i];
            if (j != SlotRuns.FREE && counts[j] > target[j]) {
                surplus[r++] = ((long) j << 45) | ((long) runs.length[i] << 22) | (m - 1 - at);
            }
            at += runs.length[i];
        }
        if (r == 0) {
            return runs;
        }
        Arrays.sort(surplus, 0, r);
        int[] give = new int[runs.size];
        for (int i = 0; i < r; i++) {
            int j = (int) (surplus[i] >>> 45);
            int len = (int) ((surplus[i] >>> 22) & 0x7FFFFF);
            int start = m - 1 - (int) (surplus[i] & 0x3FFFFF);
            int excess = counts[j] - target[j];
            if (excess <= 0) {
                continue;
            }
            int g = Math.min(len, excess);
            give[Arrays.binarySearch(starts, start)] = g;
            counts[j] -= g;
        }
        SlotRuns out = new SlotRuns(runs.size + r);
        for (int i = 0; i < runs.size; i++) {
            out.add(runs.owner[i], runs.length[i] - give[i]);
            out.add(SlotRuns.FREE, give[i]);
        }
        return out;
    }

    /** {@link #assign} on runs. */
    private static SlotRuns assignRuns(SlotRuns runs, int[] counts, int[] target, int m) {
        SlotRuns near = new SlotRuns(runs.size + 4);
        for (int i = 0, at = 0; i < runs.size; i++) {
            int len = runs.length[i];
            if (runs.owner[i] != SlotRuns.FREE) {
                near.add(runs.owner[i], len);
                at += len;
                continue;
            }
            int below = -1;
            int fromBelow = 0;
            if (at > 0) {
                below = runs.owner[i - 1];
                fromBelow = Math.max(0, Math.min(len, target[below] - counts[below]));
                counts[below] += fromBelow;
            }
            int above = -1;
            int fromAbove = 0;
            if (at + len < m) {
                above = runs.owner[i + 1];
                fromAbove = Math.max(0, Math.min(len - fromBelow, target[above] - counts[above]));
                counts[above] += fromAbove;
            }
            near.add(below, fromBelow);
            near.add(SlotRuns.FREE, len - fromBelow - fromAbove);
            near.add(above, fromAbove);
            at += len;
        }
        SlotRuns out = new SlotRuns(near.size + 4);
        int j = 0;
        for (int i = 0; i < near.size; i++) {
            if (near.owner[i] != SlotRuns.FREE) {
                out.add(near.owner[i], near.length[i]);
                continue;
            }
            for (int left = near.length[i]; left > 0; ) {
                while (counts[j] >= target[j]) {
                    j++;
                }
                int take = Math.min(left, target[j] - counts[j]);
                out.add(j, take);
                counts[j] += take;
                left -= take;
            }
        }
        return out;
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

    // ------------------------------------------------------------------ selection (request path)

    /** The index (into {@link #engineIds()}) of the key's first choice. Allocation-free, O(1). */
    @Override
    public int first(long key) {
        return owner[(int) (mix(key) >>> shift)];
    }

    /**
     * The engine at position {@code i} of the key's raw probe sequence, repeats included: positions
     * below {@link #PROBES} are table probes, the rest walk the positive-weight engines from a
     * key-dependent start. {@code i} in [0, {@link #probeLength()}). Allocation-free.
     */
    @Override
    public int probe(long key, int i) {
        if (i < PROBES) {
            return owner[(int) (mix(key + i * GOLDEN) >>> shift)];
        }
        return positive[tail(key, i, positive.length)];
    }

    /**
     * The position, among {@code n} engines, of probe {@code i} ≥ {@link #PROBES} of the key's sequence: the tail
     * walks every engine once from a key-dependent start, the same walk for a {@link GroupedTable}'s engines.
     */
    static int tail(long key, int i, int n) {
        int start = (int) Long.remainderUnsigned(mix(key ^ TAIL_SALT), n);
        int t = start + i - PROBES;
        return t >= n ? t - n : t;
    }

    /** Number of engines with positive weight: the length of every key's order. */
    @Override
    public int orderLength() {
        return positive.length;
    }

    /** The SplitMix64 finalizer (Steele, Lea, Flood 2014): a bijection with full avalanche. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
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
