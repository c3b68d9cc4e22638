package dev.sextant.server.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.internal.Http;
import dev.sextant.signal.EngineMetrics;
import dev.sextant.signal.PrometheusText;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The emulated network: a request naming a gateway cluster with a round trip is answered as if that round trip lay
 * between them, and the engine's own clock leaves it out. Only what the delay guarantees is asserted: a client waits at
 * least the round trip more than the engine says it worked.
 */
class EngineNetworkTest {
    private static final double RTT_MS = 150;
    private static final long RTT_NANOS = (long) (RTT_MS * 1e6);
    private EngineEmulator engine;
    private Client client;

    @BeforeEach
    void start() {
        engine = EngineEmulator.start(EngineConfig.defaults("far", "m").withLatency(8, 0.01, 2, 1)
                .withDefaultMaxTokens(4).withNetworkRttMs(Map.of("east", RTT_MS, "eu", 5.0)));
        client = new Client(engine);
    }

    @AfterEach
    void stop() {
        engine.close();
    }

    private HttpRequest.Builder from(String cluster, String path) {
        return client.request(path).header(Http.GATEWAY_CLUSTER_HEADER, cluster);
    }

    @Test
    void aStreamFromAFarGatewayCluster_reachesItsFirstTokenARoundTripLaterThanTheEngineCounts() throws Exception {
        long sent = System.nanoTime();
        AtomicLong firstToken = new AtomicLong();
        HttpResponse<java.io.InputStream> r = client.http.send(from("east", "/v1/chat/completions")
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"m\",\"stream\":true,\"max_tokens\":3,"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")).build(),
                HttpResponse.BodyHandlers.ofInputStream());
        JsonNode timing = null;
        try (var lines = new java.io.BufferedReader(new java.io.InputStreamReader(r.body()))) {
            for (String line; (line = lines.readLine()) != null; ) {
                if (!line.startsWith("data: {")) {
                    continue;
                }
                JsonNode event = Client.JSON.readTree(line.substring(6));
                JsonNode delta = event.path("choices").path(0).path("delta");
                if (firstToken.get() == 0 && !delta.path("content").asText().isEmpty()) {
                    firstToken.set(System.nanoTime());
                }
                if (event.has("engine_timing")) {
                    timing = event.get("engine_timing");
                }
            }
        }
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(timing).as("the finish chunk's engine_timing").isNotNull();
        double clientTtftMs = (firstToken.get() - sent) / 1e6;
        double engineTtftMs = timing.get("ttft_ms").asDouble();
        assertThat(clientTtftMs).as("TTFT seen by the client").isGreaterThanOrEqualTo(RTT_MS);
        // were the round trip in the engine's count, the client could not see a TTFT a whole round trip above it
        assertThat(clientTtftMs - engineTtftMs).as("client TTFT - engine TTFT").isGreaterThanOrEqualTo(RTT_MS);

        EngineMetrics m = EngineMetrics.from(PrometheusText.parse(client.get("/metrics").body()), "m");
        assertThat(m.ttft().count()).isEqualTo(1.0);
        assertThat(m.ttft().sum() * 1e3).as("vllm:time_to_first_token_seconds leaves the round trip out")
                .isLessThanOrEqualTo(clientTtftMs - RTT_MS);
    }

    @Test
    void everyEndpointAGatewayReaches_isDelayed_andHealthAnswersLikeVllms() {
        Map<String, HttpRequest> requests = new HashMap<>();
        requests.put("/health", from("east", "/health").GET().build());
        requests.put("/v1/models", from("east", "/v1/models").GET().build());
        requests.put("/v1/embeddings", from("east", "/v1/embeddings").header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"m\",\"input\":\"x\"}")).build());
        requests.put("/v1/completions", from("east", "/v1/completions").header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"m\",\"prompt\":\"x\",\"max_tokens\":1}")).build());
        requests.forEach((path, request) -> {
            long start = System.nanoTime();
            HttpResponse<String> r = client.send(request);
            long took = System.nanoTime() - start;
            assertThat(r.statusCode()).as(path).isEqualTo(200);
            assertThat(took).as(path + " took at least the round trip, ns").isGreaterThanOrEqualTo(RTT_NANOS);
            if (path.equals("/health")) {
                assertThat(r.body()).isEmpty();
                assertThat(r.headers().firstValue("content-length")).hasValue("0");
                assertThat(r.headers().firstValue("x-engine-id")).hasValue("far");
            }
        });
    }

    @Test
    void theRoundTripFollowsTheNamedCluster_thenTheDefault_thenNone() {
        assertThat(engine.networkRttNanos("east")).isEqualTo(RTT_NANOS);
        assertThat(engine.networkRttNanos("eu")).isEqualTo(5_000_000);
        assertThat(engine.networkRttNanos("west")).as("not listed, no default").isZero();
        assertThat(engine.networkRttNanos(null)).as("no header, no default").isZero();
        try (EngineEmulator withDefault = EngineEmulator.start(EngineConfig.defaults("d", "m")
                .withNetworkRttMs(Map.of("east", 60.0, "default", 20.0)))) {
            assertThat(withDefault.networkRttNanos("east")).isEqualTo(60_000_000);
            assertThat(withDefault.networkRttNanos("west")).isEqualTo(20_000_000);
            assertThat(withDefault.networkRttNanos(null)).isEqualTo(20_000_000);
        }
    }

    @Test
    void anEngineClosedDuringARoundTrip_releasesTheRequestItHeld() throws Exception {
        dev.sextant.server.gateway.LeakWatch leaks = dev.sextant.server.gateway.LeakWatch.paranoid();
        EngineEmulator far = EngineEmulator.start(EngineConfig.defaults("far", "m")
                .withNetworkRttMs(Map.of("east", 60_000.0)));
        try (java.net.Socket s = new java.net.Socket("127.0.0.1", far.port())) {
            String body = "{\"model\":\"m\",\"input\":\"x\"}";
            s.getOutputStream().write(("POST /v1/embeddings HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                    + Http.GATEWAY_CLUSTER_HEADER + ": east\r\ncontent-length: " + body.length() + "\r\n\r\n" + body)
                    .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            s.getOutputStream().flush();
            Client.await("the request to wait out its round trip", () -> far.delayedRequests() == 1);
            far.close(); // a minute before the round trip is over
        }
        assertThat(far.requestsReceived()).as("never handled").isZero();
        leaks.assertNoLeakThenClose();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            negative     | east | -1   | network_rtt_ms.east: -1.0 (expected: a round trip in ms, a finite number >= 0)
            not a number | east | NaN  | network_rtt_ms.east: NaN (expected: a round trip in ms, a finite number >= 0)
            infinite     | east | Infinity | network_rtt_ms.east: Infinity (expected: a round trip in ms, a finite
            blank id     | ' '  | 5    | network_rtt_ms: ' ' (expected: a gateway cluster id, non-empty, without ',' or '=')
            id with ,    | a,b  | 5    | network_rtt_ms: 'a,b' (expected: a gateway cluster id
            """)
    void aBadRoundTrip_isRefusedNamingTheEntry(String name, String cluster, double ms, String says) {
        assertThatThrownBy(() -> EngineConfig.defaults("e", "m").withNetworkRttMs(Map.of(cluster, ms)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith(says);
    }

    @Test
    void theCommandLine_takesClusterEqualsMsPairs() {
        EngineConfig c = EngineOptions.parseArgs(new String[] {"--network-rtt-ms", "east=60, eu=140.5,default=0"});
        assertThat(c.networkRttMs()).containsExactlyInAnyOrderEntriesOf(Map.of("east", 60.0, "eu", 140.5,
                "default", 0.0));
        assertThat(EngineOptions.parseArgs(new String[0]).networkRttMs()).isEmpty();
        for (String bad : List.of("east", "east=soon", "=5", "east=60,")) {
            assertThatThrownBy(() -> EngineOptions.parseArgs(new String[] {"--network-rtt-ms=" + bad}))
                    .as(bad).isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("--network-rtt-ms: '");
        }
        assertThatThrownBy(() -> EngineOptions.parseArgs(new String[] {"--network-rtt-ms", "east=-3"}))
                .hasMessage("network_rtt_ms.east: -3.0 (expected: a round trip in ms, a finite number >= 0)");
    }
}
