package dev.sextant.app;

import dev.sextant.policy.Explainer;
import dev.sextant.policy.Explanation;
import dev.sextant.policy.Policies;
import dev.sextant.policy.RoutingPolicy;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;
import java.util.function.Function;

/**
 * What the commands call beyond loading and printing: the policies by name and the explainer. Tests
 * give small fakes; {@link #production()} gives the real ones.
 *
 * @param policies policy by name, one of {@link Policies#NAMES}
 * @param explain  builds the explanation of one (gateway cluster, class)
 * @param toText   the explanation as text for a terminal
 */
record Services(Function<String, RoutingPolicy> policies, Explain explain, Function<Explanation, String> toText) {

    /** {@link Explainer#explain}'s shape. */
    @FunctionalInterface
    interface Explain {
        Explanation explain(Topology topology, Snapshot snapshot, String gateway, String classId);
    }

    static Services production() {
        return new Services(Policies::byName, Explainer::explain, Explainer::toText);
    }
}
