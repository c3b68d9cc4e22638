package dev.sextant.snapshot;

import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * Engines of one engine cluster that serve the same models: interchangeable for every class, so the
 * optimizer routes to the group and splits the group's load among its engines once, at equal marginal
 * cost, for every route that uses it (docs/design.md §3). A route weighted over groups
 * ({@link Route#groups()}) sends an engine its group's fraction times the engine's share here.
 *
 * @param shares engine id → the engine's share of the group's load, each in (0, 1]; unmodifiable,
 *               iterating in engine-id order
 * @param slots  the group's slot table, {@link SlotTable#encode() encoded}, over its engines in id order:
 *               a key's engine within the group, the second level of a grouped route's consistent
 *               hashing; computed by the control plane from the previous snapshot's table for the group
 */
public record EngineGroup(Map<String, Double> shares, String slots) {

    public EngineGroup {
        if (shares == null || shares.isEmpty()) {
            throw new IllegalArgumentException("shares: none (expected: at least one engine)");
        }
        if (!(shares instanceof SortedWeights sw && sw.allPositive)) {
            shares.forEach((e, s) -> {
                if (!(s != null && s > 0 && s <= 1)) {
                    throw new IllegalArgumentException("shares." + e + ": " + s + " (expected: in (0, 1])");
                }
            });
            shares = Collections.unmodifiableSortedMap(new java.util.TreeMap<>(shares));
        }
        if (slots == null || slots.isEmpty()) {
            throw new IllegalArgumentException("slots: empty (expected: the group's encoded slot table)");
        }
    }

    /** The engines, in id order: the engines {@link #slots()} indexes. */
    public List<String> engines() {
        return Route.positiveIds(shares);
    }

    /** The shares, aligned with {@link #engines()}. */
    public double[] shareValues() {
        return Route.positiveValues(shares);
    }
}
