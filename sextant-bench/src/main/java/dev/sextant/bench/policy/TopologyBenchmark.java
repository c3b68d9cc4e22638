package dev.sextant.bench.policy;

import dev.sextant.topology.Engine;
import dev.sextant.topology.Topology;
import java.util.ArrayList;
import java.util.List;
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

/**
 * What the control plane does before every solve: the topology in force with the engines' observed health
 * and the observed demand ({@code withEngines(...).withDemand(...)}), each a new, fully checked topology.
 *
 * <pre>
 * java -jar sextant-bench/target/benchmarks.jar TopologyBenchmark -p size=L -f 1 -wi 3 -i 5 -w 1 -r 1
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class TopologyBenchmark {
    @Param({"M", "L"})
    public String size;

    private Topology topology;
    private List<Engine> observed;

    @Setup(Level.Trial)
    public void setUp() {
        topology = Instances.named(size);
        observed = new ArrayList<>();
        for (Engine e : topology.engines()) {
            observed.add(e.withHealth(0.9));
        }
    }

    @Benchmark
    public Topology withObservedHealthAndDemand() {
        return topology.withEngines(observed).withDemand(topology.demandRps());
    }
}
