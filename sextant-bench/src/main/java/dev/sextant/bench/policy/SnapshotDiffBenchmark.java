package dev.sextant.bench.policy;

import dev.sextant.policy.Policies;
import dev.sextant.policy.RoutingPolicy;
import dev.sextant.policy.SolveOptions;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;
import dev.sextant.bench.fleet.Fleets;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
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
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * The control plane's hysteresis check after a re-solve: does any route's weight of any engine differ from
 * the published snapshot's by more than the hysteresis? Two snapshots of the same instance, before and after
 * the ±5% demand change of {@link OptimizerBenchmark}, every route compared (a hysteresis of 0.5 that no
 * weight crosses, so nothing stops the walk early).
 *
 * <ul>
 *   <li>{@code mergeWalk}: {@link Route#firstWeightMoved}, one merge of the two routes' sorted weights;</li>
 *   <li>{@code unionOfIds}: what the control plane did before, for comparison: a sorted set of both routes'
 *       engine ids, then a look-up of each in both maps.</li>
 * </ul>
 *
 * <pre>
 * java -jar sextant-bench/target/benchmarks.jar SnapshotDiffBenchmark -p size=L -f 1 -wi 3 -i 5 -w 1 -r 1
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class SnapshotDiffBenchmark {
    private static final double HYSTERESIS = 0.5;

    @Param({"M", "L"})
    public String size;

    private Snapshot before;
    private Snapshot after;

    @Setup(Level.Trial)
    public void setUp() {
        RoutingPolicy optimal = Policies.optimal();
        SolveOptions options = SolveOptions.defaults().withGapTolerance(OptimizerBenchmark.GAP);
        Topology base = Instances.named(size);
        Topology changed = Fleets.withDemandScaled(base, Instances.CHANGE_SEED, Instances.CHANGE);
        before = optimal.solve(base, options);
        after = optimal.solve(changed, options.after(before));
        // both ways must agree, or the comparison means nothing
        if (mergeWalkCount() != unionOfIdsCount()) {
            throw new IllegalStateException("the two checks disagree on " + size);
        }
    }

    @Benchmark
    public void mergeWalk(Blackhole bh) {
        bh.consume(mergeWalkCount());
    }

    @Benchmark
    public void unionOfIds(Blackhole bh) {
        bh.consume(unionOfIdsCount());
    }

    private int mergeWalkCount() {
        int moved = 0;
        for (Map.Entry<String, Map<String, Route>> g : after.routes().entrySet()) {
            for (Map.Entry<String, Route> c : g.getValue().entrySet()) {
                moved += before.route(g.getKey(), c.getKey()).firstWeightMoved(c.getValue(), HYSTERESIS) == null ? 0 : 1;
            }
        }
        return moved;
    }

    private int unionOfIdsCount() {
        int moved = 0;
        for (Map.Entry<String, Map<String, Route>> g : after.routes().entrySet()) {
            for (Map.Entry<String, Route> c : g.getValue().entrySet()) {
                Route a = before.route(g.getKey(), c.getKey());
                Route b = c.getValue();
                Set<String> ids = new TreeSet<>(a.weights().keySet());
                ids.addAll(b.weights().keySet());
                for (String id : ids) {
                    if (Math.abs(a.weights().getOrDefault(id, 0.0) - b.weights().getOrDefault(id, 0.0)) > HYSTERESIS) {
                        moved++;
                        break;
                    }
                }
            }
        }
        return moved;
    }
}
