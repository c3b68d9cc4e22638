package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.sextant.config.TopologyLoader;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.snapshot.Snapshot;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * To an engine that schedules by priority the gateway writes the request's class priority into the body, as that
 * engine orders them; to any other engine it forwards the client's bytes untouched.
 */
class GatewayEnginePriorityTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private HttpServer engine;
    /** The bodies that reached the engine, as bytes read. */
    private final List<String> bodies = new CopyOnWriteArrayList<>();
    private Gateway gw;

    private void start(String scheduling) throws Exception {
        engine = Fleet.recordingEngine(ex -> {
            try {
                bodies.add(new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        String yaml = "gateway_clusters: [{id: gw, region: r}]\n"
                + "engine_clusters: [{id: c, region: r}]\nnetwork_rtt_ms: {gw: {c: 1}}\n"
                + "models: [{id: m, output_tokens: 8}]\n"
                + "classes: [{id: batch, model: m, priority: 0}, {id: premium, model: m, priority: 2}]\n"
                + "demand_rps: {gw: {batch: 10, premium: 10}}\nengines:\n"
                + "  - {id: e1, cluster: c, endpoint: 'http://127.0.0.1:" + engine.getAddress().getPort()
                + "', models: [m], capacity_rps: 100, profile: {ttft_ms: 20, tbt_ms: 5}" + scheduling + "}\n";
        Snapshot s = Policies.optimal().solve(TopologyLoader.load(yaml, "fleet.yaml"), SolveOptions.defaults());
        gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false), SnapshotSource.fixed(s), 1);
    }

    @AfterEach
    void stop() {
        if (gw != null) {
            gw.close();
        }
        if (engine != null) {
            engine.stop(0);
        }
    }

    @Test
    void lowerFirstEngine_getsTheClassPriorityNegated_lastInTheBody_overridingTheClients() throws Exception {
        start(", priority_scheduling: lower_first");
        String asked = "{\"model\":\"m\",\"priority\":-100,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}  ";

        assertThat(Fleet.post(gw.port(), "/v1/chat/completions", asked, "x-sextant-priority", "2").statusCode())
                .isEqualTo(200);
        assertThat(Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1)).statusCode())
                .isEqualTo(200);

        assertThat(bodies).hasSize(2);
        // the client's bytes, then the field, before the closing brace; the whitespace after it kept
        assertThat(bodies.get(0)).isEqualTo(asked.replace("}]}", "}],\"priority\":-2}"));
        JsonNode premium = JSON.readTree(bodies.get(0)); // Jackson, as Python, keeps the last of duplicate keys
        assertThat(premium.get("priority").asInt()).isEqualTo(-2);
        JsonNode batch = JSON.readTree(bodies.get(1));
        assertThat(batch.get("priority").asInt()).isZero();
        assertThat(batch.get("messages").get(0).get("content").asText()).isEqualTo("hello");
    }

    @Test
    void aBodyLargerThanOneWrite_arrivesWhole_withTheFieldAtItsEnd() throws Exception {
        start(", priority_scheduling: lower_first");
        String asked = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"" + "é".repeat(150_000)
                + "\"}]}";

        assertThat(Fleet.post(gw.port(), "/v1/chat/completions", asked, "x-sextant-priority", "2").statusCode())
                .isEqualTo(200);

        assertThat(bodies).containsExactly(asked.substring(0, asked.length() - 1) + ",\"priority\":-2}");
    }

    @Test
    void higherFirstEngine_getsTheClassPriorityAsItIs() throws Exception {
        start(", priority_scheduling: higher_first");

        Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1), "x-sextant-priority", "2");

        assertThat(JSON.readTree(bodies.get(0)).get("priority").asInt()).isEqualTo(2);
    }

    @Test
    void firstComeFirstServedEngine_getsTheClientsBytesUntouched() throws Exception {
        start("");
        String asked = Fleet.chat("k", false, 1);

        Fleet.post(gw.port(), "/v1/chat/completions", asked, "x-sextant-priority", "2");

        assertThat(bodies).containsExactly(asked);
    }
}
