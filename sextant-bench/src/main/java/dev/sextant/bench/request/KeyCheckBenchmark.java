package dev.sextant.bench.request;

import dev.sextant.server.tenants.PresentedKey;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;

import dev.sextant.server.tenants.ApiKeys;
import dev.sextant.server.tenants.Tenant;
import dev.sextant.server.tenants.Tenants;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
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
 * The cost of finding a request's tenant by its API key, as the gateway does for every model request when it has a
 * tenants file ({@code PresentedKey.of} its headers, then {@code Tenants.find}, docs/tenants.md): every value of the request's
 * {@code Authorization} and {@code api-key} headers read from its Netty headers and checked to name one key, the key
 * hashed with SHA-256 once, and one hash-map lookup among {@code tenants} tenants of two keys each; for a known key in
 * either header and for an unknown one (which costs the same: it is hashed and looked up alike).
 *
 * <p>Target: ≤ 2 µs per request.
 *
 * <p>Run:
 * <pre>
 * mvn -B -q -pl sextant-bench -am package -DskipTests
 * java -jar sextant-bench/target/benchmarks.jar KeyCheckBenchmark -f 2 -wi 3 -i 5 -w 1s -r 1s -prof gc
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 2, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class KeyCheckBenchmark {

    @State(Scope.Thread)
    public static class Keys {
        @Param({"10", "10000"})
        public int tenants;

        Tenants registry;
        HttpHeaders known;
        HttpHeaders knownApiKey;
        HttpHeaders unknown;

        @Setup
        public void setup() throws Exception {
            StringBuilder y = new StringBuilder("tenants:\n");
            for (int i = 0; i < tenants; i++) {
                y.append("  t").append(i).append(": {keys: [").append(ApiKeys.hash(key(i, 0))).append(", ")
                        .append(ApiKeys.hash(key(i, 1))).append("]}\n");
            }
            registry = Tenants.parse(y.toString(), "tenants.yaml");
            known = headers().set(HttpHeaderNames.AUTHORIZATION, "Bearer " + key(tenants / 2, 1));
            knownApiKey = headers().set(PresentedKey.API_KEY, key(tenants / 2, 1));
            unknown = headers().set(HttpHeaderNames.AUTHORIZATION, "Bearer " + key(tenants + 1, 0));
        }

        /** A chat request's other headers, as an OpenAI SDK sends them. */
        private static HttpHeaders headers() {
            return new DefaultHttpHeaders().set(HttpHeaderNames.HOST, "gateway:8080")
                    .set(HttpHeaderNames.CONTENT_TYPE, "application/json").set(HttpHeaderNames.ACCEPT, "application/json")
                    .set(HttpHeaderNames.USER_AGENT, "OpenAI/Python 1.54.0").set("x-stainless-lang", "python");
        }

        private static String key(int tenant, int n) {
            return "sk-sx-" + String.format("%064x", (long) tenant * 31 + n);
        }
    }

    @Benchmark
    public Tenant knownKey(Keys k) {
        return find(k.registry, k.known);
    }

    @Benchmark
    public Tenant knownApiKey(Keys k) {
        return find(k.registry, k.knownApiKey);
    }

    @Benchmark
    public Tenant unknownKey(Keys k) {
        return find(k.registry, k.unknown);
    }

    /** What the gateway does on a request's head. */
    private static Tenant find(Tenants registry, HttpHeaders h) {
        return registry.find(PresentedKey.of(h));
    }
}
