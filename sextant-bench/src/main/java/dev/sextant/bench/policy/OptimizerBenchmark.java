package dev.sextant.bench.policy;

import dev.sextant.bench.fleet.Fleets;
import dev.sextant.policy.Policies;
import dev.sextant.policy.RoutingPolicy;
import dev.sextant.policy.SolveOptions;
import dev.sextant.snapshot.Objective;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Time of the optimizer ({@code Policies.optimal()}) on the instances of BENCHMARKS.md, single-threaded.
 *
 * <ul>
 *   <li>{@code coldSolve}: from scratch to a certified relative gap ≤ 1e-4 (target on L: ≤ 250 ms);</li>
 *   <li>{@code coldSolveAfterChange}: the same on the changed demand, the baseline of the warm start;</li>
 *   <li>{@code warmResolve}: after a ±5% change of every demand entry, warm-started from the previous
 *       snapshot ({@code SolveOptions.after}), with {@code affinity_discount_ms = 0} so that only the warm
 *       start differs from {@code coldSolveAfterChange} (target on L: ≤ 25 ms);</li>
 *   <li>{@code warmResolveWithAffinity}: the same with the default affinity discount (25 ms), which
 *       changes the problem (traffic that stays where it was earns the discount);</li>
 *   <li>{@code warmResolveSolution}, {@code warmResolveWithAffinitySolution}, {@code coldSolveSolution}: the same
 *       up to the certified solution, before it is written out as a snapshot.</li>
 * </ul>
 *
 * <p>Instances: {@code talk} = examples/talk.yaml, {@code M} = {@code Fleets.medium(1)}, {@code L} =
 * {@code Fleets.large(1)}; {@code M-overloaded}/{@code L-overloaded} (demand 120% of capacity, shedding)
 * on request with {@code -p size=...}. Set-up checks that every snapshot it starts from reaches the gap.
 *
 * <p>Run (2 cores, one fork, the figures of BENCHMARKS.md):
 * <pre>
 * mvn -B -q -DskipTests package -pl sextant-bench -am
 * java -jar sextant-bench/target/benchmarks.jar OptimizerBenchmark -f 1 -wi 3 -i 5
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Threads(1)
public class OptimizerBenchmark {

    /** The instance: {@code talk}, {@code M} or {@code L}. */
    @Param({"talk", "M", "L"})
    public String size;

    /** The gap every solve must reach. */
    static final double GAP = 1e-4;

    private RoutingPolicy optimal;
    private SolveOptions cold;
    private Topology base;
    private Topology changed;
    private SolveOptions warm;
    private Topology changedWithAffinity;
    private SolveOptions warmWithAffinity;

    @Setup(Level.Trial)
    public void setUp() {
        optimal = Policies.optimal();
        cold = SolveOptions.defaults().withGapTolerance(GAP);
        Topology named = Instances.named(size);

        base = Fleets.withAffinityDiscount(named, 0);
        changed = Fleets.withDemandScaled(base, Instances.CHANGE_SEED, Instances.CHANGE);
        warm = cold.after(checked("cold", optimal.solve(base, cold)));
        checked("cold after change", optimal.solve(changed, cold));
        checked("warm", optimal.solve(changed, warm));

        Topology withAffinity = Fleets.withAffinityDiscount(named, Topology.DEFAULT_AFFINITY_DISCOUNT_MS);
        changedWithAffinity = Fleets.withDemandScaled(withAffinity, Instances.CHANGE_SEED, Instances.CHANGE);
        warmWithAffinity = cold.after(checked("cold (affinity)", optimal.solve(withAffinity, cold)));
        checked("warm with affinity", optimal.solve(changedWithAffinity, warmWithAffinity));
    }

    /** Fails unless the snapshot reached the gap; prints what the run measures, for BENCHMARKS.md. */
    private Snapshot checked(String what, Snapshot s) {
        Objective o = s.objective();
        System.out.printf("%n%s %s: gap %.2e, %d iterations, mean latency %.3f ms, shed %.3f req/s%n", size, what,
                o.gapRelative(), o.iterations(), o.meanLatencyMs(), o.shedRps());
        if (!(o.gapRelative() <= GAP)) {
            throw new IllegalStateException(size + " " + what + ": optimizer stopped at relative gap "
                    + o.gapRelative() + " (expected: <= " + GAP + ")");
        }
        return s;
    }

    @Benchmark
    public void coldSolve(Blackhole bh) {
        bh.consume(optimal.solve(base, cold));
    }

    @Benchmark
    public void coldSolveAfterChange(Blackhole bh) {
        bh.consume(optimal.solve(changed, cold));
    }

    @Benchmark
    public void warmResolve(Blackhole bh) {
        bh.consume(optimal.solve(changed, warm));
    }

    /**
     * The warm re-solve up to the certified solution ({@code Policies.optimalSolution}): the optimizer without
     * writing its solution out as a snapshot (per-engine weights, slot tables, content hash), which
     * {@code warmResolve} includes.
     */
    @Benchmark
    public void warmResolveSolution(Blackhole bh) {
        bh.consume(Policies.optimalSolution(optimal, changed, warm));
    }

    /** {@code warmResolveWithAffinity} up to the certified solution, as {@code warmResolveSolution}. */
    @Benchmark
    public void warmResolveWithAffinitySolution(Blackhole bh) {
        bh.consume(Policies.optimalSolution(optimal, changedWithAffinity, warmWithAffinity));
    }

    /** {@code coldSolve} up to the certified solution, as {@code warmResolveSolution}. */
    @Benchmark
    public void coldSolveSolution(Blackhole bh) {
        bh.consume(Policies.optimalSolution(optimal, base, cold));
    }

    @Benchmark
    public void warmResolveWithAffinity(Blackhole bh) {
        bh.consume(optimal.solve(changedWithAffinity, warmWithAffinity));
    }
}
