package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.request.DataPlaneOptions;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.server.engine.Faults;
import dev.sextant.server.internal.Http;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The retry and timeout rules of docs/request-path.md §5, engine by engine over real sockets: a request is retried
 * only when its engine cannot have generated any of it, and the emulators' own counts show no request generated
 * twice. The limits are short (first token and idle 500 ms) and the engines slow, so that an answer that takes
 * longer than either is the usual case here. Netty's leak detector at {@code PARANOID} watches the class.
 */
class GatewayRetryRulesTest {
    static final Duration FIRST_TOKEN = Duration.ofMillis(500);
    static final Duration IDLE = Duration.ofMillis(500);

    private static LeakWatch leaks;
    Fleet fleet;
    Gateway gw;
    private int ids;

    @BeforeAll
    static void watchLeaks() {
        leaks = LeakWatch.paranoid(); // a request written in parts, and failed in the middle, releases every part
    }

    @AfterAll
    static void noLeaks() {
        leaks.assertNoLeakThenClose();
    }

    @BeforeEach
    void start() {
        fleet = new Fleet(25); // 25 ms a token
        gw = Gateway.start(config(), SnapshotSource.fixed(fleet.snapshot()), 2);
    }

    static GatewayConfig config() {
        return GatewayConfig.defaults("gw").withAccessLog(false)
                .withTimeouts(Duration.ofSeconds(1), FIRST_TOKEN, IDLE, Duration.ofSeconds(15))
                .withOptions(DataPlaneOptions.builder().ttftOutlierFactor(0).build());
    }

    @AfterEach
    void stop() {
        gw.close();
        fleet.close();
    }

    private String newId() {
        return "rule-" + ids++;
    }

    private HttpResponse<String> post(Gateway g, String body, String id) throws Exception {
        return Fleet.post(g.port(), "/v1/chat/completions", body, "x-request-id", id);
    }

    /** The engine the gateway sends {@code key}'s requests to. */
    private String engineOf(String key) throws Exception {
        HttpResponse<String> r = post(gw, Fleet.chat(key, false, 1), newId());
        assertThat(r.statusCode()).isEqualTo(200);
        return r.headers().firstValue("x-sextant-engine").orElseThrow();
    }

    /** Every engine that generated request {@code id}, with how many times: at most one engine, once. */
    private Map<String, Integer> generated(String id) {
        Map<String, Integer> out = new TreeMap<>();
        fleet.engines.forEach((e, engine) -> {
            if (engine.generations(id) > 0) {
                out.put(e, engine.generations(id));
            }
        });
        return out;
    }

    static long metric(Gateway g, String line) throws Exception {
        for (String l : Fleet.get(g.port(), "/metrics").body().split("\n")) {
            if (l.startsWith(line + " ")) {
                return (long) Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1));
            }
        }
        throw new AssertionError("no " + line + " in /metrics");
    }

    static long notRetried(Gateway g, String reason) throws Exception {
        return metric(g, "sextant_gateway_not_retried_total{reason=\"" + reason + "\"}");
    }

    private static int attempts(HttpResponse<?> r) {
        return Integer.parseInt(r.headers().firstValue("x-sextant-attempts").orElseThrow());
    }

    private static String errorMessage(HttpResponse<String> r) throws Exception {
        return Http.JSON.readTree(r.body()).path("error").path("message").asText();
    }

    @Test
    void nonStreaming_generatingFarLongerThanTheFirstTokenAndIdleTimeouts_isAnsweredWhole_inOneAttempt()
            throws Exception {
        String id = newId();
        HttpResponse<String> r = post(gw, Fleet.chat("long", false, 60), id); // 60 tokens at 25 ms: 1.5 s, silent
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(attempts(r)).isEqualTo(1);
        JsonNode choice = Http.JSON.readTree(r.body()).path("choices").get(0);
        assertThat(choice.path("message").path("content").asText().split(" ")).hasSize(60);
        assertThat(choice.path("finish_reason").asText()).isEqualTo("length");
        assertThat(generated(id)).containsOnlyKeys(r.headers().firstValue("x-sextant-engine").orElseThrow())
                .containsValue(1);
    }

    @Test
    void stream_longerThanTheFirstTokenTimeout_butWithTokensWithinTheIdleTimeout_completes() throws Exception {
        String id = newId();
        HttpResponse<String> r = post(gw, Fleet.chat("long-stream", true, 60), id);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(attempts(r)).isEqualTo(1);
        assertThat(r.body().strip()).endsWith("data: [DONE]");
        assertThat(r.body().lines().filter(l -> l.contains("\"content\":\"") && !l.contains("\"content\":\"\"")))
                .hasSize(60);
        assertThat(generated(id)).hasSize(1).containsValue(1);
    }

    @Test
    void stream_whoseEngineSendsItsHeadThenCloses_isRetriedElsewhere_andTheClientSeesOneAnswer() throws Exception {
        String first = engineOf("head-then-close");
        fleet.engines.get(first).setFaults(new Faults(0, 1, false, 0)); // the head, then the connection closes
        String id = newId();
        HttpResponse<String> r = post(gw, Fleet.chat("head-then-close", true, 5), id);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("x-sextant-engine").orElseThrow()).isNotEqualTo(first);
        assertThat(attempts(r)).as("the first attempt failed before its first event: retried").isEqualTo(2);
        assertThat(r.headers().firstValue("x-engine-id")).as("the head the client got").isEqualTo(
                r.headers().firstValue("x-sextant-engine"));
        assertThat(r.body().strip()).endsWith("data: [DONE]").doesNotContain("\"error\"");
        assertThat(generated(id)).as("generated once, by the second engine").hasSize(1).containsValue(1)
                .doesNotContainKey(first);
        assertThat(metric(gw, "sextant_gateway_retries_total")).isEqualTo(1);
    }

    @Test
    void nonStreaming_whoseEngineClosesAfterGeneratingPartOfIt_isNotRetried() throws Exception {
        String first = engineOf("close-after-3");
        fleet.engines.get(first).setFaults(new Faults(0, 1, false, 3)); // closes after 3 of 20 tokens
        String id = newId();
        HttpResponse<String> r = post(gw, Fleet.chat("close-after-3", false, 20), id);
        assertThat(r.statusCode()).isEqualTo(502);
        assertThat(attempts(r)).isEqualTo(1);
        assertThat(errorMessage(r)).contains("engine " + first).contains("after the request was written")
                .contains("not retried");
        assertThat(generated(id)).as("generated by one engine only").containsOnlyKeys(first);
        assertThat(notRetried(gw, "request_written")).isEqualTo(1);
        assertThat(metric(gw, "sextant_gateway_retries_total")).isZero();
    }

    @ParameterizedTest(name = "stream: {0}")
    @ValueSource(booleans = {false, true})
    void anEngineAnswering500_isRetriedOnlyForAStream(boolean stream) throws Exception {
        String first = engineOf("fails-" + stream);
        fleet.engines.get(first).setFaults(new Faults(1.0, 1, false, -1));
        String id = newId();
        HttpResponse<String> r = post(gw, Fleet.chat("fails-" + stream, stream, 5), id);
        if (stream) { // a stream's status comes before its first event: nothing was generated
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(attempts(r)).isEqualTo(2);
            assertThat(r.headers().firstValue("x-sextant-engine").orElseThrow()).isNotEqualTo(first);
            assertThat(generated(id)).hasSize(1).doesNotContainKey(first);
        } else { // a whole answer's 500 may come after the engine generated it
            assertThat(r.statusCode()).isEqualTo(502);
            assertThat(attempts(r)).isEqualTo(1);
            assertThat(errorMessage(r)).contains("answered 500").contains("not retried");
            assertThat(notRetried(gw, "engine_error")).isEqualTo(1);
            assertThat(generated(id)).isEmpty();
        }
    }

    @Test
    void aHangingEngine_timesAStreamOutOnItsFirstToken_withoutARetry() throws Exception {
        String first = engineOf("hang");
        EngineEmulator hung = fleet.engines.get(first);
        hung.setFaults(new Faults(0, 1, true, -1));
        long received = fleet.engines.values().stream().mapToLong(EngineEmulator::requestsReceived).sum();
        HttpResponse<String> r = post(gw, Fleet.chat("hang", true, 5), newId());
        assertThat(r.statusCode()).isEqualTo(504);
        assertThat(attempts(r)).isEqualTo(1);
        assertThat(errorMessage(r)).contains("first_token_timeout").contains("not retried");
        assertThat(fleet.engines.values().stream().mapToLong(EngineEmulator::requestsReceived).sum())
                .as("no other engine was sent it").isEqualTo(received + 1);
        assertThat(notRetried(gw, "timeout")).isEqualTo(1);
    }

    @Test
    void aClassWithItsOwnTotalTimeout_cutsALongGeneration_andTheEngineStopsGeneratingIt() throws Exception {
        try (Gateway g = Gateway.start(config().withClassTimeouts(Map.of("chat",
                new RequestTimeouts(FIRST_TOKEN, IDLE, Duration.ofMillis(800)))), SnapshotSource.fixed(fleet.snapshot()),
                1)) {
            String id = newId();
            HttpResponse<String> r = post(g, Fleet.chat("cut", false, 2000), id); // 50 s of generation
            assertThat(r.statusCode()).isEqualTo(504);
            assertThat(attempts(r)).isEqualTo(1);
            assertThat(errorMessage(r)).contains("total_timeout");
            assertThat(generated(id)).hasSize(1);
            EngineEmulator engine = fleet.engines.get(generated(id).keySet().iterator().next());
            assertThat(Fleet.await(() -> running(engine) == 0, Duration.ofSeconds(10)))
                    .as("the engine stopped once the gateway closed the connection").isTrue();
            assertThat(engine.generatedTokens()).isLessThan(2000);
            // an eu-west request is of the other class, which keeps the gateway's own total timeout
            HttpResponse<String> eu = Fleet.post(g.port(), "/v1/chat/completions", Fleet.chat("eu", false, 60),
                    "x-sextant-residency", "eu-west");
            assertThat(eu.statusCode()).isEqualTo(200);
        }
    }

    /** The engine's {@code vllm:num_requests_running}, from its /metrics. */
    private static long running(EngineEmulator engine) {
        try {
            for (String l : Fleet.get(engine.port(), "/metrics").body().split("\n")) {
                if (l.startsWith("vllm:num_requests_running")) {
                    return (long) Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1));
                }
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        throw new AssertionError("no vllm:num_requests_running");
    }

    @ParameterizedTest(name = "stream: {0}")
    @ValueSource(booleans = {false, true})
    void aReusedConnectionClosedAfterTheRequestWasRead_isRetriedOnlyForAStream(boolean stream) throws Exception {
        try (OneShotEngine engine = new OneShotEngine("e1", OneShotEngine.Drop.FIN_AFTER_READING);
             Gateway g = Gateway.start(config(), SnapshotSource.fixed(Fleet.standIns(engine.port())), 1)) {
            assertThat(post(g, Fleet.chat("k", false, 1), newId()).statusCode()).isEqualTo(200); // a kept connection
            String id = newId();
            HttpResponse<String> r = post(g, Fleet.chat("k", stream, 1), id);
            assertThat(engine.dropped.get()).isEqualTo(1);
            if (stream) {
                assertThat(r.statusCode()).isEqualTo(200);
                assertThat(attempts(r)).isEqualTo(2);
                assertThat(engine.answered(id)).isEqualTo(1);
            } else {
                assertThat(r.statusCode()).isEqualTo(502);
                assertThat(attempts(r)).isEqualTo(1);
                assertThat(errorMessage(r)).contains("not retried");
                assertThat(notRetried(g, "request_written")).isEqualTo(1);
            }
            assertThat(metric(g, "sextant_gateway_retries_total")).isEqualTo(stream ? 1 : 0);
        }
    }

    @Test
    void aReusedConnectionClosedBeforeTheRequestWasWritten_isResentToTheSameEngine_asACountedRetry() throws Exception {
        try (OneShotEngine engine = new OneShotEngine("e1", OneShotEngine.Drop.RST_BEFORE_READING);
             Gateway g = Gateway.start(config().withMaxBodyBytes(64 << 20).withEngineKeepAlive(Duration.ofMinutes(5)),
                     SnapshotSource.fixed(Fleet.standIns(engine.port())), 1)) {
            // a kept connection, reused however long the large body takes to reach the gateway
            assertThat(post(g, Fleet.chat("k", false, 1), newId()).statusCode()).isEqualTo(200);
            // a body far larger than the sockets' buffers: the engine resets the connection while it is being written
            String message = "{\"role\":\"user\",\"content\":\"" + "x".repeat(1 << 20) + "\"}";
            String big = "{\"model\":\"m\",\"max_tokens\":1,\"prompt_cache_key\":\"k\",\"messages\":["
                    + String.join(",", java.util.Collections.nCopies(32, message)) + "]}";
            String id = newId();
            HttpResponse<String> r = post(g, big, id);
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(engine.dropped.get()).isEqualTo(1);
            assertThat(attempts(r)).as("the resend is an attempt").isEqualTo(2);
            assertThat(r.headers().firstValue("x-sextant-engine")).hasValue("e1");
            assertThat(metric(g, "sextant_gateway_retries_total")).as("and a retry").isEqualTo(1);
            assertThat(engine.answered(id)).isEqualTo(1);
            assertThat(g.plane().ejections()).as("a closed kept-alive connection is not the engine's fault").isEmpty();
        }
    }

    @Test
    void aConnectionIdleLongerThanTheEngineKeepAlive_isNotReused() throws Exception {
        try (OneShotEngine engine = new OneShotEngine("e1", OneShotEngine.Drop.FIN_AFTER_READING);
             Gateway g = Gateway.start(config().withEngineKeepAlive(Duration.ofNanos(1)),
                     SnapshotSource.fixed(Fleet.standIns(engine.port())), 1)) {
            for (int i = 0; i < 5; i++) { // the engine would drop any request sent on a connection it answered before
                HttpResponse<String> r = post(g, Fleet.chat("k", false, 1), newId());
                assertThat(r.statusCode()).isEqualTo(200);
                assertThat(attempts(r)).isEqualTo(1);
            }
            assertThat(engine.dropped.get()).isZero();
        }
    }
}
