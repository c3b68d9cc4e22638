package dev.sextant.snapshot;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Two-level consistent hashing for a grouped route ({@link Route#groups()}): the route's own table picks
 * a key's engine group, that group's table (shared by every route using the group) picks the engine
 * within it, from an independent hash of the same key. A key's first choice is engine e of group g with
 * probability (g's slots / route's slots) × (e's slots / g's slots): the group's fraction times the
 * engine's share, each to within a slot, as a flat table over the route's engines would draw it. Each
 * level is rebalanced from the previous snapshot's table by the control plane, so a re-solve moves the
 * keys of a route no more than the change of its fractions and of its groups' shares requires.
 *
 * <p>Probe {@code i} below {@link SlotTable#PROBES} is probe i of the route's table followed by probe i of
 * the chosen group's table; the tail walks all of the route's engines from a key-dependent start, as in
 * {@link SlotTable}. Immutable; selection does not allocate.
 */
public final class GroupedTable implements KeyOrder {
    /** Offsets the key for the second level, so that it is drawn independently of the first. */
    private static final long GROUP_SALT = 0x632BE59BD9B4E019L;

    private final SlotTable top;
    private final SlotTable[] within;
    /** Per group of the route (its order in {@code top}): engine index in the group's table → route index. */
    private final int[][] toRoute;
    private final List<String> ids;

    private GroupedTable(SlotTable top, SlotTable[] within, int[][] toRoute, List<String> ids) {
        this.top = top;
        this.within = within;
        this.toRoute = toRoute;
        this.ids = ids;
    }

    /**
     * The table of grouped route {@code r}, whose groups {@code groups} describes.
     *
     * @param decoded group tables already decoded, by group id, shared between the routes of one snapshot;
     *                the tables this call decodes are added
     * @throws IllegalArgumentException when a table does not decode (see {@link SlotTable#decode}), a group
     *                                  is missing, or an engine of a group has no positive weight
     */
    public static GroupedTable of(Route r, Map<String, EngineGroup> groups, Map<String, SlotTable> decoded) {
        if (!r.hasGroups()) {
            throw new IllegalArgumentException("groups: none (expected: a route weighted over engine groups)");
        }
        List<String> groupIds = r.slotGroups();
        SlotTable top = SlotTable.decode(r.slots(), groupIds, r.slotFractions());
        List<String> ids = r.slotEngines();
        Map<String, Integer> index = new HashMap<>(ids.size() * 2);
        for (int i = 0; i < ids.size(); i++) {
            index.put(ids.get(i), i);
        }
        SlotTable[] within = new SlotTable[groupIds.size()];
        int[][] toRoute = new int[within.length][];
        int engines = 0;
        for (int a = 0; a < within.length; a++) {
            String id = groupIds.get(a);
            EngineGroup g = groups.get(id);
            if (g == null) {
                throw new IllegalArgumentException("groups." + id + ": unknown group (expected: a key of groups)");
            }
            SlotTable t = decoded.get(id);
            if (t == null) {
                try {
                    t = SlotTable.decode(g.slots(), g.engines(), g.shareValues());
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("groups." + id + "." + e.getMessage(), e);
                }
                decoded.put(id, t);
            }
            within[a] = t;
            List<String> members = t.engineIds();
            toRoute[a] = new int[members.size()];
            for (int i = 0; i < members.size(); i++) {
                Integer at = index.get(members.get(i));
                if (at == null) {
                    throw new IllegalArgumentException("groups." + id + ": engine " + members.get(i)
                            + " has no positive weight in the route (expected: every engine of its groups)");
                }
                toRoute[a][i] = at;
            }
            engines += members.size();
        }
        if (engines != ids.size()) {
            throw new IllegalArgumentException("groups: " + engines + " engines for " + ids.size()
                    + " positive weights (expected: each engine in one group)");
        }
        return new GroupedTable(top, within, toRoute, ids);
    }

    @Override
    public int first(long key) {
        int g = top.first(key);
        return toRoute[g][within[g].first(key ^ GROUP_SALT)];
    }

    @Override
    public int probe(long key, int i) {
        if (i < SlotTable.PROBES) {
            int g = top.probe(key, i);
            return toRoute[g][within[g].probe(key ^ GROUP_SALT, i)];
        }
        return SlotTable.tail(key, i, ids.size());
    }

    @Override
    public int orderLength() {
        return ids.size();
    }

    @Override
    public List<String> engineIds() {
        return ids;
    }
}
