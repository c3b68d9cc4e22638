package dev.sextant.policy;

import dev.sextant.snapshot.RankedView;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.SlotCodec;
import dev.sextant.snapshot.SlotRuns;
import dev.sextant.snapshot.SlotTable;
import dev.sextant.snapshot.SortedEngineIds;
import java.util.AbstractList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The slot tables of one snapshot's routes and groups as text, each distinct table computed once: built without
 * history ({@link #encodedOf}, one run per engine) or rebalanced from the previous snapshot's table
 * ({@link #rebalanceEncoded}, by {@link RunRebalancer}). A table is a function of the previous table, the engines
 * and their integer slot counts only, and on a large fleet many routes share all three: the classes of one
 * model at one gateway cluster get the same shares, and weights that differ in their last bits give the same
 * counts (the L benchmark fleet's 3,072 routes have 694 distinct tables). Every argument is checked as
 * {@link SlotTable#of} and {@link SlotTable#decode} check theirs. The lists and arrays given must not change
 * while the batch is in use (it keys on them). Not thread-safe: one per snapshot being built.
 */
final class SlotTableBatch {
    private final Map<ParseKey, Parsed> parsed = new HashMap<>();
    private final Map<Object, String> built = new HashMap<>();
    private SortedEngineIds lastA;
    private SortedEngineIds lastB;
    private boolean lastSame;

    /**
     * {@code SlotTable.of(engineIds, weights).encode()}, without building the slot array: one run per
     * engine with a positive weight. Without a batch to share.
     */
    static String encodedOnce(List<String> engineIds, double[] weights) {
        return new SlotTableBatch().encodedOf(engineIds, weights);
    }

    /**
     * {@code SlotRebalancer.rebalance(SlotTable.decode(previous, previousIds, previousWeights), engineIds,
     * weights).encode()}, the same text, computed on runs. Without a batch to share.
     *
     * @throws IllegalArgumentException when {@code previous} fails {@link SlotTable#decode}'s check, or when
     *                                  {@code weights} are invalid as in {@link SlotTable#of}
     */
    static String rebalancedOnce(String previous, List<String> previousIds, double[] previousWeights,
                                 List<String> engineIds, double[] weights) {
        return new SlotTableBatch().rebalanceEncoded(previous, previousIds, previousWeights, engineIds, weights);
    }

    /** As {@link #encodedOnce}, for a route's weights (the positive ones, in engine-id order). */
    String encodedOf(Map<String, Double> weights) {
        RankedView w = RankedView.of(weights);
        if (w != null && ranked(w)) {
            RankedIds ids = new RankedIds(w);
            int m = SlotTable.slotCountFor(ids.size());
            int[] target = w.slotCounts(m);
            return built.computeIfAbsent(new RankedKey(null, ids, ids, target), k -> fresh(m, target));
        }
        return encodedOf(Route.positiveIds(weights), Route.positiveValues(weights));
    }

    /** As {@link #encodedOnce}. */
    String encodedOf(List<String> engineIds, double[] weights) {
        int n = engineIds.size();
        double total = SlotCodec.checkWeights(n, weights);
        int m = SlotTable.slotCountFor(n);
        int[] target = SlotCodec.slotCounts(weights, total, m);
        return built.computeIfAbsent(new BuildKey(null, null, engineIds, target), k -> fresh(m, target));
    }

    /** A table without history: one run per engine, in order. */
    private static String fresh(int m, int[] target) {
        SlotRuns runs = new SlotRuns(target.length);
        for (int j = 0; j < target.length; j++) {
            runs.add(j, target[j]);
        }
        return SlotCodec.encode(Integer.numberOfTrailingZeros(m), target.length, runs);
    }

    /**
     * As {@link #rebalancedOnce}, for two routes' weights: the previous route's table {@code previous} over its
     * positive weights {@code previousWeights}, rebalanced to the positive weights {@code weights}, both
     * iterating in engine-id order as {@link Route#weights()} does. Routes built by a policy
     * ({@link Route#weights(SortedEngineIds, int[], double[])}) are keyed by their ranks, which is most of what a
     * large fleet's snapshot saves by batching.
     */
    String rebalanceEncoded(String previous, Map<String, Double> previousWeights, Map<String, Double> weights) {
        RankedView p = RankedView.of(previousWeights);
        RankedView w = RankedView.of(weights);
        if (p != null && w != null && ranked(p) && ranked(w)) {
            // the weights were checked when made (each in [0, 1], so the sums are finite)
            RankedIds previousIds = new RankedIds(p);
            RankedIds ids = new RankedIds(w);
            boolean sameIds = sameContent(p.ids(), w.ids());
            int[] target = w.slotCounts(SlotTable.slotCountFor(ids.size()));
            return rebalance(previous, previousIds, counts -> p.checkCounts(previousIds, counts), ids, target,
                    new RankedKey(previous, previousIds, ids, target),
                    () -> sameIds ? remap(p, w) : remap(previousIds, ids));
        }
        List<String> previousIds = Route.positiveIds(previousWeights);
        List<String> ids = Route.positiveIds(weights);
        return rebalanceEncoded(previous, previousIds, Route.positiveValues(previousWeights), ids,
                Route.positiveValues(weights));
    }

    /**
     * As {@link #rebalancedOnce}, without remembering the table: for tables that no other route of the snapshot
     * shares (a grouped route's table over its groups), where looking a table up would cost more than computing
     * it. When the engines and their slot counts are those of {@code previous}, returns {@code previous} itself
     * (for a table this class encoded, the same text rebalancing would give).
     */
    String rebalanceEncodedOnce(String previous, List<String> previousIds, double[] previousWeights,
                                List<String> engineIds, double[] weights) {
        return rebalance(previous, previousIds, previousWeights, engineIds, weights, false);
    }

    /** As {@link #rebalancedOnce}. */
    String rebalanceEncoded(String previous, List<String> previousIds, double[] previousWeights,
                            List<String> engineIds, double[] weights) {
        return rebalance(previous, previousIds, previousWeights, engineIds, weights, true);
    }

    private String rebalance(String previous, List<String> previousIds, double[] previousWeights,
                             List<String> engineIds, double[] weights, boolean remember) {
        double previousTotal = SlotCodec.checkWeights(previousIds.size(), previousWeights);
        double total = SlotCodec.checkWeights(engineIds.size(), weights);
        int[] target = SlotCodec.slotCounts(weights, total, SlotTable.slotCountFor(engineIds.size()));
        return rebalance(previous, previousIds,
                counts -> SlotCodec.checkCounts(previousIds, previousWeights, previousTotal, counts), engineIds,
                target, remember ? new BuildKey(previous, previousIds, engineIds, target) : null,
                () -> remap(previousIds, engineIds));
    }

    /**
     * Whether a policy-built route's weights can take the ranked path: all positive (as a slot table's
     * engines are) and within the engines a table can hold; the others take the path of the list methods,
     * which checks them and says what is wrong.
     */
    private static boolean ranked(RankedView w) {
        return w.allPositive() && w.size() > 0 && w.size() <= SlotTable.MAX_ENGINES;
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

    /**
     * The table over {@code engineIds} with {@code target} slots each, rebalanced from {@code previous} after
     * {@code checkPrevious} accepted its slot counts; remembered under {@code key} unless that is null.
     */
    private String rebalance(String previous, List<String> previousIds, Consumer<int[]> checkPrevious,
                             List<String> engineIds, int[] target, Object key, Supplier<int[]> remap) {
        ParseKey pk = key == null ? null : new ParseKey(previous, previousIds.size());
        Parsed old = pk == null ? null : parsed.get(pk);
        if (old == null) {
            int[] counts = new int[previousIds.size()];
            old = new Parsed(SlotCodec.decode(previous, previousIds.size(), counts), counts);
            if (pk != null) {
                parsed.put(pk, old);
            }
        }
        checkPrevious.accept(old.counts);
        int n = engineIds.size();
        int m = SlotTable.slotCountFor(n);
        if (key == null && Arrays.equals(old.counts, target) && previousIds.equals(engineIds)) {
            return previous; // nothing to move: a third of a large fleet's grouped routes after a re-solve
        }
        Parsed from = old;
        Function<Object, String> compute = k -> RunRebalancer.rebalance(from.runs, from.counts,
                Integer.numberOfTrailingZeros(SlotTable.slotCountFor(previousIds.size())), remap.get(),
                Integer.numberOfTrailingZeros(m), n, target);
        return key == null ? compute.apply(null) : built.computeIfAbsent(key, compute);
    }

    private record ParseKey(String encoded, int engines) {
    }

    private record Parsed(SlotRuns runs, int[] counts) {
    }

    /**
     * The engines of a route whose weights a policy built ({@link RankedView}), as a list view: index i is
     * {@code ids.get(rank(i))}. Two such views over one {@code ids} compare by their ranks, so a batch keys on
     * int arrays instead of hashing and comparing hundreds of strings per route.
     */
    private static final class RankedIds extends AbstractList<String> {
        final RankedView view;
        final SortedEngineIds ids;

        RankedIds(RankedView view) {
            this.view = view;
            this.ids = view.ids();
        }

        @Override
        public String get(int i) {
            return ids.get(view.rank(i));
        }

        @Override
        public int size() {
            return view.size();
        }

        /** Same ids object, same ranks: then the lists are equal (the converse need not hold). */
        boolean sameAs(RankedIds other) {
            return ids == other.ids && view.sameRanks(other.view);
        }
    }

    /**
     * A key for routes given as {@link RankedIds}: identity of the shared ids, then ranks. Without history
     * ({@code previous} null) both id lists are the route's own.
     */
    private record RankedKey(String previous, RankedIds previousIds, RankedIds ids, int[] target) {
        @Override
        public boolean equals(Object o) {
            return o instanceof RankedKey k && Objects.equals(previous, k.previous)
                    && previousIds.sameAs(k.previousIds)
                    && ids.sameAs(k.ids) && Arrays.equals(target, k.target);
        }

        @Override
        public int hashCode() {
            int h = Objects.hashCode(previous);
            h = h * 31 + System.identityHashCode(previousIds.ids) * 17 + previousIds.view.ranksHash();
            h = h * 31 + System.identityHashCode(ids.ids) * 17 + ids.view.ranksHash();
            return h * 31 + Arrays.hashCode(target);
        }
    }

    /** A table's inputs: the previous table and its engines (null without history), the engines and their counts. */
    private record BuildKey(String previous, List<String> previousIds, List<String> ids, int[] target) {
        @Override
        public boolean equals(Object o) {
            return o instanceof BuildKey k && Objects.equals(previous, k.previous)
                    && Objects.equals(previousIds, k.previousIds) && ids.equals(k.ids)
                    && Arrays.equals(target, k.target);
        }

        @Override
        public int hashCode() {
            return ((Objects.hashCode(previous) * 31 + Objects.hashCode(previousIds)) * 31
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

    /** {@link #remap(List, List)} for the ranks of two views into equal id lists: both ascend, so one merge. */
    private static int[] remap(RankedView previous, RankedView now) {
        if (previous.sameRanks(now)) {
            return null;
        }
        int[] remap = new int[previous.size()];
        for (int i = 0, j = 0; i < remap.length; i++) {
            int rank = previous.rank(i);
            while (j < now.size() && now.rank(j) < rank) {
                j++;
            }
            remap[i] = j < now.size() && now.rank(j) == rank ? j : SlotRuns.FREE;
        }
        return remap;
    }
}
