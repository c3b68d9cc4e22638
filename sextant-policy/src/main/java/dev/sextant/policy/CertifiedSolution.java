package dev.sextant.policy;

import dev.sextant.snapshot.Snapshot;
import java.util.function.Supplier;

/**
 * The optimizer's solution before it is a snapshot: every source's flow into each engine group, each group's load
 * split among its engines, the prices and the certificate (docs/design.md §3). A route's weight of an engine is its
 * group's fraction times the engine's share of the group, so the solution holds a few numbers per (source, group)
 * pair; {@link #snapshot()} writes them out per (source, engine) pair, computes each route's slot table and the
 * content hash. Measured apart (BENCHMARKS.md) because on a large fleet that second step costs more than the first.
 */
public final class CertifiedSolution {
    private final double latencyCost;
    private final double lowerBound;
    private final int iterations;
    private final double shedRps;
    private final Supplier<Snapshot> assembly;

    CertifiedSolution(double latencyCost, double lowerBound, int iterations, double shedRps, Supplier<Snapshot> assembly) {
        this.latencyCost = latencyCost;
        this.lowerBound = lowerBound;
        this.iterations = iterations;
        this.shedRps = shedRps;
        this.assembly = assembly;
    }

    /** Expected latency summed over routed requests per second, ms·req/s: the objective without shed costs. */
    public double latencyCost() {
        return latencyCost;
    }

    /** The Lagrangian dual's lower bound on {@link #latencyCost()}, shed amounts fixed. */
    public double lowerBound() {
        return lowerBound;
    }

    /** {@code (latency cost − bound) / latency cost}, as the snapshot's {@code objective.gap_relative}. */
    public double gapRelative() {
        return gap(latencyCost, lowerBound);
    }

    /** {@code (cost − bound) / cost}, 0 for no cost: the certificate's relative gap, wherever it is reported. */
    static double gap(double cost, double bound) {
        return cost > 0 ? Math.max(0, cost - bound) / cost : 0;
    }

    /** Newton iterations it took, over all components. */
    public int iterations() {
        return iterations;
    }

    /** Demand shed in all, req/s. */
    public double shedRps() {
        return shedRps;
    }

    /** The snapshot of this solution, as {@code Policies.optimal().solve} returns it; assembled on each call. */
    public Snapshot snapshot() {
        return assembly.get();
    }
}
