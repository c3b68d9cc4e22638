package dev.sextant.snapshot;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * How one gateway cluster routes one class.
 *
 * @param model         the class's model id
 * @param residency     regions the class may be served in; empty = any
 * @param priority      the class's priority, higher is more important
 * @param demandRps     the demand the policy was computed for, req/s, ≥ 0
 * @param weights       engine id → fraction of this class's requests sent there, each in [0, 1],
 *                      summing to {@code 1 − shedFraction}; only allowed engines appear; unmodifiable,
 *                      iterating in engine-id order
 * @param shedFraction  fraction refused by admission, in [0, 1]
 * @param priceMs       the class's marginal latency π: the cost in ms of serving one more request of
 *                      this class (equal across the engines it uses); null-free, NaN for a policy
 *                      that has no prices
 * @param slots         the class's slot table, {@link SlotTable#encode() encoded}, over the engines with
 *                      positive weight in id order: the control plane computes it (from the previous
 *                      snapshot's table, moving as few keys as possible) so that every gateway chooses
 *                      the same engines for the same key. Empty when no weight is positive, or when the
 *                      producer computed none (gateways then build one from the weights alone). For a
 *                      grouped route, the table over its groups in id order instead: the first level of
 *                      two-level consistent hashing, whose second level is each group's own table
 * @param groups        for a route weighted over {@link EngineGroup engine groups} (as the optimal policy
 *                      writes them): group id → fraction of this class's requests sent to the group, each
 *                      in (0, 1], iterating in group-id order; an engine's weight is then its group's
 *                      fraction times its share of the group, which the snapshot checks. Empty for a
 *                      route weighted engine by engine
 * @param allowedUtilization the utilization of the engines this class may use from this gateway cluster, as the
 *                      policy plans it: Σ load / Σ effective capacity over the class's allowed engines (model served,
 *                      region within the residency, reachable) that have effective capacity, where an engine's load
 *                      is everything the policy sends it, from every class; 1 when none of them has capacity. The
 *                      class's retry budget deposits r(u) per request at this u. Finite and ≥ 0 (above 1 when a
 *                      policy overloads the engines), or NaN when the producer did not compute it (a snapshot from
 *                      before the field): {@link Snapshot#allowedUtilizationOf} then falls back to the fleet's
 */
public record Route(String model, List<String> residency, int priority, double demandRps, Map<String, Double> weights,
                    double shedFraction, double priceMs, String slots, Map<String, Double> groups,
                    double allowedUtilization) {

    /** A route without a slot table ({@code slots} empty): gateways build one from the weights. */
    public Route(String model, List<String> residency, int priority, double demandRps, Map<String, Double> weights,
                 double shedFraction, double priceMs) {
        this(model, residency, priority, demandRps, weights, shedFraction, priceMs, "");
    }

    /** A route weighted engine by engine ({@code groups} empty). */
    public Route(String model, List<String> residency, int priority, double demandRps, Map<String, Double> weights,
                 double shedFraction, double priceMs, String slots) {
        this(model, residency, priority, demandRps, weights, shedFraction, priceMs, slots, Map.of());
    }

    /** A route without an allowed utilization (NaN): its class's retry budget follows the fleet's utilization. */
    public Route(String model, List<String> residency, int priority, double demandRps, Map<String, Double> weights,
                 double shedFraction, double priceMs, String slots, Map<String, Double> groups) {
        this(model, residency, priority, demandRps, weights, shedFraction, priceMs, slots, groups, Double.NaN);
    }

    public Route {
        Present.present(model, "model", "a model id");
        residency = Present.items(residency, "residency", "a list of regions", "a region");
        Present.present(weights, "weights", "an object of engine id → weight");
        if (!(shedFraction >= 0 && shedFraction <= 1)) {
            throw new IllegalArgumentException("shed_fraction: " + shedFraction + " (expected: in [0, 1])");
        }
        if (!(Double.isNaN(allowedUtilization) || allowedUtilization >= 0 && !Double.isInfinite(allowedUtilization))) {
            throw new IllegalArgumentException("allowed_utilization: " + allowedUtilization
                    + " (expected: a finite number >= 0, or absent)");
        }
        if (!(weights instanceof SortedWeights || weights instanceof GroupedWeights)) { // checked when made
            weights = sortedCopy(weights);
            weights.forEach((e, w) -> checkWeight(e, w));
        }
        if (groups == null) {
            groups = Map.of();
        } else if (!(groups instanceof SortedArrayMap)) {
            groups.forEach((g, f) -> {
                if (!(f != null && f > 0 && f <= 1)) {
                    throw new IllegalArgumentException("groups." + g + ": " + f + " (expected: in (0, 1])");
                }
            });
            groups = sortedCopy(groups);
        }
        if (slots == null) {
            throw new IllegalArgumentException("slots: null (expected: an encoded slot table, or empty)");
        }
        // a grouped route's weights are positive products: no need to write them out to see it
        if (!slots.isEmpty() && !(weights instanceof GroupedWeights) && weights.values().stream().noneMatch(w -> w > 0)) {
            throw new IllegalArgumentException("slots: " + abbreviated(slots)
                    + " (expected: empty when no weight is positive)");
        }
    }

    /**
     * Weights for a route without building a map: engine {@code ids.get(ranks[i])} has weight
     * {@code values[i]}. The result is an unmodifiable map iterating in engine-id order; the arrays are
     * copied. Policies use it for large fleets, where a snapshot holds about a million weights.
     *
     * @param ids    the engine ids the ranks refer to, shared by all routes of a snapshot
     * @param ranks  strictly ascending, each in [0, {@code ids.size()})
     * @param values one per rank, each in [0, 1]
     */
    public static Map<String, Double> weights(SortedEngineIds ids, int[] ranks, double[] values) {
        if (ranks.length != values.length) {
            throw new IllegalArgumentException("values: " + values.length + " for " + ranks.length
                    + " ranks (expected: one per rank)");
        }
        for (int i = 0; i < ranks.length; i++) {
            if (ranks[i] < 0 || ranks[i] >= ids.size() || i > 0 && ranks[i] <= ranks[i - 1]) {
                throw new IllegalArgumentException("ranks[" + i + "]: " + ranks[i] + " (expected: ascending, in [0, "
                        + ids.size() + "))");
            }
            if (!(values[i] >= 0 && values[i] <= 1)) {
                checkWeight(ids.get(ranks[i]), values[i]);
            }
        }
        return new SortedWeights(ids, ranks.clone(), values.clone());
    }

    private static void checkWeight(String engine, double w) {
        if (!(w >= 0 && w <= 1)) {
            throw new IllegalArgumentException("weights." + engine + ": " + w + " (expected: in [0, 1])");
        }
    }

    /**
     * A route weighted over engine groups, its weights written out only when read.
     *
     * @param groupIds  the groups with a positive fraction, strictly ascending
     * @param fractions one per group, each in (0, 1]
     * @param groups    one per group: its engines and their shares; no engine in two of them (a snapshot read from
     *                  JSON is checked for it, a policy's groups are disjoint by construction)
     * @param slots     the encoded slot table over {@code groupIds} in order, with {@code fractions} as weights
     */
    public static Route grouped(String model, List<String> residency, int priority, double demandRps,
                                String[] groupIds, double[] fractions, EngineGroup[] groups, double shedFraction,
                                double priceMs, String slots) {
        return grouped(model, residency, priority, demandRps, groupIds, fractions, groups, shedFraction, priceMs, slots,
                Double.NaN);
    }

    /**
     * A route weighted over engine groups with its {@link #allowedUtilization()}; the other arguments as for
     * {@link #grouped(String, List, int, double, String[], double[], EngineGroup[], double, double, String)}.
     */
    public static Route grouped(String model, List<String> residency, int priority, double demandRps,
                                String[] groupIds, double[] fractions, EngineGroup[] groups, double shedFraction,
                                double priceMs, String slots, double allowedUtilization) {
        if (groupIds.length != fractions.length || groupIds.length != groups.length) {
            throw new IllegalArgumentException("groups: " + groupIds.length + " ids, " + fractions.length
                    + " fractions and " + groups.length + " groups (expected: one of each per group)");
        }
        for (int i = 0; i < groupIds.length; i++) {
            if (i > 0 && groupIds[i].compareTo(groupIds[i - 1]) <= 0) {
                throw new IllegalArgumentException("groups: '" + groupIds[i] + "' after '" + groupIds[i - 1]
                        + "' (expected: ascending, distinct)");
            }
            if (!(fractions[i] > 0 && fractions[i] <= 1)) {
                throw new IllegalArgumentException("groups." + groupIds[i] + ": " + fractions[i]
                        + " (expected: in (0, 1])");
            }
        }
        String[] ids = groupIds.clone();
        double[] f = fractions.clone();
        return new Route(model, residency, priority, demandRps, new GroupedWeights(ids, f, groups.clone()),
                shedFraction, priceMs, slots, new SortedArrayMap(ids, f), allowedUtilization);
    }

    /** True for a route weighted over engine groups: see {@link #groups()}. */
    public boolean hasGroups() {
        return !groups.isEmpty();
    }

    /** Receives a route's weights by engine rank: see {@link #forEachRanked}. */
    @FunctionalInterface
    public interface RankedWeights {
        void accept(int rank, double weight);
    }

    /**
     * Calls {@code action} with each weight and its engine's position in {@code ids}, in id order, and
     * returns true, when this route's weights are held over {@code ids} or an equal list (as a policy
     * builds them); else calls nothing and returns false, and the caller reads {@link #weights()}. Spares a
     * caller that holds engines by rank a look-up by id per weight, and a boxed number.
     */
    public boolean forEachRanked(SortedEngineIds ids, RankedWeights action) {
        if (!(weights instanceof SortedWeights sw) || !sw.ids.sameAs(ids)) {
            return false;
        }
        for (int i = 0; i < sw.rank.length; i++) {
            action.accept(sw.rank[i], sw.value[i]);
        }
        return true;
    }

    /**
     * The engines with positive weight, in id order: the engines {@link #slots()} indexes for a route
     * weighted engine by engine, and the engines a grouped route's two-level table indexes.
     */
    public List<String> slotEngines() {
        return positiveIds(weights);
    }

    /** The positive weights, aligned with {@link #slotEngines()}. */
    public double[] slotWeights() {
        return positiveValues(weights);
    }

    /**
     * The consistent-hashing order this route's {@link #slots()} give keys over {@link #slotEngines()}: its own
     * table, or for a grouped route the two levels of {@link GroupedTable} over {@code groups} (the snapshot's).
     *
     * @throws IllegalArgumentException when a table is missing or does not decode
     */
    public KeyOrder keyOrder(Map<String, EngineGroup> groups) {
        return hasGroups() ? GroupedTable.of(this, groups, new java.util.HashMap<>())
                : SlotTable.decode(slots, slotEngines(), slotWeights());
    }

    /** The groups of a grouped route, in id order: what its {@link #slots()} indexes; empty otherwise. */
    public List<String> slotGroups() {
        return positiveIds(groups);
    }

    /** The fractions of a grouped route, aligned with {@link #slotGroups()}. */
    public double[] slotFractions() {
        return positiveValues(groups);
    }

    /**
     * The ids of a route's positive weights, in the map's (engine-id) order: the engines its slot table
     * indexes.
     */
    public static List<String> positiveIds(Map<String, Double> weights) {
        if (weights instanceof SortedArrayMap m && m.allPositive()) {
            return Collections.unmodifiableList(Arrays.asList(m.keys)); // a view: the map never changes its arrays
        }
        if (weights instanceof SortedWeights sw) {
            List<String> out = new ArrayList<>(sw.rank.length);
            for (int i = 0; i < sw.rank.length; i++) {
                if (sw.value[i] > 0) {
                    out.add(sw.ids.get(sw.rank[i]));
                }
            }
            return Collections.unmodifiableList(out);
        }
        List<String> out = new ArrayList<>(weights.size());
        weights.forEach((e, w) -> {
            if (w > 0) {
                out.add(e);
            }
        });
        return Collections.unmodifiableList(out);
    }

    /** A route's positive weights, aligned with {@link #positiveIds}. */
    public static double[] positiveValues(Map<String, Double> weights) {
        if (weights instanceof SortedArrayMap m && m.allPositive()) {
            return m.values.clone();
        }
        if (weights instanceof SortedWeights sw) {
            int count = 0;
            for (double w : sw.value) {
                count += w > 0 ? 1 : 0;
            }
            if (count == sw.value.length) {
                return sw.value.clone();
            }
            double[] out = new double[count];
            for (int i = 0, p = 0; i < sw.value.length; i++) {
                if (sw.value[i] > 0) {
                    out[p++] = sw.value[i];
                }
            }
            return out;
        }
        double[] out = new double[weights.size()];
        int count = 0;
        for (double w : weights.values()) {
            if (w > 0) {
                out[count++] = w;
            }
        }
        return count == out.length ? out : Arrays.copyOf(out, count);
    }

    /**
     * The first engine, in id order, whose weight here and in {@code other} differ by more than {@code by}
     * (an engine a route does not list has weight 0 in it), or null when there is none. One merge of the two
     * routes' weights, which both iterate in engine-id order: the control plane asks this of every route
     * after every solve, and a large fleet's routes list hundreds of engines each.
     */
    public String firstWeightMoved(Route other, double by) {
        if (weights instanceof GroupedWeights a && other.weights instanceof GroupedWeights b) {
            return GroupedWeights.firstMoved(a, b, by);
        }
        if (weights instanceof SortedWeights a && other.weights instanceof SortedWeights b && a.ids.sameAs(b.ids)) {
            int i = 0;
            int j = 0;
            while (i < a.rank.length || j < b.rank.length) {
                int ra = i < a.rank.length ? a.rank[i] : Integer.MAX_VALUE;
                int rb = j < b.rank.length ? b.rank[j] : Integer.MAX_VALUE;
                double wa = ra <= rb ? a.value[i++] : 0;
                double wb = rb <= ra ? b.value[j++] : 0;
                if (Math.abs(wa - wb) > by) {
                    return a.ids.get(Math.min(ra, rb));
                }
            }
            return null;
        }
        return firstMoved(weights, 1, other.weights, 1, by);
    }

    /**
     * The first engine, in id order, whose weight {@code fa × a} and {@code fb × b} differ by more than {@code by}
     * (0 where a map has no entry): one merge of the two maps, which both iterate in engine-id order.
     */
    static String firstMoved(Map<String, Double> a, double fa, Map<String, Double> b, double fb, double by) {
        if (a instanceof IndexedWeights x && b instanceof IndexedWeights y) {
            // by position, without an entry object per engine: a large fleet's routes expand to 430k weights
            int i = 0;
            int j = 0;
            while (i < x.size() || j < y.size()) {
                String kx = i < x.size() ? x.keyAt(i) : null;
                String ky = j < y.size() ? y.keyAt(j) : null;
                int c = kx == null ? 1 : ky == null ? -1 : kx == ky ? 0 : kx.compareTo(ky);
                double wa = c <= 0 ? fa * x.valueAt(i++) : 0;
                double wb = c >= 0 ? fb * y.valueAt(j++) : 0;
                if (Math.abs(wa - wb) > by) {
                    return c <= 0 ? kx : ky;
                }
            }
            return null;
        }
        var ia = a.entrySet().iterator();
        var ib = b.entrySet().iterator();
        Map.Entry<String, Double> ea = ia.hasNext() ? ia.next() : null;
        Map.Entry<String, Double> eb = ib.hasNext() ? ib.next() : null;
        while (ea != null || eb != null) {
            int c = ea == null ? 1 : eb == null ? -1 : ea.getKey().compareTo(eb.getKey());
            double wa = c <= 0 ? fa * ea.getValue() : 0;
            double wb = c >= 0 ? fb * eb.getValue() : 0;
            if (Math.abs(wa - wb) > by) {
                return c <= 0 ? ea.getKey() : eb.getKey();
            }
            if (c <= 0) {
                ea = ia.hasNext() ? ia.next() : null;
            }
            if (c >= 0) {
                eb = ib.hasNext() ? ib.next() : null;
            }
        }
        return null;
    }

    private static String abbreviated(String s) {
        return s.length() <= 24 ? "'" + s + "'" : "'" + s.substring(0, 24) + "…' (" + s.length() + " characters)";
    }

    /**
     * An unmodifiable copy iterating in engine-id order. Routes of a large fleet carry hundreds of
     * weights each and snapshots are rebuilt often, so a copy of input that is already in order (as
     * the policies build it) is one linear pass, not a tree built key by key.
     */
    private static Map<String, Double> sortedCopy(Map<String, Double> weights) {
        String previous = null;
        boolean inOrder = true;
        for (String id : weights.keySet()) {
            if (previous != null && previous.compareTo(id) >= 0) {
                inOrder = false;
                break;
            }
            previous = id;
        }
        Map<String, Double> out = new java.util.LinkedHashMap<>(Math.max(4, weights.size() * 4 / 3 + 1));
        if (inOrder) {
            out.putAll(weights);
        } else {
            out.putAll(new TreeMap<>(weights));
        }
        return Collections.unmodifiableMap(out);
    }
}
