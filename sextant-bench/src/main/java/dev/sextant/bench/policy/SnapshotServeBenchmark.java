package dev.sextant.bench.policy;

import dev.sextant.config.SnapshotJson;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.snapshot.Snapshot;
import java.nio.charset.StandardCharsets;
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
 * What the control plane does to answer {@code GET /v1/snapshot?gateway=ID} after a publication, once per
 * gateway cluster: {@code gatewayView} makes that cluster's view ({@link Snapshot#forGateway}: its routes,
 * its round trips, every engine, its own content hash) and writes it as JSON; {@code wholeSnapshot} writes
 * the whole snapshot, which is what every poll used to cost; {@code gatewayReadsView} is the gateway's
 * side. Set-up prints both documents' sizes.
 *
 * <pre>
 * java -jar sextant-bench/target/benchmarks.jar SnapshotServeBenchmark -p size=L -f 1 -wi 3 -i 5 -w 2 -r 2
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class SnapshotServeBenchmark {
    @Param({"M", "L"})
    public String size;

    private Snapshot snapshot;
    private String gateway;
    private String viewJson;

    @Setup(Level.Trial)
    public void setUp() {
        snapshot = Policies.optimal().solve(Instances.named(size),
                SolveOptions.defaults().withGapTolerance(OptimizerBenchmark.GAP));
        gateway = snapshot.routes().keySet().iterator().next();
        viewJson = SnapshotJson.write(snapshot.forGateway(gateway));
        System.out.printf("%n%s: whole snapshot %,d bytes of JSON, gateway %s's view %,d bytes, %d gateway clusters%n",
                size, wholeSnapshot().length, gateway, gatewayView().length, snapshot.routes().size());
    }

    @Benchmark
    public byte[] gatewayView() {
        return SnapshotJson.write(snapshot.forGateway(gateway)).getBytes(StandardCharsets.UTF_8);
    }

    /** The gateway's side: parse the view, check its hash, compile it into a data plane (off the request path). */
    @Benchmark
    public dev.sextant.request.DataPlane gatewayReadsView() throws dev.sextant.config.SnapshotException {
        Snapshot view = SnapshotJson.read(viewJson, "view.json");
        if (!view.hash().equals(view.contentHash())) {
            throw new IllegalStateException("the view's hash does not match its content");
        }
        return dev.sextant.request.DataPlane.create(gateway, view, dev.sextant.request.Ticker.system(),
                dev.sextant.request.DataPlaneOptions.defaults());
    }

    @Benchmark
    public byte[] wholeSnapshot() {
        return SnapshotJson.write(snapshot).getBytes(StandardCharsets.UTF_8);
    }
}
