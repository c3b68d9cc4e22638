package dev.sextant.server.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.config.TopologyLoader;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.server.gateway.Fleet;
import dev.sextant.signal.PrometheusText;
import dev.sextant.topology.Topology;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The demo's network is really there: each engine emulates the topology's round trip to each gateway cluster. */
class DemoTest {
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private static Demo demo;

    @BeforeAll
    static void start() throws Exception {
        demo = Demo.start(0, 0);
    }

    @AfterAll
    static void stop() {
        if (demo != null) {
            demo.close();
        }
    }

    @Test
    void everyEngine_emulatesTheTopologysRoundTripFromEachGatewayCluster() throws Exception {
        Topology t = TopologyLoader.load(Files.readString(demo.topologyFile()), "demo.yaml");
        for (EngineEmulator e : demo.engines()) {
            String cluster = Demo.ENGINES.get(e.config().engineId());
            assertThat(e.config().networkRttMs()).as(e.config().engineId()).isEqualTo(Map.of(
                    "east", t.networkRttMs().get("east").get(cluster), "eu", t.networkRttMs().get("eu").get(cluster)));
        }
        assertThat(demo.engines().get(2).config().networkRttMs()).as("usw-1").containsEntry("east", 60.0);
    }

    /**
     * Each engine's batch is the smallest at which the emulator's pace carries the topology's rating of the demo's
     * answers, so the topology states what the engines do: a batch fewer would carry less than the rating.
     */
    @Test
    void everyEngine_carriesItsRating_andABatchFewerWouldNot() throws Exception {
        Topology t = TopologyLoader.load(Files.readString(demo.topologyFile()), "demo.yaml");
        int tokens = t.models().get(0).outputTokens();
        assertThat(tokens).as("the load's answers are the topology's").isEqualTo(Demo.OUTPUT_TOKENS);
        for (EngineEmulator e : demo.engines()) {
            var c = e.config();
            double rating = t.engines().stream().filter(x -> x.id().equals(c.engineId())).findFirst().orElseThrow()
                    .capacityRps();
            int b = c.maxSequences();
            double carries = b * 1000.0 / (tokens * (c.decodeBaseMs() + b * c.decodeMsPerSequence()));
            double fewer = (b - 1) * 1000.0 / (tokens * (c.decodeBaseMs() + (b - 1) * c.decodeMsPerSequence()));
            assertThat(carries).as(c.engineId()).isGreaterThanOrEqualTo(rating).isLessThan(1.1 * rating);
            assertThat(fewer).as(c.engineId() + " with a batch fewer").isLessThan(rating);
        }
    }

    @Test
    void aRequestFromEastServedInUsWest_takesAtLeastItsRoundTrip() throws Exception {
        URI east = demo.gatewayUris().get(0);
        long took = -1;
        // east's nearby engines cannot carry its demand: part of its keys go to us-west
        for (int i = 0; i < 400 && took < 0; i++) {
            long start = System.nanoTime();
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(east.resolve("/v1/chat/completions"))
                    .timeout(Duration.ofSeconds(20)).header("content-type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"" + Demo.MODEL + "\",\"max_tokens\":1,"
                            + "\"prompt_cache_key\":\"k" + i + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"))
                    .build(), HttpResponse.BodyHandlers.ofString());
            long elapsed = System.nanoTime() - start;
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            if (r.headers().firstValue("x-sextant-engine").orElse("").startsWith("usw-")) {
                took = elapsed;
            }
        }
        assertThat(took).as("some request of east served in us-west").isPositive();
        assertThat(took / 1e6).as("its time, ms: at least the 60 ms round trip").isGreaterThanOrEqualTo(60);
    }

    @Test
    void theGatewaysProbe_andTheirProbesSucceed() throws Exception {
        URI east = demo.gatewayUris().get(0);
        // the first round of probes is one probe_interval (5 s) after the start
        assertThat(Fleet.await(() -> probeSuccesses(east) >= 1, Duration.ofSeconds(30))).isTrue();
    }

    private static double probeSuccesses(URI gateway) {
        try {
            String metrics = HTTP.send(HttpRequest.newBuilder(gateway.resolve("/metrics")).GET().build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            return PrometheusText.parse(metrics).samples("sextant_gateway_probes_total").stream()
                    .filter(s -> "success".equals(s.labels().get("outcome"))).mapToDouble(s -> s.value()).sum();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
