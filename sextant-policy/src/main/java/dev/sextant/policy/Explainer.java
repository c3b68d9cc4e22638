package dev.sextant.policy;

import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;

/** Explains a snapshot's numbers for one (gateway cluster, class). */
public final class Explainer {
    private Explainer() {
    }

    /**
     * Builds the explanation of how {@code snapshot} routes class {@code classId} at {@code gateway}.
     *
     * @throws IllegalArgumentException when the gateway or class is unknown
     */
    public static Explanation explain(Topology topology, Snapshot snapshot, String gateway, String classId) {
        throw new UnsupportedOperationException("explain: being built");
    }

    /** The explanation as text for a terminal. */
    public static String toText(Explanation explanation) {
        throw new UnsupportedOperationException("explain: being built");
    }
}
