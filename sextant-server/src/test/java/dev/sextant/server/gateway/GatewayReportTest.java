package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import dev.sextant.request.ReuseTimes;
import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.server.engine.Faults;
import dev.sextant.server.internal.Http;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.SocketTimeoutException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The gateway's signal report ({@code docs/servers.md}, "Signal reports"), read from real requests through a gateway
 * to engines on loopback that each end every attempt one way: every attempt is counted once, in exactly one kind, and
 * {@code requests} is their sum.
 */
class GatewayReportTest {
    /** The kinds an attempt ends in; {@code requests} is their sum. */
    private static final List<String> KINDS = List.of("successes", "connect_errors", "timeouts", "server_errors", "busy",
            "overloaded", "cancelled");
    private final List<AutoCloseable> open = new ArrayList<>();
    private Gateway gw;

    @AfterEach
    void stop() throws Exception {
        if (gw != null) {
            gw.close();
        }
        for (AutoCloseable c : open) {
            c.close();
        }
    }

    /** A gateway of cluster {@code gw} whose one engine {@code e1} is at {@code port}; its report starts empty. */
    private void gatewayTo(int port) {
        gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false)
                        .withTimeouts(Duration.ofSeconds(2), Duration.ofMillis(300), Duration.ofSeconds(5),
                                Duration.ofSeconds(20)),
                SnapshotSource.fixed(Fleet.standIns(port)), 1);
        gw.reporter.drain();
    }

    private int emulator(Faults faults) {
        EngineEmulator e = EngineEmulator.start(EngineConfig.defaults("e1", "m").withLatency(64, 0.0, 50, 0.0)
                .withDefaultMaxTokens(3).withFaults(faults, 1));
        open.add(e);
        return e.port();
    }

    private JsonNode report() throws Exception {
        return Http.JSON.readTree(gw.reporter.drain());
    }

    private static int attempts(HttpResponse<?> r) {
        return Integer.parseInt(r.headers().firstValue("x-sextant-attempts").orElseThrow());
    }

    /** {@code e}'s kinds are exactly {@code counts} (the others 0), and requests and errors their sums. */
    private static void assertKinds(JsonNode e, Map<String, Integer> counts) {
        long sum = 0;
        for (String kind : KINDS) {
            assertThat(e.path(kind).asLong(-1)).as(kind).isEqualTo(counts.getOrDefault(kind, 0).longValue());
            sum += e.path(kind).asLong();
        }
        assertThat(e.path("requests").asLong()).as("requests, the sum of the kinds").isEqualTo(sum);
        assertThat(e.path("errors").asLong()).as("errors = connect_errors + timeouts + server_errors")
                .isEqualTo(e.path("connect_errors").asLong() + e.path("timeouts").asLong()
                        + e.path("server_errors").asLong());
    }

    private static List<String> fields(JsonNode n) {
        List<String> out = new ArrayList<>();
        for (Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
            out.add(it.next());
        }
        return out;
    }

    @Test
    void everyGateway_reportsAnInstanceOfItsOwn_soThatAClustersGatewaysAddUp() {
        try (Reporter a = new Reporter("gw", null, null, Duration.ofSeconds(5), null);
             Reporter b = new Reporter("gw", null, null, Duration.ofSeconds(5), null)) {
            assertThat(a.instance).matches("[0-9a-f]{12}").isNotEqualTo(b.instance);
        }
    }

    @Test
    void aStreamedSuccess_reportsEveryField_withItsLatenciesAndOneNewConnection() throws Exception {
        gatewayTo(emulator(Faults.NONE));
        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", true, 3));
        assertThat(r.statusCode()).isEqualTo(200);

        JsonNode report = report();
        assertThat(fields(report)).containsExactly("gateway", "instance", "interval_seconds", "demand_rps", "arrivals",
                "engines", "in_flight", "rtt_ms", "reuse");
        assertThat(report.path("in_flight").isEmpty()).as("nothing in flight once answered").isTrue();
        assertThat(report.path("gateway").asText()).isEqualTo("gw");
        assertThat(report.path("instance").asText()).as("this gateway's own id").matches("[0-9a-f]{12}")
                .isEqualTo(gw.reporter.instance);
        assertThat(report.path("arrivals").path("chat").asLong()).isEqualTo(1);
        assertThat(report.path("demand_rps").path("chat").asDouble() * report.path("interval_seconds").asDouble())
                .isCloseTo(1.0, org.assertj.core.data.Offset.offset(1e-9));
        assertThat(report.path("rtt_ms").isEmpty()).as("no probes without a control plane").isTrue();
        JsonNode e = report.path("engines").path("e1");
        assertThat(fields(e)).containsExactly("requests", "successes", "errors", "connect_errors", "timeouts",
                "server_errors", "busy", "overloaded", "cancelled", "ttft_ms", "ttft_count", "tbt_ms", "tbt_count",
                "e2e_ms", "e2e_count", "connect_ms", "connect_count", "probes", "probe_failures");
        assertKinds(e, Map.of("successes", 1));
        assertThat(e.path("ttft_count").asLong()).isEqualTo(1);
        // the role chunk at once, each token an engine step (50 ms) later: chunks of their own
        assertThat(e.path("tbt_count").asLong()).isPositive();
        assertThat(e.path("e2e_count").asLong()).isEqualTo(1);
        assertThat(e.path("e2e_ms").asDouble()).as("the last byte comes after the first")
                .isGreaterThanOrEqualTo(e.path("ttft_ms").asDouble());
        assertThat(e.path("connect_count").asLong()).isEqualTo(1);
        assertThat(e.path("connect_ms").asDouble()).isNotNegative();
        assertThat(e.path("probes").asLong()).isZero();

        JsonNode next = report();
        assertThat(next.path("arrivals").path("chat").asLong()).as("reset by the report").isZero();
        JsonNode quiet = next.path("engines").path("e1");
        assertKinds(quiet, Map.of());
        assertThat(fields(quiet)).as("no mean without a sample").doesNotContain("ttft_ms", "tbt_ms", "e2e_ms",
                "connect_ms").contains("ttft_count", "tbt_count", "e2e_count", "connect_count");
    }

    /**
     * The times between a conversation's requests, per class, weighted by the requests' body sizes: a conversation's
     * first request is counted apart, its second in the bucket of the time since the first was answered whole.
     */
    @Test
    void reuseTimes_countAConversationsFirstRequestApart_andItsNextByTheTimeBetween() throws Exception {
        gatewayTo(emulator(Faults.NONE));
        String first = Fleet.chat("conversation-1", false, 1);
        assertThat(Fleet.post(gw.port(), "/v1/chat/completions", first).statusCode()).isEqualTo(200);
        String second = Fleet.chat("conversation-1", true, 1);
        assertThat(Fleet.post(gw.port(), "/v1/chat/completions", second).statusCode()).isEqualTo(200);

        JsonNode counts = report().path("reuse").path("chat");
        assertThat(counts.size()).isEqualTo(ReuseTimes.BUCKETS);
        assertThat(counts.get(ReuseTimes.REQUESTS).asLong()).isEqualTo(2);
        assertThat(counts.get(ReuseTimes.FIRST_SEEN).asLong()).as("the first request's body size")
                .isEqualTo(first.getBytes(StandardCharsets.UTF_8).length);
        long timed = 0;
        for (int i = 0; i < ReuseTimes.FIRST_SEEN; i++) {
            timed += counts.get(i).asLong();
        }
        assertThat(timed).as("the second's, in a bucket of the time since the first ended")
                .isEqualTo(second.getBytes(StandardCharsets.UTF_8).length);
        assertThat(report().path("reuse").isEmpty()).as("reset by the report").isTrue();
    }

    @Test
    void aRefusedConnection_isAConnectError_perAttempt() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        } // closed: nothing listens there
        gatewayTo(port);
        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1));
        assertThat(r.statusCode()).isEqualTo(503);

        JsonNode e = report().path("engines").path("e1");
        assertKinds(e, Map.of("connect_errors", attempts(r)));
        assertThat(e.path("connect_count").asLong()).as("no connection was opened").isZero();
        assertThat(e.path("ttft_count").asLong()).isZero();
        assertThat(e.path("e2e_count").asLong()).isZero();
    }

    @Test
    void anEngineThatNeverAnswers_isATimeout_perAttempt() throws Exception {
        gatewayTo(emulator(new Faults(0, 1, true, -1)));
        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", true, 1));
        assertThat(r.statusCode()).isEqualTo(504);
        assertThat(attempts(r)).as("a timeout after the request was written is not retried").isEqualTo(1);

        JsonNode e = report().path("engines").path("e1");
        assertKinds(e, Map.of("timeouts", attempts(r)));
        assertThat(e.path("connect_count").asLong()).as("a timed-out connection is not reused").isEqualTo(attempts(r));
    }

    @Test
    void requestsAnEngineHasNotAnswered_areReportedInFlight_andGoneOnceTheyEnd() throws Exception {
        EngineEmulator engine = EngineEmulator.start(EngineConfig.defaults("e1", "m").withFaults(new Faults(0, 1, true,
                -1), 1));
        open.add(engine);
        gatewayTo(engine.port());
        assertThat(report().path("in_flight").size()).as("nothing in flight yet").isZero();
        java.util.concurrent.CompletableFuture<HttpResponse<String>> held = java.util.concurrent.CompletableFuture
                .supplyAsync(() -> {
                    try {
                        return Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1));
                    } catch (Exception e) {
                        throw new java.util.concurrent.CompletionException(e);
                    }
                });
        // held by the engine, not merely started: closed before it accepts, the engine would refuse the attempts
        assertThat(Fleet.await(() -> engine.hungRequests() == 1, Duration.ofSeconds(10))).isTrue();
        assertThat(gw.inFlight()).isEqualTo(1);

        JsonNode during = report();
        assertThat(during.path("in_flight").path("e1").asLong()).isEqualTo(1);
        assertThat(during.path("engines").path("e1").path("requests").asLong()).as("not ended: no outcome yet")
                .isZero();
        engine.close(); // the hung attempt ends with its connection
        assertThat(Fleet.await(() -> gw.inFlight() == 0, Duration.ofSeconds(10))).isTrue();
        assertThat(report().path("in_flight").has("e1")).isFalse();
        assertThat(held).succeedsWithin(Duration.ofSeconds(10));
    }

    @Test
    void a500_isAServerError_perAttempt() throws Exception {
        gatewayTo(emulator(new Faults(1.0, 1, false, -1)));
        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1));
        assertThat(r.statusCode()).as("502, or 503 once the retry budget is spent").isIn(502, 503);

        JsonNode e = report().path("engines").path("e1");
        assertKinds(e, Map.of("server_errors", attempts(r)));
        assertThat(e.path("e2e_count").asLong()).as("only complete answers have an end-to-end time").isZero();
    }

    @Test
    void a429_isBusy_notAnError() throws Exception {
        HttpServer busy = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        busy.createContext("/", ex -> {
            ex.getRequestBody().readAllBytes();
            byte[] body = "{\"error\":{\"message\":\"full\"}}".getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(429, body.length);
            ex.getResponseBody().write(body);
            ex.close();
        });
        busy.start();
        open.add(() -> busy.stop(0));
        gatewayTo(busy.getAddress().getPort());
        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1));
        assertThat(r.statusCode()).isEqualTo(429);

        assertKinds(report().path("engines").path("e1"), Map.of("busy", attempts(r)));
    }

    @Test
    void aStreamCutMidway_isOneServerError_withItsFirstByteButNoEnd() throws Exception {
        gatewayTo(emulator(new Faults(0, 1, false, 1)));
        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", true, 3));
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).contains("\"error\"");

        JsonNode e = report().path("engines").path("e1");
        assertKinds(e, Map.of("server_errors", 1));
        assertThat(e.path("ttft_count").asLong()).isEqualTo(1);
        assertThat(e.path("e2e_count").asLong()).isZero();
    }

    @Test
    void aClientThatLeavesMidStream_isOneCancelled() throws Exception {
        gatewayTo(emulator(Faults.NONE));
        try (RawHttp c = new RawHttp(gw.port(), 10_000)) {
            c.send(RawHttp.chatRequest(Fleet.chat("k", true, 20)));
            InputStream in = c.socket.getInputStream();
            assertThat(in.read()).as("the answer began").isNotNegative();
        } // gone mid-stream
        assertThat(Fleet.await(() -> gw.inFlight() == 0, Duration.ofSeconds(10))).isTrue();

        assertKinds(report().path("engines").path("e1"), Map.of("cancelled", 1));
    }

    @Test
    void aClientThatGivesUpOnAHungEngine_pastTheOutlierBound_reportsItATimeout() throws Exception {
        int port = emulator(new Faults(0, 1, true, -1));
        // the gateway would wait 20 s for the first token; its client gives up after 3 s, beyond 5 × the expected TTFT
        gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false)
                        .withTimeouts(Duration.ofSeconds(2), Duration.ofSeconds(20), Duration.ofSeconds(20),
                                Duration.ofSeconds(60)),
                SnapshotSource.fixed(Fleet.standIns(port)), 1);
        gw.reporter.drain();
        try (RawHttp c = new RawHttp(gw.port(), 3_000)) {
            c.send(RawHttp.chatRequest(Fleet.chat("k", true, 3)));
            InputStream in = c.socket.getInputStream();
            assertThatThrownBy(in::read).as("nothing within the client's 3 s").isInstanceOf(SocketTimeoutException.class);
        } // gone before its first token
        assertThat(Fleet.await(() -> gw.inFlight() == 0, Duration.ofSeconds(10))).isTrue();

        assertKinds(report().path("engines").path("e1"), Map.of("timeouts", 1));
    }

    @Test
    void kindsAddUpOverManyRequests_eachAttemptOnce() throws Exception {
        gatewayTo(emulator(new Faults(0.5, 1, false, -1)));
        Map<Integer, Integer> statuses = new LinkedHashMap<>();
        int attempts = 0;
        for (int i = 0; i < 20; i++) {
            HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k" + i, false, 1));
            statuses.merge(r.statusCode(), 1, Integer::sum);
            attempts += attempts(r);
        }
        JsonNode e = report().path("engines").path("e1");
        assertThat(e.path("requests").asLong()).as("every attempt, once").isEqualTo(attempts);
        assertThat(e.path("successes").asLong()).isEqualTo(statuses.getOrDefault(200, 0).longValue());
        assertKinds(e, Map.of("successes", statuses.getOrDefault(200, 0),
                "server_errors", attempts - statuses.getOrDefault(200, 0)));
    }
}
