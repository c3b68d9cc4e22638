package dev.sextant.policy;

import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;

/**
 * Turns a topology (demand, engines, network, profiles) into a routing snapshot. Implementations are
 * pure and deterministic: the same topology and options give an equal snapshot, bit for bit.
 */
public interface RoutingPolicy {

    /** The policy's name as the command line spells it: {@code optimal}, {@code nearest}, … */
    String name();

    /** Computes the snapshot; its {@code version} is {@code options.version()}, its hash filled in. */
    Snapshot solve(Topology topology, SolveOptions options);
}
