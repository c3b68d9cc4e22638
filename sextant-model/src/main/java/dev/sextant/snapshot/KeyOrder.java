package dev.sextant.snapshot;

import java.util.List;

/**
 * Weighted consistent hashing of 64-bit keys over one route's engines: every key's own preference order
 * of distinct engines, the first drawn with the engine's weight. A function of the table and the key
 * alone, so every gateway holding the same snapshot chooses alike. Two forms: {@link SlotTable}, one table
 * over a route's engines, and {@link GroupedTable}, a table over a grouped route's engine groups and one
 * per group over its engines. Indices refer to {@link #engineIds()}; nothing here allocates.
 */
public interface KeyOrder {

    /** The index of the key's first choice. O(1). */
    int first(long key);

    /**
     * The engine at position {@code i} of the key's raw probe sequence, repeats included: positions below
     * {@link SlotTable#PROBES} are table probes, the rest walk every engine from a key-dependent start.
     * {@code i} in [0, {@link #probeLength()}).
     */
    int probe(long key, int i);

    /** Length of every key's raw probe sequence: {@link SlotTable#PROBES} + {@link #orderLength()}. */
    default int probeLength() {
        return SlotTable.PROBES + orderLength();
    }

    /** Number of engines with positive weight: the length of every key's order. */
    int orderLength();

    /** The engines, in the order the indices refer to. */
    List<String> engineIds();

    /**
     * True when position {@code i} of the key's probe sequence repeats an engine seen at an earlier
     * position. The tail positions are distinct among themselves, so only the table probes need
     * checking: O({@link SlotTable#PROBES}) at most.
     */
    default boolean repeats(long key, int i, int engine) {
        for (int k = 0, end = Math.min(i, SlotTable.PROBES); k < end; k++) {
            if (probe(key, k) == engine) {
                return true;
            }
        }
        return false;
    }

    /**
     * Writes the first {@code out.length} engines of the key's order (or all of them if there are fewer)
     * into {@code out}, distinct, and returns how many it wrote. {@code out[0] == first(key)}.
     */
    default int fill(long key, int[] out) {
        int want = Math.min(out.length, orderLength());
        int k = 0;
        for (int i = 0, len = probeLength(); i < len && k < want; i++) {
            int e = probe(key, i);
            boolean seen = false;
            for (int j = 0; j < k && !seen; j++) {
                seen = out[j] == e;
            }
            if (!seen) {
                out[k++] = e;
            }
        }
        return k;
    }
}
