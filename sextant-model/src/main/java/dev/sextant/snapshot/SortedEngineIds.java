package dev.sextant.snapshot;

import java.util.List;

/**
 * Engine ids in ascending order, each once: the ids that {@link Route#weights(SortedEngineIds, int[], double[])}
 * indexes. A policy builds one per solve and every route of the snapshot shares it, so a route's
 * weights are two arrays instead of a map of boxed numbers, and the ids are checked for order once.
 * Immutable (it only remembers, as a cache, the last list found equal to it).
 */
public final class SortedEngineIds {
    private final String[] ids;
    /** A list {@link #sameAs} found equal to this one, or null. */
    private SortedEngineIds knownEqual;

    private SortedEngineIds(String[] ids) {
        this.ids = ids;
    }

    /**
     * @param ids engine ids, strictly ascending ({@link String#compareTo})
     * @throws IllegalArgumentException when an id is null or not above the one before it
     */
    public static SortedEngineIds of(List<String> ids) {
        String[] a = ids.toArray(new String[0]);
        for (int i = 0; i < a.length; i++) {
            if (a[i] == null) {
                throw new IllegalArgumentException("ids[" + i + "]: null (expected: an engine id)");
            }
            if (i > 0 && a[i - 1].compareTo(a[i]) >= 0) {
                throw new IllegalArgumentException("ids[" + i + "]: " + a[i] + " after " + a[i - 1]
                        + " (expected: strictly ascending)");
            }
        }
        return new SortedEngineIds(a);
    }

    /** Number of ids. */
    public int size() {
        return ids.length;
    }

    /** The id at {@code rank}, in [0, {@link #size()}). */
    public String get(int rank) {
        return ids[rank];
    }

    /** The rank of {@code id}, or −1 when it is not one of these ids. */
    public int rankOf(String id) {
        int at = java.util.Arrays.binarySearch(ids, id);
        return at >= 0 ? at : -1;
    }

    /**
     * True when these are the same ids as {@code other}'s, in the same order. The last list found equal is
     * remembered (a snapshot's routes are compared with the previous snapshot's, thousands of times over
     * the same two lists).
     */
    public boolean sameAs(SortedEngineIds other) {
        if (other == this || other == knownEqual) {
            return true;
        }
        if (!java.util.Arrays.equals(ids, other.ids)) {
            return false;
        }
        knownEqual = other; // a benign race: any value it holds is a list equal to this one, or null
        other.knownEqual = this;
        return true;
    }

    /** True when these are exactly {@code ids}, in the same order. */
    boolean sameAs(java.util.Collection<String> ids) {
        if (ids.size() != this.ids.length) {
            return false;
        }
        int i = 0;
        for (String id : ids) {
            if (!this.ids[i++].equals(id)) {
                return false;
            }
        }
        return true;
    }
}
