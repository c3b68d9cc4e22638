package dev.sextant.request;

import java.util.List;

/**
 * Weighted consistent hashing of keys over one class's engines: for every 64-bit key an ordered
 * sequence of distinct engines, the key's own preference order. The first engine is drawn with
 * probability equal to the engine's weight; the rest is the order the key falls back in (bounded
 * load, retries). The sequence is a function of the table and the key alone, so two gateways
 * holding the same table choose the same engines for the same key.
 *
 * <p>Tables are built with {@link #of} when there is no history and with {@link #rebalance} from the
 * previous table when weights change; rebalancing moves the fewest keys possible, see
 * {@link WeightedSlotTable} for the algorithm and why it was chosen.
 */
public interface SlotTable {

    /**
     * A table for {@code engineIds} with {@code weights}, built without history: engines get slot
     * counts proportional to their weights (largest remainder), in consecutive blocks in the order
     * given. Deterministic: equal arguments give equal tables.
     *
     * @param engineIds distinct engine ids, at most 65,535
     * @param weights   one weight per engine, each finite and ≥ 0, at least one positive; need not sum
     *                  to 1 (they are normalized)
     */
    static SlotTable of(List<String> engineIds, double[] weights) {
        return WeightedSlotTable.build(null, engineIds, weights);
    }

    /**
     * The table for new weights that keeps as many slots as possible on the engine that held them in
     * this table: an engine keeps min(old, new) of its slots, so the fraction of keys whose first
     * choice changes is the total variation distance between the old and the new slot shares, the
     * minimum any scheme can move. Deterministic: equal tables and arguments give equal tables.
     *
     * @param engineIds distinct engine ids (engines may come and go), at most 65,535
     * @param weights   as in {@link #of}
     */
    SlotTable rebalance(List<String> engineIds, double[] weights);

    /**
     * A table from its {@link #encode()}d form, checked against the engines and weights it must
     * match: every slot owned by one of {@code engineIds}, and each engine's slot count the one its
     * weight gives. This is how a table computed by the control plane (rebalanced from the previous
     * snapshot's) would reach the gateways, so that the choice is a function of the snapshot alone.
     *
     * @throws IllegalArgumentException naming what does not match
     */
    static SlotTable decode(List<String> engineIds, double[] weights, String encoded) {
        return WeightedSlotTable.decode(engineIds, weights, encoded);
    }

    /**
     * The table as text: {@code "st1:"} then the slot owners (engine indices as 16-bit big-endian
     * numbers, slot 0 first) in unpadded base64url. About 2.7 bytes per slot.
     */
    String encode();

    /** The index (into {@link #engineIds()}) of the key's first choice. Allocation-free, O(1). */
    int first(long key);

    /**
     * Writes the first {@code out.length} engines of the key's order (or all of them if there are
     * fewer engines with positive weight) into {@code out}, distinct, and returns how many it wrote.
     * {@code out[0] == first(key)}. Allocation-free.
     */
    int fill(long key, int[] out);

    /** The engines, in the order given when the table was built; indices refer to this list. */
    List<String> engineIds();

    /** Number of slots, a power of two; an engine's share of first choices is its slots / this. */
    int slotCount();

    /** Number of slots engine {@code index} holds. */
    int slots(int index);
}
