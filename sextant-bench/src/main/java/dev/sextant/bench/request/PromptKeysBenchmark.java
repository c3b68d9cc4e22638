package dev.sextant.bench.request;

import dev.sextant.request.PromptKeys;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
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
 * The cost of deriving a keyless request's keys from its prompt ({@link PromptKeys}, docs/request-path.md §1), as the
 * gateway does while parsing: a system prompt of {@code kib} KiB (1,024 characters each) and a 200-character first
 * user message read in place from a char buffer, then both keys; and a raw prompt of the same size. Divide by the
 * size for the cost per KiB.
 *
 * <p>Target: ≤ 1 µs per KiB of prompt, 0 B/op beyond the result.
 *
 * <p>Run:
 * <pre>
 * mvn -B -q -pl sextant-bench -am package -DskipTests
 * java -jar sextant-bench/target/benchmarks.jar PromptKeysBenchmark -f 1 -wi 3 -i 5 -w 1s -r 1s -prof gc
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class PromptKeysBenchmark {

    @State(Scope.Thread)
    public static class Prompt {
        @Param({"1", "16", "128"})
        public int kib;

        char[] system;
        char[] user;
        final PromptKeys keys = new PromptKeys();

        @Setup
        public void setup() {
            SplittableRandom rnd = new SplittableRandom(kib);
            system = new char[kib * 1024];
            for (int i = 0; i < system.length; i++) {
                system[i] = (char) (' ' + rnd.nextInt(95));
            }
            user = new char[200];
            for (int i = 0; i < user.length; i++) {
                user[i] = (char) ('a' + rnd.nextInt(26));
            }
        }
    }

    @Benchmark
    public long chat(Prompt p) {
        PromptKeys k = p.keys.reset();
        k.beginMessage();
        k.text(p.system, 0, p.system.length);
        k.endMessage("system");
        k.beginMessage();
        k.text(p.user, 0, p.user.length);
        k.endMessage("user");
        return k.conversationKey() ^ k.prefixKey();
    }

    @Benchmark
    public long raw(Prompt p) {
        PromptKeys k = p.keys.reset();
        k.beginRaw();
        k.text(p.system, 0, p.system.length);
        return k.conversationKey() ^ k.prefixKey();
    }
}
