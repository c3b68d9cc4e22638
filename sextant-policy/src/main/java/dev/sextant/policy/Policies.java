package dev.sextant.policy;

import java.util.List;

/** The routing policies Sextant knows, by name. */
public final class Policies {
    private Policies() {
    }

    /** Names accepted by {@link #byName}, the optimizer first. */
    public static final List<String> NAMES = List.of("optimal", "nearest", "waterfall", "proportional");

    /**
     * Minimizes expected end-to-end latency (docs/design.md §3), with a certificate of optimality. Each policy
     * object remembers what its last solve built that does not depend on demand, and the engines' hashed texts:
     * a control loop keeps one for all its re-solves, which is what makes them warm.
     */
    public static RoutingPolicy optimal() {
        return new OptimalPolicy();
    }

    /**
     * The optimizer's certified solution before it is written out as a snapshot ({@code optimal().solve} is
     * {@code optimalSolution(...).snapshot()}): for measuring the optimizer apart from the snapshot's assembly.
     * Solved by a new policy object, which remembers nothing of an earlier solve (see the other overload).
     */
    public static CertifiedSolution optimalSolution(dev.sextant.topology.Topology topology, SolveOptions options) {
        return new OptimalPolicy().certify(topology, options);
    }

    /**
     * As {@link #optimalSolution(dev.sextant.topology.Topology, SolveOptions)}, solved by {@code optimal}, a policy
     * from {@link #optimal()}: a policy object remembers what its last solve built that does not depend on demand,
     * so a caller re-solving as demand moves keeps one and passes it here.
     *
     * @throws IllegalArgumentException when {@code optimal} is not a policy {@link #optimal()} made
     */
    public static CertifiedSolution optimalSolution(RoutingPolicy optimal, dev.sextant.topology.Topology topology,
                                                    SolveOptions options) {
        if (!(optimal instanceof OptimalPolicy p)) {
            throw new IllegalArgumentException("optimal: policy '" + optimal.name()
                    + "' (expected: one made by Policies.optimal())");
        }
        return p.certify(topology, options);
    }

    /**
     * What {@code held}'s routing would cost on {@code topology}: its weights applied to the topology's demand and
     * priced with the topology's profiles, capacities and round trips, as the optimizer prices them (beyond an
     * engine's effective capacity too, up to its capacity). For a control plane that asks whether a new solve is
     * worth publishing. See {@link HeldRouting}.
     */
    public static HeldRouting evaluate(dev.sextant.topology.Topology topology, dev.sextant.snapshot.Snapshot held) {
        return Evaluation.of(topology, held);
    }

    /** All traffic to the lowest-RTT allowed engines, split by effective capacity, whatever their load. */
    public static RoutingPolicy nearest() {
        return new BaselinePolicy("nearest");
    }

    /** Nearest first; when those engines are full, spill over to the next nearest, and so on. */
    public static RoutingPolicy waterfall() {
        return new BaselinePolicy("waterfall");
    }

    /** Every allowed engine in proportion to its effective capacity, whatever the distance. */
    public static RoutingPolicy proportional() {
        return new BaselinePolicy("proportional");
    }

    /** The policy named {@code name} (one of {@link #NAMES}), or throws {@link IllegalArgumentException}. */
    public static RoutingPolicy byName(String name) {
        return switch (name) {
            case "optimal" -> optimal();
            case "nearest" -> nearest();
            case "waterfall" -> waterfall();
            case "proportional" -> proportional();
            default -> throw new IllegalArgumentException("policy: '" + name + "' (expected one of " + NAMES + ")");
        };
    }
}
