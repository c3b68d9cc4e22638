package dev.sextant.bench.policy;

import dev.sextant.bench.reference.ReferenceSolution;
import dev.sextant.bench.reference.ReferenceSolver;
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
 * Time of the independent reference solver (ojAlgo LP, {@link ReferenceSolver}) on the instances of
 * {@link OptimizerBenchmark}, so that BENCHMARKS.md can report the optimizer's speed-up at equal gap.
 *
 * <p>Equal gap: {@value #SEGMENTS} segments per engine cost bound the interpolation error a priori
 * at ≈ 2-4e-5 of the latency cost on talk, M and L (every solve checks it is below 1e-4),
 * the same order as the optimizer's certified gap ≤ 1e-4. The time includes building the LP, as the
 * optimizer's includes its set-up. The LP has no warm start, so the same figure stands against the
 * optimizer's warm re-solve.
 *
 * <p>Formulation ({@code -p formulation=}): {@code aggregated} (default) gives flow columns to groups of
 * interchangeable engines and merges identical engines (an exact reformulation, see
 * {@link ReferenceSolver#aggregated()}); {@code plain} is one flow column per (gateway cluster, class,
 * engine), tractable for talk and M only (L has ~910k flow columns and 410k segment columns).
 *
 * <p>Run (2 cores, one fork; L takes about 100 s per solve, so few iterations):
 * <pre>
 * mvn -B -q -DskipTests package -pl sextant-bench -am
 * java -jar sextant-bench/target/benchmarks.jar ReferenceSolverBenchmark -f 1 -wi 1 -i 3
 * java -jar sextant-bench/target/benchmarks.jar ReferenceSolverBenchmark -f 1 -wi 1 -i 3 -p size=talk,M -p formulation=plain
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms4g", "-Xmx4g"})
@Warmup(iterations = 1, time = 5)
@Measurement(iterations = 3, time = 5)
@Threads(1)
public class ReferenceSolverBenchmark {

    /** Segments per engine cost. */
    public static final int SEGMENTS = 100;

    /** The instance: {@code talk}, {@code M} or {@code L}. */
    @Param({"talk", "M", "L"})
    public String size;

    /** {@code aggregated} or {@code plain}. */
    @Param({"aggregated"})
    public String formulation;

    private Topology topology;
    private ReferenceSolver solver;

    @Setup(Level.Trial)
    public void setUp() {
        topology = Instances.named(size);
        solver = switch (formulation) {
            case "aggregated" -> ReferenceSolver.withSegments(SEGMENTS).aggregated();
            case "plain" -> ReferenceSolver.withSegments(SEGMENTS);
            default -> throw new IllegalArgumentException("formulation: '" + formulation
                    + "' (expected: aggregated or plain)");
        };
    }

    @Benchmark
    public void solve(Blackhole bh) {
        ReferenceSolution s = solver.solve(topology);
        if (!s.optimal()) {
            throw new IllegalStateException("reference LP ended " + s.state() + " on " + size);
        }
        if (!(s.pwlErrorBoundRelative() <= 1e-4)) {
            throw new IllegalStateException("interpolation error bound " + s.pwlErrorBoundRelative()
                    + " of the latency cost on " + size + " (expected: <= 1e-4; raise SEGMENTS)");
        }
        bh.consume(s);
    }
}
