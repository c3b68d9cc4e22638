package dev.sextant.server.gateway;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.DoubleAdder;
import java.util.concurrent.atomic.LongAdder;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What a gateway pays per latency sample to count it for its reports: the production {@link Reporter.Mean} (a few
 * cells of a sum and a count, each under its own lock, a thread keeping to one) against the two adders it replaced (a {@link DoubleAdder} for the sum, a
 * {@link LongAdder} for the count, which a report could drain between a sample's two parts), and against one lock
 * around one sum and count. One engine's mean,
 * shared by every thread that adds to it, as the event loops of a gateway do for a busy engine: alone and with two
 * threads (this machine's cores) adding at once, back to back, far more often than any engine finishes requests.
 * In the gateway's package because the mean is the gateway's own, not public.
 *
 * <p>Run:
 * <pre>
 * mvn -B -q -pl sextant-bench -am package -DskipTests
 * java -jar sextant-bench/target/benchmarks.jar ReporterMeanBenchmark -f 2 -wi 3 -i 5 -w 1s -r 1s
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 2, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class ReporterMeanBenchmark {

    /** The two adders a mean was before. */
    static final class Adders {
        private final DoubleAdder ms = new DoubleAdder();
        private final LongAdder count = new LongAdder();

        void add(long nanos) {
            ms.add(nanos / 1e6);
            count.increment();
        }
    }

    /** One lock around one sum and count: consistent as the cells are, but every thread meets every other in it. */
    static final class OneLock {
        private double ms;
        private long count;

        synchronized void add(long nanos) {
            ms += nanos / 1e6;
            count++;
        }
    }

    /** One engine's mean, shared by the benchmark's threads. */
    @State(Scope.Benchmark)
    public static class Shared {
        final Reporter.Mean cells = new Reporter.Mean();
        final Adders adders = new Adders();
        final OneLock oneLock = new OneLock();
    }

    /** A sample's duration, different each time so that no addition is folded away. */
    @State(Scope.Thread)
    public static class Sample {
        long nanos = 17_000_000;

        long next() {
            nanos = (nanos * 6364136223846793005L + 1442695040888963407L) >>> 40;
            return nanos;
        }
    }

    @Benchmark
    @Threads(1)
    public void cells_oneThread(Shared s, Sample x) {
        s.cells.add(x.next());
    }

    @Benchmark
    @Threads(1)
    public void adders_oneThread(Shared s, Sample x) {
        s.adders.add(x.next());
    }

    @Benchmark
    @Threads(1)
    public void oneLock_oneThread(Shared s, Sample x) {
        s.oneLock.add(x.next());
    }

    @Benchmark
    @Threads(2)
    public void oneLock_twoThreads(Shared s, Sample x) {
        s.oneLock.add(x.next());
    }

    @Benchmark
    @Threads(2)
    public void cells_twoThreads(Shared s, Sample x) {
        s.cells.add(x.next());
    }

    @Benchmark
    @Threads(2)
    public void adders_twoThreads(Shared s, Sample x) {
        s.adders.add(x.next());
    }
}
