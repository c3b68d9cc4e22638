package dev.sextant.policy;

import dev.sextant.snapshot.SlotCodec;
import dev.sextant.snapshot.SlotRuns;
import java.util.Arrays;

/**
 * {@link SlotRebalancer}'s rebalance computed on runs of slots instead of slots: the same text, in time
 * proportional to the number of runs (a few per engine) and engines rather than to the number of slots. The
 * policy rebalances every route of every snapshot this way ({@link SlotTableBatch}); {@link SlotRebalancer},
 * on the slot array, states the rules and is what the tests hold this class to.
 */
final class RunRebalancer {
    private RunRebalancer() {
    }

    /**
     * The text of the table that {@code old} (a table of 2^{@code oldBits} slots, {@code oldCounts} slots per
     * engine) becomes over {@code n} engines with {@code target} slots each in a table of 2^{@code bits} slots.
     *
     * @param remap where each previous engine is in the new list ({@link SlotRuns#FREE} when it left), or null
     *              when the lists are equal
     */
    static String rebalance(SlotRuns old, int[] oldCounts, int oldBits, int[] remap, int bits, int n,
                            int[] target) {
        int m = 1 << bits;
        int[] counts = new int[n];
        // the runs below are new lists, or `old` read but never written
        SlotRuns runs = inherit(old, oldCounts, oldBits, remap, bits, counts);
        runs = release(runs, counts, target, m);
        runs = assign(runs, counts, target, m);
        return SlotCodec.encode(bits, n, runs);
    }

    /**
     * {@link SlotRebalancer}'s inherit on runs: the previous owners, remapped to the new engine list and table
     * size.
     */
    private static SlotRuns inherit(SlotRuns old, int[] oldCounts, int oldBits, int[] remap, int newBits,
                                    int[] counts) {
        boolean identity = remap == null;
        if (identity && oldBits == newBits) {
            System.arraycopy(oldCounts, 0, counts, 0, counts.length);
            return old;
        }
        SlotRuns out = new SlotRuns(old.size() + 1);
        int shrink = oldBits - newBits;
        for (int r = 0, at = 0; r < old.size(); r++) {
            int from = at;
            at += old.length(r);
            int who = identity ? old.owner(r) : remap[old.owner(r)];
            // growing splits every slot in two halves that keep its owner; shrinking keeps the owner of
            // the lowest old slot of each new slot: new slot s takes old slot s << shrink
            int len = shrink <= 0 ? old.length(r) << -shrink
                    : ((at + (1 << shrink) - 1) >> shrink) - ((from + (1 << shrink) - 1) >> shrink);
            out.add(who, len);
            if (who != SlotRuns.FREE && len > 0) {
                counts[who] += len;
            }
        }
        return out;
    }

    /** {@link SlotRebalancer}'s release on runs. */
    private static SlotRuns release(SlotRuns runs, int[] counts, int[] target, int m) {
        int[] starts = new int[runs.size()];
        long[] surplus = new long[runs.size()];
        int r = 0;
        for (int i = 0, at = 0; i < runs.size(); i++) {
            starts[i] = at;
            int j = runs.owner(i);
            if (j != SlotRuns.FREE && counts[j] > target[j]) {
                surplus[r++] = ((long) j << 45) | ((long) runs.length(i) << 22) | (m - 1 - at);
            }
            at += runs.length(i);
        }
        if (r == 0) {
            return runs;
        }
        Arrays.sort(surplus, 0, r);
        int[] give = new int[runs.size()];
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
        SlotRuns out = new SlotRuns(runs.size() + r);
        for (int i = 0; i < runs.size(); i++) {
            out.add(runs.owner(i), runs.length(i) - give[i]);
            out.add(SlotRuns.FREE, give[i]);
        }
        return out;
    }

    /** {@link SlotRebalancer}'s assign on runs. */
    private static SlotRuns assign(SlotRuns runs, int[] counts, int[] target, int m) {
        SlotRuns near = new SlotRuns(runs.size() + 4);
        for (int i = 0, at = 0; i < runs.size(); i++) {
            int len = runs.length(i);
            if (runs.owner(i) != SlotRuns.FREE) {
                near.add(runs.owner(i), len);
                at += len;
                continue;
            }
            int below = -1;
            int fromBelow = 0;
            if (at > 0) {
                below = runs.owner(i - 1);
                fromBelow = Math.max(0, Math.min(len, target[below] - counts[below]));
                counts[below] += fromBelow;
            }
            int above = -1;
            int fromAbove = 0;
            if (at + len < m) {
                above = runs.owner(i + 1);
                fromAbove = Math.max(0, Math.min(len - fromBelow, target[above] - counts[above]));
                counts[above] += fromAbove;
            }
            near.add(below, fromBelow);
            near.add(SlotRuns.FREE, len - fromBelow - fromAbove);
            near.add(above, fromAbove);
            at += len;
        }
        SlotRuns out = new SlotRuns(near.size() + 4);
        int j = 0;
        for (int i = 0; i < near.size(); i++) {
            if (near.owner(i) != SlotRuns.FREE) {
                out.add(near.owner(i), near.length(i));
                continue;
            }
            for (int left = near.length(i); left > 0; ) {
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
}
