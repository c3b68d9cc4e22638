package dev.sextant.server.control;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.sextant.control.Canary;
import dev.sextant.control.CanaryResult;
import dev.sextant.request.Ticker;
import dev.sextant.server.auth.BearerToken;
import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.server.engine.Faults;
import dev.sextant.server.gateway.Fleet;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Canary requests against the engine emulator and a stand-in: what counts as a success, and how many go at once. */
class CanariesTest {
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final List<CanaryResult> results = new CopyOnWriteArrayList<>();
    private Canaries canaries = canaries(Duration.ofSeconds(10), 8);
    private EngineEmulator engine;

    private Canaries canaries(Duration timeout, int maxInFlight) {
        return canaries(timeout, maxInFlight, null);
    }

    private Canaries canaries(Duration timeout, int maxInFlight, BearerToken engineToken) {
        return new Canaries(client, Ticker.system(), timeout, maxInFlight, engineToken, results::add, registry);
    }

    @AfterEach
    void stop() {
        canaries.close();
        if (engine != null) {
            engine.close();
        }
    }

    private String emulator(Faults faults) {
        engine = EngineEmulator.start(EngineConfig.defaults("e1", "m").withLatency(64, 0.0, 5, 0.0)
                .withFaults(faults, 1));
        return "http://127.0.0.1:" + engine.port() + "/";
    }

    private CanaryResult only() throws InterruptedException {
        assertThat(Fleet.await(() -> !results.isEmpty(), Duration.ofSeconds(20))).as("a result").isTrue();
        assertThat(results).hasSize(1);
        return results.get(0);
    }

    private double count(String outcome) {
        return registry.get("sextant.control.canaries").tag("outcome", outcome).counter().count();
    }

    @Test
    void aHealthyEngine_answersACompleteStream_measuredFromItsTokens() throws Exception {
        CanaryResult r;
        canaries.send(new Canary("e1", "m", 4, "test"), emulator(Faults.NONE));
        r = only();

        assertThat(r.ok()).as(String.valueOf(r.failure())).isTrue();
        assertThat(r.engine()).isEqualTo("e1");
        assertThat(r.ttftMs()).isFinite().isPositive();
        assertThat(r.tbtMs()).as("4 tokens, one engine step apart").isFinite().isPositive();
        assertThat(engine.generatedTokens()).isEqualTo(4);
        assertThat(count("ok")).isEqualTo(1);
        assertThat(count("failed")).isZero();
    }

    @Test
    void anEngineAnsweringErrors_failsItsCanary_withTheStatus() throws Exception {
        canaries.send(new Canary("e1", "m", 4, "test"), emulator(new Faults(1.0, 1, false, -1)));
        CanaryResult r = only();

        assertThat(r.ok()).isFalse();
        assertThat(r.failure()).isEqualTo("HTTP 500");
        assertThat(count("failed")).isEqualTo(1);
    }

    @Test
    void aStreamCutShort_isAFailure_notASuccess() throws Exception {
        canaries.send(new Canary("e1", "m", 4, "test"),
                emulator(new Faults(0, 1, false, -1, Faults.Corruption.TRUNCATE)));
        CanaryResult r = only();

        assertThat(r.ok()).isFalse();
        assertThat(r.failure()).startsWith("the event stream ended without data: [DONE]");
    }

    @Test
    void anEngineThatDoesNotListen_isAConnectFailure() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        canaries.send(new Canary("e1", "m", 4, "test"), "http://127.0.0.1:" + port);
        CanaryResult r = only();

        assertThat(r.ok()).isFalse();
        assertThat(r.failure()).contains("ConnectException");
    }

    @Test
    void anEngineThatHangs_timesOut() throws Exception {
        canaries.close();
        canaries = canaries(Duration.ofMillis(300), 8);
        canaries.send(new Canary("e1", "m", 4, "test"), emulator(new Faults(0, 1, true, -1)));
        CanaryResult r = only();

        assertThat(r.ok()).isFalse();
        assertThat(r.failure()).isEqualTo("no complete answer within 300 ms");
        assertThat(count("timeout")).isEqualTo(1);
    }

    /** An answer that never ends its line (the line reader would hold it whole) is cut at the canary's limit. */
    @Test
    void anAnswerBeyondTheLimit_isAFailure_andNotReadFurther() throws Exception {
        HttpServer endless = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        endless.createContext("/", ex -> {
            ex.getResponseHeaders().set("content-type", "text/event-stream");
            ex.sendResponseHeaders(200, 0);
            byte[] x = new byte[64 * 1024];
            java.util.Arrays.fill(x, (byte) 'x');
            try (java.io.OutputStream out = ex.getResponseBody()) {
                out.write("data: ".getBytes());
                for (int i = 0; i < 100_000; i++) { // 6 GB, one line, unless the reader stops
                    out.write(x);
                }
            } catch (java.io.IOException e) {
                // the canary stopped reading
            }
        });
        endless.start();
        try {
            canaries.send(new Canary("e1", "m", 4, "test"), "http://127.0.0.1:" + endless.getAddress().getPort());
            CanaryResult r = only();

            assertThat(r.ok()).isFalse();
            assertThat(r.failure()).contains("a body of more than 1048576 bytes");
        } finally {
            endless.stop(0);
        }
    }

    @Test
    void atMostMaxInFlight_goAtOnce_theRestWait_andOneEngineNeverHasTwo() throws Exception {
        AtomicInteger open = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        CountDownLatch release = new CountDownLatch(1);
        HttpServer stub = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        stub.setExecutor(Executors.newCachedThreadPool());
        stub.createContext("/v1/completions", ex -> {
            most.accumulateAndGet(open.incrementAndGet(), Math::max);
            try {
                release.await(20, TimeUnit.SECONDS);
                ex.getRequestBody().readAllBytes();
                byte[] body = ("data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\n"
                        + "data: [DONE]\n\n").getBytes(StandardCharsets.UTF_8);
                ex.getResponseHeaders().set("content-type", "text/event-stream");
                ex.sendResponseHeaders(200, body.length);
                ex.getResponseBody().write(body);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                open.decrementAndGet();
                ex.close();
            }
        });
        stub.start();
        try {
            canaries.close();
            canaries = canaries(Duration.ofSeconds(20), 2);
            String endpoint = "http://127.0.0.1:" + stub.getAddress().getPort();
            for (String e : List.of("a", "b", "c", "d", "e")) {
                canaries.send(new Canary(e, "m", 2, "test"), endpoint);
            }
            canaries.send(new Canary("e", "m", 2, "again"), endpoint);
            assertThat(Fleet.await(() -> open.get() == 2, Duration.ofSeconds(20))).isTrue();
            assertThat(canaries.queued()).as("waiting for a place; e only once").isEqualTo(3);

            release.countDown();
            assertThat(Fleet.await(() -> results.size() == 5, Duration.ofSeconds(20))).isTrue();
            assertThat(results).allSatisfy(r -> assertThat(r.ok()).as(String.valueOf(r.failure())).isTrue());
            assertThat(results).extracting(CanaryResult::engine).containsExactlyInAnyOrder("a", "b", "c", "d", "e");
            assertThat(most.get()).isEqualTo(2);
        } finally {
            stub.stop(0);
        }
    }

    @Test
    void anEngineBehindAnApiKey_passesItsCanary_withTheEngineToken_andFailsItWithout() throws Exception {
        List<String> seen = new CopyOnWriteArrayList<>();
        HttpServer stub = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        stub.createContext("/v1/completions", ex -> { // as vLLM started with --api-key engine-key
            String authorization = ex.getRequestHeaders().getFirst("authorization");
            seen.add(String.valueOf(authorization));
            ex.getRequestBody().readAllBytes();
            boolean ok = "Bearer engine-key".equals(authorization);
            byte[] body = (ok ? "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\n"
                    + "data: [DONE]\n\n" : "{\"error\":\"Unauthorized\"}").getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("content-type", ok ? "text/event-stream" : "application/json");
            ex.sendResponseHeaders(ok ? 200 : 401, body.length);
            ex.getResponseBody().write(body);
            ex.close();
        });
        stub.start();
        try {
            String endpoint = "http://127.0.0.1:" + stub.getAddress().getPort();
            canaries.send(new Canary("e1", "m", 2, "test"), endpoint);
            CanaryResult without = only();
            assertThat(without.ok()).isFalse();
            assertThat(without.failure()).contains("401");

            results.clear();
            canaries.close();
            canaries = canaries(Duration.ofSeconds(10), 8, BearerToken.of("engine-key"));
            canaries.send(new Canary("e1", "m", 2, "test"), endpoint);
            CanaryResult with = only();
            assertThat(with.ok()).as(String.valueOf(with.failure())).isTrue();
            assertThat(seen).containsExactly("null", "Bearer engine-key");
        } finally {
            stub.stop(0);
        }
    }
}
