package dev.sextant.snapshot;

import java.util.Arrays;
import java.util.Map;

/**
 * A grouped route's per-engine weights, {@code weight(e) = fraction(group of e) × share(e)}, written out
 * only when first read (printing, a gateway compiling its own routes, an explanation). Unmodifiable,
 * iterating in engine-id order. A large fleet's re-solve touches tens of thousands of (route, group)
 * pairs instead of the hundreds of thousands of (route, engine) pairs these expand to.
 */
final class GroupedWeights extends IndexedWeights {
    /** The route's groups with positive fraction, in group-id order, and their fractions. */
    final String[] groupIds;
    final double[] fractions;
    final EngineGroup[] groups;
    private static final SortedArrayMap NONE = new SortedArrayMap(new String[0], new double[0]);
    private volatile SortedArrayMap expanded;

    GroupedWeights(String[] groupIds, double[] fractions, EngineGroup[] groups) {
        this.groupIds = groupIds;
        this.fractions = fractions;
        this.groups = groups;
    }

    SortedArrayMap expanded() {
        SortedArrayMap x = expanded;
        if (x == null) {
            // each group's engines come in id order, and no engine is in two groups: merge the groups' lists
            int k = groups.length;
            String[][] ids = new String[k][];
            double[][] values = new double[k][];
            int n = 0;
            for (int a = 0; a < k; a++) {
                Map<String, Double> shares = groups[a].shares();
                ids[a] = new String[shares.size()];
                values[a] = new double[shares.size()];
                int i = 0;
                for (Map.Entry<String, Double> e : shares.entrySet()) {
                    ids[a][i] = e.getKey();
                    values[a][i++] = fractions[a] * e.getValue();
                }
                n += i;
            }
            String[] keys = new String[n];
            double[] weights = new double[n];
            int[] head = new int[k];
            for (int out = 0; out < n; out++) {
                int min = -1;
                for (int a = 0; a < k; a++) {
                    if (head[a] < ids[a].length && (min < 0 || ids[a][head[a]].compareTo(ids[min][head[min]]) < 0)) {
                        min = a;
                    }
                }
                keys[out] = ids[min][head[min]];
                weights[out] = values[min][head[min]++];
            }
            x = new SortedArrayMap(keys, weights);
            expanded = x; // computed alike by any thread that races here
        }
        return x;
    }

    @Override
    public int size() {
        int n = 0;
        for (EngineGroup g : groups) {
            n += g.shares().size();
        }
        return n;
    }

    @Override
    public Double get(Object key) {
        if (!(key instanceof String s)) {
            return null;
        }
        for (int a = 0; a < groups.length; a++) {
            Double share = groups[a].shares().get(s);
            if (share != null) {
                return fractions[a] * share;
            }
        }
        return null;
    }

    @Override
    public boolean containsKey(Object key) {
        return get(key) != null;
    }

    /**
     * As {@link Route#firstWeightMoved} for two grouped routes, without writing either's weights out: group by
     * group (both list their groups in id order), each engine's product here and there.
     */
    static String firstMoved(GroupedWeights a, GroupedWeights b, double by) {
        String first = null;
        int i = 0;
        int j = 0;
        while (i < a.groupIds.length || j < b.groupIds.length) {
            int c = i == a.groupIds.length ? 1 : j == b.groupIds.length ? -1 : a.groupIds[i].compareTo(b.groupIds[j]);
            EngineGroup ga = c <= 0 ? a.groups[i] : null;
            EngineGroup gb = c >= 0 ? b.groups[j] : null;
            double fa = c <= 0 ? a.fractions[i++] : 0;
            double fb = c >= 0 ? b.fractions[j++] : 0;
            String moved = Route.firstMoved(ga == null ? NONE : ga.shares(), fa, gb == null ? NONE : gb.shares(), fb,
                    by);
            if (moved != null && (first == null || moved.compareTo(first) < 0)) {
                first = moved;
            }
        }
        return first;
    }

    /**
     * The groups map (a snapshot's) these weights were last found {@link #builtOver}, or null: a snapshot sealed
     * passes its very maps again, and they need no second look. A benign race: any value it holds is a map these
     * weights were built over, or null.
     */
    Map<String, EngineGroup> checkedOver;

    /** Whether these weights were found built over {@code groups}, that very map, before. */
    boolean foundBuiltOver(Map<String, EngineGroup> groups) {
        return checkedOver == groups;
    }

    /**
     * Whether every group here is the very object the snapshot's groups hold under its id ({@code idOf} is that
     * map turned around, by identity of the groups).
     */
    boolean builtOver(Map<EngineGroup, String> idOf) {
        for (int a = 0; a < groupIds.length; a++) {
            String id = idOf.get(this.groups[a]);
            if (id == null || id != groupIds[a] && !id.equals(groupIds[a])) {
                return false;
            }
        }
        return true;
    }

    /** Same groups, fractions and shares: equal without writing either out. */
    boolean sameAs(GroupedWeights other) {
        return Arrays.equals(groupIds, other.groupIds) && Arrays.equals(fractions, other.fractions)
                && Arrays.equals(groups, other.groups);
    }

    @Override
    public boolean equals(Object o) {
        if (o instanceof GroupedWeights other && sameAs(other)) {
            return true;
        }
        return super.equals(o);
    }

    @Override
    int indexOf(Object key) {
        return expanded().indexOf(key);
    }

    @Override
    String keyAt(int i) {
        return expanded().keys[i];
    }

    @Override
    double valueAt(int i) {
        return expanded().values[i];
    }
}
