package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.config.TopologyLoader;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.snapshot.Snapshot;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Clients that send no key (no {@code prompt_cache_key}, session header or {@code user}) through a gateway to six
 * emulated engines of equal weight: a conversation keeps its engine by its first turn, and a system prompt many
 * conversations share does not pin them to one engine (docs/request-path.md §1 and §4).
 */
class GatewayKeylessAffinityTest {
    static final Map<String, EngineEmulator> engines = new LinkedHashMap<>();
    static Gateway gw;
    static final String SYSTEM = "You answer questions about the bank's cards and accounts, politely. ".repeat(30)
            .substring(0, 2000);

    @BeforeAll
    static void start() throws Exception {
        StringBuilder y = new StringBuilder("gateway_clusters: [{id: gw, region: r}]\n"
                + "engine_clusters: [{id: c, region: r}]\nnetwork_rtt_ms: {gw: {c: 1}}\n"
                + "models: [{id: m, output_tokens: 8}]\nclasses: [{id: chat, model: m}]\n"
                + "demand_rps: {gw: {chat: 150}}\nengines:\n"); // the demo's load
        for (int i = 1; i <= 6; i++) {
            EngineEmulator e = EngineEmulator.start(EngineConfig.defaults("e" + i, "m").withLatency(64, 0.0, 10, 0.0)
                    .withDefaultMaxTokens(8));
            engines.put("e" + i, e);
            y.append("  - {id: e").append(i).append(", cluster: c, endpoint: 'http://127.0.0.1:").append(e.port())
                    .append("', models: [m], capacity_rps: 100, profile: {ttft_ms: 20, tbt_ms: 5}}\n");
        }
        Snapshot s = Policies.optimal().solve(TopologyLoader.load(y.toString(), "six.yaml"), SolveOptions.defaults());
        gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false), SnapshotSource.fixed(s), 1);
    }

    @AfterAll
    static void stop() {
        gw.close();
        engines.values().forEach(EngineEmulator::close);
    }

    static String chat(int maxTokens, String... roleAndContent) {
        StringBuilder b = new StringBuilder("{\"model\":\"m\",\"max_tokens\":").append(maxTokens).append(",\"messages\":[");
        for (int i = 0; i < roleAndContent.length; i += 2) {
            b.append(i == 0 ? "" : ",").append("{\"role\":\"").append(roleAndContent[i]).append("\",\"content\":\"")
                    .append(roleAndContent[i + 1]).append("\"}");
        }
        return b.append("]}").toString();
    }

    static CompletableFuture<HttpResponse<String>> post(String body) {
        return Fleet.HTTP.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gw.port()
                        + "/v1/chat/completions")).timeout(Duration.ofSeconds(20))
                .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    static String engine(HttpResponse<String> r) {
        assertThat(r.statusCode()).isEqualTo(200);
        return r.headers().firstValue("x-sextant-engine").orElseThrow();
    }

    /** 40 conversations of three turns, a 50-character first message each; half share the system prompt. */
    @Test
    void keylessConversations_returnToTheirFirstEngine() throws Exception {
        int later = 0;
        int back = 0;
        int spilled = 0;
        for (int c = 0; c < 40; c++) {
            String first = String.format("Question %02d: why was my card refused at the shop?!", c);
            assertThat(first).hasSize(50);
            List<String> msgs = new ArrayList<>(c % 2 == 0 ? List.of("system", SYSTEM) : List.of());
            msgs.addAll(List.of("user", first));
            String firstEngine = null;
            for (int turn = 0; turn < 3; turn++) {
                HttpResponse<String> r = post(chat(4, msgs.toArray(String[]::new))).get();
                String e = engine(r);
                if (turn == 0) {
                    firstEngine = e;
                } else {
                    later++;
                    back += e.equals(firstEngine) ? 1 : 0;
                    spilled += r.headers().firstValue("x-sextant-reason").orElse("").startsWith("key") ? 0 : 1;
                }
                msgs.addAll(List.of("assistant", "Answer " + turn + " of " + c, "user", "And turn " + turn + "?"));
            }
        }
        assertThat(spilled).as("nothing spills at this load").isZero();
        assertThat(back / (double) later).as("later turns on their conversation's first engine").isGreaterThanOrEqualTo(0.95);
    }

    /** 60 requests at once sharing a 2,000-character system prompt: about what 150 req/s of 0.4-s requests hold. */
    @Test
    void aSharedSystemPrompt_doesNotPinItsConversationsToOneEngine() throws Exception {
        List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            calls.add(post(chat(40, "system", SYSTEM, "user", "Request " + i + ": what is my balance?")));
        }
        Map<String, Integer> perEngine = new HashMap<>();
        for (CompletableFuture<HttpResponse<String>> call : calls) {
            perEngine.merge(engine(call.get()), 1, Integer::sum);
        }
        assertThat(perEngine).as("requests per engine").hasSizeGreaterThanOrEqualTo(3);
    }
}
