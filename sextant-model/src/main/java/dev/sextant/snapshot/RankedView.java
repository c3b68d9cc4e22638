package dev.sextant.snapshot;

import java.util.Arrays;
import java.util.Map;

/**
 * A read-only view of weights a policy built with {@link Route#weights(SortedEngineIds, int[], double[])}: the
 * i-th weight, in engine-id order, belongs to engine {@code ids().get(rank(i))}. A policy that builds the slot
 * tables of a large fleet's snapshot keys them on ranks instead of hashing and comparing hundreds of engine ids
 * per route. The view copies nothing; it is as immutable as the weights.
 */
public final class RankedView {
    private final SortedWeights w;

    private RankedView(SortedWeights w) {
        this.w = w;
    }

    /** The view of {@code weights} if a policy built them over shared ids, else null (read the map then). */
    public static RankedView of(Map<String, Double> weights) {
        return weights instanceof SortedWeights sw ? new RankedView(sw) : null;
    }

    /** The ids the ranks index. */
    public SortedEngineIds ids() {
        return w.ids;
    }

    /** Number of weights. */
    public int size() {
        return w.rank.length;
    }

    /** The rank in {@link #ids()} of the i-th weight's engine; ranks ascend with i. */
    public int rank(int i) {
        return w.rank[i];
    }

    /** The sum of the weights. */
    public double total() {
        return w.total;
    }

    /** True when every weight is positive, as a slot table's engines are. */
    public boolean allPositive() {
        return w.allPositive;
    }

    /** {@link Arrays#hashCode(int[])} of the ranks, computed once per route. */
    public int ranksHash() {
        return w.rankHash();
    }

    /** True when both views hold the same ranks (over ids that may differ). */
    public boolean sameRanks(RankedView other) {
        return other.w == w || Arrays.equals(w.rank, other.w.rank);
    }

    /**
     * {@link SlotCodec#checkCounts} of a table over these weights' engines {@code ids} holding {@code counts}
     * slots each.
     */
    public void checkCounts(java.util.List<String> ids, int[] counts) {
        SlotCodec.checkCounts(ids, w.value, w.total, counts);
    }

    /** {@link SlotCodec#slotCounts} of these weights for a table of {@code m} slots. */
    public int[] slotCounts(int m) {
        return SlotCodec.slotCounts(w.value, w.total, m);
    }
}
