package dev.sextant.policy;

import dev.sextant.snapshot.SlotCodec;
import dev.sextant.snapshot.SlotRuns;
import dev.sextant.snapshot.SlotTable;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Rebalancing a slot table from history, on the slot array: the definition of what {@link RunRebalancer}
 * computes on runs, kept plain so that the tests can hold the fast form to it (docs/design.md §4, 3).
 *
 * <p>An engine keeps min(old count, new count) of its own slots and only the surplus slots go to engines that
 * need more, so the fraction of keys whose first choice changes is the total variation distance between the old
 * and the new slot shares, the minimum any scheme can move; see {@link SlotTable}'s implementation note for why
 * a table rebalanced from history, and its sources.
 */
final class SlotRebalancer {
    private static final char FREE = Character.MAX_VALUE;

    private SlotRebalancer() {
    }

    /**
     * The table for new weights that keeps as many slots as possible on the engine that held them in
     * {@code previous}. Deterministic: equal tables and arguments give equal tables.
     *
     * @param engineIds distinct engine ids (engines may come and go), at most {@value SlotTable#MAX_ENGINES}
     * @param weights   as in {@link SlotTable#of}
     */
    static SlotTable rebalance(SlotTable previous, List<String> engineIds, double[] weights) {
        List<String> ids = List.copyOf(engineIds);
        int n = ids.size();
        int m = SlotTable.slotCountFor(n);
        int[] target = SlotCodec.slotCounts(weights, SlotCodec.checkWeights(n, weights), m);
        char[] owner = new char[m];
        int[] counts = new int[n];
        inherit(previous, ids, owner, counts);
        release(owner, counts, target);
        assign(owner, counts, target);
        SlotRuns runs = new SlotRuns(n);
        for (char j : owner) {
            runs.add(j, 1);
        }
        return SlotTable.decode(SlotCodec.encode(Integer.numberOfTrailingZeros(m), n, runs), ids, weights);
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

    /** Copies the previous owners into {@code owner}, leaving the slots of engines that left free. */
    private static void inherit(SlotTable previous, List<String> ids, char[] owner, int[] counts) {
        List<String> previousIds = previous.engineIds();
        char[] remap = new char[previousIds.size()];
        boolean identity = previousIds.equals(ids);
        if (!identity) {
            Map<String, Integer> index = new HashMap<>(ids.size() * 2);
            for (int i = 0; i < ids.size(); i++) {
                index.put(ids.get(i), i);
            }
            for (int i = 0; i < remap.length; i++) {
                Integer now = index.get(previousIds.get(i));
                remap[i] = now == null ? FREE : (char) (int) now;
            }
        }
        int oldBits = Integer.numberOfTrailingZeros(previous.slotCount());
        int newBits = Integer.numberOfTrailingZeros(owner.length);
        for (int s = 0; s < owner.length; s++) {
            // A slot is the top bits of the mixed key: growing the table splits a slot in two halves
            // that keep its owner, shrinking it keeps the owner of the lower half.
            int old = newBits >= oldBits ? s >>> (newBits - oldBits) : s << (oldBits - newBits);
            char j = identity ? (char) previous.owner(old) : remap[previous.owner(old)];
            owner[s] = j;
            if (j != FREE) {
                counts[j]++;
            }
        }
    }
}
