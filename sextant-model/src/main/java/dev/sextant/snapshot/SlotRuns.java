package dev.sextant.snapshot;

import java.util.Arrays;

/**
 * A slot table as its runs: maximal blocks of consecutive slots with one owner, in slot order, the form
 * {@link SlotCodec} reads and writes. A control plane rebalances and encodes tables in this form, in time
 * proportional to the number of runs (a few per engine) rather than the number of slots (64 or more per engine);
 * the request path uses the slot array of {@link SlotTable}. Adding a run next to one with the same owner extends
 * it, so the runs stay maximal. Not thread-safe; a list one holder shares is only read.
 */
public final class SlotRuns {
    /** Owner of the slots of a run that no engine holds (yet). */
    public static final int FREE = -1;

    private int[] owner;
    private int[] length;
    private int size;

    /** An empty list with room for {@code capacity} runs (it grows as needed). */
    public SlotRuns(int capacity) {
        owner = new int[Math.max(4, capacity)];
        length = new int[owner.length];
    }

    /** Appends {@code len} slots of {@code who} after the last run; nothing when {@code len ≤ 0}. */
    public void add(int who, int len) {
        if (len <= 0) {
            return;
        }
        if (size > 0 && owner[size - 1] == who) {
            length[size - 1] += len;
            return;
        }
        if (size == owner.length) {
            owner = Arrays.copyOf(owner, size * 2);
            length = Arrays.copyOf(length, size * 2);
        }
        owner[size] = who;
        length[size] = len;
        size++;
    }

    /** Number of runs. */
    public int size() {
        return size;
    }

    /** The engine index that holds run {@code r}, or {@link #FREE}; r in [0, {@link #size()}). */
    public int owner(int r) {
        return owner[r];
    }

    /** The number of slots of run {@code r}, ≥ 1; r in [0, {@link #size()}). */
    public int length(int r) {
        return length[r];
    }
}
