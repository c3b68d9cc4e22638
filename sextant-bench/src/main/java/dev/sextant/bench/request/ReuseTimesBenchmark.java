package dev.sextant.bench.request;

import dev.sextant.request.ReuseTimes;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What counting the times between a conversation's requests adds to each request at a gateway
 * ({@link ReuseTimes}, docs/control-loop.md, "The prefix cache's capacity"): on arrival, one read of the key's slot
 * and one count; at the end, one write. Keys of {@code conversations} conversations in turn, in the gateway's table of
 * 2^16, so that the slots come from memory as they do under real traffic.
 *
 * <p>Run:
 * <pre>
 * mvn -B -q -pl sextant-bench -am package -DskipTests
 * java -jar sextant-bench/target/benchmarks.jar ReuseTimesBenchmark -f 2 -wi 3 -i 5 -w 1s -r 1s -prof gc
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 2, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class ReuseTimesBenchmark {

    @State(Scope.Thread)
    public static class Traffic {
        @Param({"1000", "100000"})
        public int conversations;

        ReuseTimes times;
        AtomicLongArray counts;
        long[] keys;
        int next;
        long nanos;

        @Setup
        public void setup() {
            times = new ReuseTimes(16);
            counts = times.counts("chat");
            SplittableRandom rng = new SplittableRandom(1);
            keys = new long[conversations];
            for (int i = 0; i < keys.length; i++) {
                keys[i] = rng.nextLong() | 1;
            }
        }
    }

    /** One request: its arrival counted, its end recorded. */
    @Benchmark
    public long request(Traffic t) {
        long key = t.keys[t.next];
        t.next = t.next + 1 == t.keys.length ? 0 : t.next + 1;
        t.nanos += 1_000_000;
        t.times.arrived(t.counts, key, 2_000, t.nanos);
        t.times.ended(key, t.nanos + 500_000);
        return t.nanos;
    }
}
