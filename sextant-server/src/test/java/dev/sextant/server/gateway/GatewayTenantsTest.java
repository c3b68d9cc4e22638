package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.sextant.config.TopologyLoader;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.server.tenants.ApiKeys;
import dev.sextant.snapshot.Snapshot;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tenants and API keys at the gateway, on real sockets (docs/tenants.md): who may send, which model, where it may be
 * served and at what priority, within which limits; headers may only narrow. Two stand-in engines, one in eu-west and
 * one in us-east, both scheduling by priority, so that each request's class priority reaches the engine in its body.
 */
class GatewayTenantsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String EU_KEY = "sk-test-eu-only";
    private static final String FREE_KEY = "sk-test-free";
    private static final String LIMITED_KEY = "sk-test-limited";
    private static final String OTHER_MODEL_KEY = "sk-test-other-model";

    @TempDir
    Path dir;
    private final List<HttpServer> engines = new ArrayList<>();
    /** Per engine id, the class priority each request reached it with, and its authorization header. */
    private final Map<String, List<Integer>> priorities = new ConcurrentHashMap<>();
    private final List<String> authorizations = new CopyOnWriteArrayList<>();
    private final List<String> apiKeys = new CopyOnWriteArrayList<>();
    private Snapshot snapshot;
    private Gateway gw;

    @BeforeEach
    void engines() throws Exception {
        StringBuilder y = new StringBuilder("gateway_clusters: [{id: gw, region: eu-west}]\n"
                + "engine_clusters: [{id: c-eu, region: eu-west}, {id: c-us, region: us-east}]\n"
                + "network_rtt_ms: {gw: {c-eu: 2, c-us: 2}}\nmodels: [{id: m, output_tokens: 8}]\n"
                + "classes: [{id: any-0, model: m, priority: 0}, {id: any-9, model: m, priority: 9},"
                + " {id: eu-0, model: m, residency: [eu-west], priority: 0},"
                + " {id: eu-9, model: m, residency: [eu-west], priority: 9},"
                + " {id: us-0, model: m, residency: [us-east], priority: 0},"
                + " {id: us-9, model: m, residency: [us-east], priority: 9}]\n"
                + "demand_rps: {gw: {any-0: 1, any-9: 1, eu-0: 1, eu-9: 1, us-0: 1, us-9: 1}}\nengines:\n");
        for (String id : List.of("eu", "us")) {
            priorities.put(id, new CopyOnWriteArrayList<>());
            HttpServer e = Fleet.recordingEngine(ex -> {
                try {
                    JsonNode body = JSON.readTree(new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
                    priorities.get(id).add(body.path("priority").asInt(Integer.MIN_VALUE));
                    authorizations.add(String.valueOf(ex.getRequestHeaders().getFirst("authorization")));
                    apiKeys.add(String.valueOf(ex.getRequestHeaders().getFirst("api-key")));
                } catch (java.io.IOException ex2) {
                    throw new java.io.UncheckedIOException(ex2);
                }
            });
            engines.add(e);
            y.append("  - {id: ").append(id).append(", cluster: c-").append(id).append(", endpoint: 'http://127.0.0.1:")
                    .append(e.getAddress().getPort()).append("', models: [m], capacity_rps: 100,"
                            + " profile: {ttft_ms: 20, tbt_ms: 5}, priority_scheduling: higher_first}\n");
        }
        snapshot = Policies.optimal().solve(TopologyLoader.load(y.toString(), "fleet.yaml"), SolveOptions.defaults());
    }

    @AfterEach
    void stop() {
        if (gw != null) {
            gw.close();
        }
        engines.forEach(e -> e.stop(0));
    }

    private Path tenants(String yaml) throws Exception {
        return Files.writeString(dir.resolve("tenants.yaml"), yaml);
    }

    private static String tenantsYaml(String euKey) {
        return "tenants:\n"
                + "  eu-only: {keys: [" + ApiKeys.hash(euKey) + "], residency: [eu-west], max_priority: 5}\n"
                + "  free: {keys: [" + ApiKeys.hash(FREE_KEY) + "]}\n"
                + "  limited: {keys: [" + ApiKeys.hash(LIMITED_KEY) + "], limits: {requests_per_second: 2}}\n"
                + "  other-model: {keys: [" + ApiKeys.hash(OTHER_MODEL_KEY) + "], models: [not-m]}\n";
    }

    private void start(GatewayConfig.Builder config) {
        gw = Gateway.start(config.accessLog(false).build(), SnapshotSource.fixed(snapshot), 1);
    }

    private HttpResponse<String> chat(String key, String... headers) throws Exception {
        List<String> h = new ArrayList<>(List.of(headers));
        if (key != null) {
            h.add("authorization");
            h.add("Bearer " + key);
        }
        return Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1), h.toArray(String[]::new));
    }

    private static String code(HttpResponse<String> r) throws Exception {
        return JSON.readTree(r.body()).path("error").path("code").asText();
    }

    @Test
    void keys_unknownMissingOrMalformed_get401_andTheRightOnes200_withoutTheKeyReachingAnEngine() throws Exception {
        start(GatewayConfig.builder("gw").tenantsFile(tenants(tenantsYaml(EU_KEY))));
        for (String[] auth : List.of(new String[0], new String[] {"authorization", "Bearer sk-test-nobody"},
                new String[] {"authorization", "Bearer " + FREE_KEY + "x"}, new String[] {"authorization", FREE_KEY},
                new String[] {"authorization", "Basic " + FREE_KEY}, new String[] {"authorization", "Bearer "})) {
            HttpResponse<String> r = chat(null, auth);
            assertThat(r.statusCode()).as(String.join(" ", auth)).isEqualTo(401);
            assertThat(code(r)).isEqualTo("invalid_api_key");
            assertThat(r.headers().firstValue("www-authenticate")).hasValue("Bearer");
            assertThat(r.body()).doesNotContain(FREE_KEY);
        }
        assertThat(chat(FREE_KEY).statusCode()).isEqualTo(200);
        assertThat(chat(null, "authorization", "bearer " + FREE_KEY).statusCode()).isEqualTo(200);
        assertThat(authorizations).containsOnly("null"); // the tenant's key is never sent to an engine
        String metrics = Fleet.get(gw.port(), "/metrics").body();
        assertThat(metrics).contains("sextant_gateway_tenant_refusals_total{reason=\"invalid_api_key\",tenant=\"(unknown)\"} 6.0")
                .contains("sextant_gateway_tenant_admitted_total{tenant=\"free\"} 2.0");
        assertThat(metrics).doesNotContain(FREE_KEY);
    }

    @Test
    void azureApiKeyHeader_servesAsItsTenant_aWrongOneIsTheSame401_andDifferentKeysAre401() throws Exception {
        start(GatewayConfig.builder("gw").tenantsFile(tenants(tenantsYaml(EU_KEY))));
        HttpResponse<String> euOnly = chat(null, "api-key", EU_KEY);
        assertThat(euOnly.statusCode()).as(euOnly.body()).isEqualTo(200);
        assertThat(euOnly.headers().firstValue("x-sextant-engine")).as("eu-only's residency binds").hasValue("eu");
        assertThat(chat(FREE_KEY, "api-key", FREE_KEY).statusCode()).as("both headers, one key").isEqualTo(200);
        assertThat(chat(FREE_KEY, "api-key", " ").statusCode()).as("a blank api-key is absent").isEqualTo(200);

        HttpResponse<String> wrongBearer = chat("sk-test-nobody");
        HttpResponse<String> wrongApiKey = chat(null, "api-key", "sk-test-nobody");
        assertThat(wrongApiKey.statusCode()).isEqualTo(401);
        assertThat(JSON.readTree(wrongApiKey.body())).isEqualTo(JSON.readTree(wrongBearer.body()));
        assertThat(code(wrongApiKey)).isEqualTo("invalid_api_key");
        assertThat(wrongApiKey.headers().firstValue("www-authenticate")).hasValue("Bearer");

        // two tenants' keys, in the two headers or in api-key twice: served as neither
        for (String[] h : List.of(new String[] {"authorization", "Bearer " + FREE_KEY, "api-key", EU_KEY},
                new String[] {"api-key", FREE_KEY, "api-key", EU_KEY})) {
            HttpResponse<String> r = chat(null, h);
            assertThat(r.statusCode()).as(String.join(" ", h)).isEqualTo(401);
            assertThat(code(r)).isEqualTo("invalid_api_key");
            assertThat(JSON.readTree(r.body()).path("error").path("message").asText()).startsWith("Ambiguous API key");
            assertThat(r.body()).doesNotContain(FREE_KEY).doesNotContain(EU_KEY);
        }
        assertThat(apiKeys).hasSize(3).containsOnly("null"); // the tenant's key is never sent to an engine
        assertThat(authorizations).containsOnly("null");
        assertThat(Fleet.get(gw.port(), "/metrics").body())
                .contains("sextant_gateway_tenant_admitted_total{tenant=\"eu-only\"} 1.0")
                .contains("sextant_gateway_tenant_admitted_total{tenant=\"free\"} 2.0")
                .contains("sextant_gateway_tenant_refusals_total{reason=\"invalid_api_key\",tenant=\"(unknown)\"} 2.0")
                .contains("sextant_gateway_tenant_refusals_total{reason=\"ambiguous_api_key\",tenant=\"(unknown)\"} 2.0");
    }

    @Test
    void anUnknownKey_is401OnTheHead_whileTheBodyIsStillComing_andTheConnectionClosesBeforeTheBodyIsAllSent()
            throws Exception {
        start(GatewayConfig.builder("gw").tenantsFile(tenants(tenantsYaml(EU_KEY))));
        int announced = 10_000_000;
        try (RawHttp c = new RawHttp(gw.port(), 10_000)) {
            c.socket.setSendBufferSize(64 * 1024);
            // 10 MB announced, 1 KB of it sent, then nothing until the answer: it can only come from the head
            c.send("POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer sk-test-nobody\r\n"
                    + "content-type: application/json\r\ncontent-length: " + announced + "\r\n\r\n" + "{".repeat(1000));
            RawHttp.Answer a = c.read();
            assertThat(a.status()).isEqualTo(401);
            assertThat(a.header("connection")).isEqualTo("close");
            assertThat(a.header("www-authenticate")).isEqualTo("Bearer");
            assertThat(JSON.readTree(a.body()).path("error").path("code").asText()).isEqualTo("invalid_api_key");
            // the rest is dropped up to a bound (KeyCheck.LINGER_BYTES, or KeyCheck.LINGER_MILLIS), then the
            // connection closes: sending the whole body announced fails
            byte[] chunk = new byte[64 * 1024];
            assertThatThrownBy(() -> {
                for (long sent = 1000; sent < announced; sent += chunk.length) {
                    c.send(chunk);
                }
            }).isInstanceOf(java.io.IOException.class);
        }
        assertThat(authorizations).isEmpty(); // no engine saw it
        assertThat(Fleet.get(gw.port(), "/metrics").body())
                .contains("sextant_gateway_tenant_refusals_total{reason=\"invalid_api_key\",tenant=\"(unknown)\"} 1.0");
    }

    @Test
    void overHttp2_anUnknownKey_is401OnTheHead_andOnlyItsStreamEnds() throws Exception {
        start(GatewayConfig.builder("gw").http2(true).tenantsFile(tenants(tenantsYaml(EU_KEY))));
        try (H2Client c = new H2Client(gw.port())) {
            H2Client.Stream refused = c.postHeadOnly("/v1/chat/completions", "authorization", "Bearer sk-test-nobody");
            assertThat(refused.status()).isEqualTo(401); // its body was never sent: the answer came from the head
            assertThat(refused.header("www-authenticate")).isEqualTo("Bearer");
            H2Client.Stream served = c.post("/v1/chat/completions", Fleet.chat("k", false, 1), "authorization",
                    "Bearer " + FREE_KEY);
            assertThat(served.status()).as("the connection serves on").isEqualTo(200);
        }
        assertThat(authorizations).hasSize(1);
    }

    @Test
    void aKnownKey_passesTheHeadCheck_andItsBodyIsReadAsItComes() throws Exception {
        start(GatewayConfig.builder("gw").tenantsFile(tenants(tenantsYaml(EU_KEY))));
        String body = Fleet.chat("k", false, 1);
        try (RawHttp c = new RawHttp(gw.port(), 10_000)) {
            c.send("POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer " + FREE_KEY + "\r\n"
                    + "content-type: application/json\r\ncontent-length: " + body.length() + "\r\n\r\n"
                    + body.substring(0, body.length() / 2));
            c.send(body.substring(body.length() / 2));
            assertThat(c.read().status()).isEqualTo(200);
            c.send(RawHttp.chatRequest(body).replace("host: x\r\n", "host: x\r\nauthorization: Bearer " + FREE_KEY + "\r\n"));
            assertThat(c.read().status()).as("the connection serves on").isEqualTo(200);
        }
        assertThat(Fleet.get(gw.port(), "/metrics").body()).contains("sextant_gateway_tenant_admitted_total{tenant=\"free\"} 2.0");
    }

    @Test
    void noHeaderCombination_widensResidencyOrRaisesPriority() throws Exception {
        start(GatewayConfig.builder("gw").tenantsFile(tenants(tenantsYaml(EU_KEY))));
        List<List<String>> residencies = List.of(List.of(), List.of("us-east"), List.of("eu-west"),
                List.of("us-east, eu-west"), List.of(" "), List.of(" ", "us-east"), List.of("us-east", "eu-west"),
                List.of("eu-west", "us-east, eu-west"), List.of("*"));
        List<List<String>> priorityHeaders = List.of(List.of(), List.of("9"), List.of("99"), List.of("-1"),
                List.of("high"), List.of("0", "9"));
        int served = 0;
        for (List<String> res : residencies) {
            for (List<String> pri : priorityHeaders) {
                List<String> h = new ArrayList<>();
                res.forEach(v -> h.addAll(List.of("x-sextant-residency", v)));
                pri.forEach(v -> h.addAll(List.of("x-sextant-priority", v)));
                HttpResponse<String> r = chat(EU_KEY, h.toArray(String[]::new));
                boolean euAllowed = res.stream().allMatch(v -> v.isBlank() || v.contains("eu-west"));
                if (!euAllowed) {
                    assertThat(r.statusCode()).as("%s %s", res, pri).isEqualTo(403);
                    assertThat(code(r)).isEqualTo("residency_not_allowed");
                    assertThat(r.body()).contains("eu-west");
                    continue;
                }
                assertThat(r.statusCode()).as("%s %s: %s", res, pri, r.body()).isEqualTo(200);
                assertThat(r.headers().firstValue("x-sextant-engine")).as("%s %s", res, pri).hasValue("eu");
                served++;
            }
        }
        assertThat(served).isGreaterThan(20);
        assertThat(priorities.get("us")).as("nothing reached the US engine").isEmpty();
        assertThat(priorities.get("eu")).as("never above the ceiling (5): the class of priority 9 is out of reach")
                .hasSize(served).allMatch(p -> p <= 5);

        // the same headers from a tenant without a ceiling or a residency do reach priority 9 and the US
        assertThat(chat(FREE_KEY, "x-sextant-priority", "9", "x-sextant-residency", "us-east")
                .headers().firstValue("x-sextant-engine")).hasValue("us");
        assertThat(priorities.get("us")).containsExactly(9);
    }

    @Test
    void gatewayResidency_bindsOpenRequests_andTenants_andHeadersNarrowWithin() throws Exception {
        start(GatewayConfig.builder("gw").residency(List.of("eu-west")));
        for (String[] h : List.of(new String[0], new String[] {"x-sextant-residency", "us-east,eu-west"},
                new String[] {"x-sextant-residency", " "}, new String[] {"x-sextant-residency", "eu-west"})) {
            HttpResponse<String> r = chat(null, h);
            assertThat(r.statusCode()).as(String.join(" ", h)).isEqualTo(200);
            assertThat(r.headers().firstValue("x-sextant-engine")).hasValue("eu");
        }
        HttpResponse<String> us = chat(null, "x-sextant-residency", "us-east");
        assertThat(us.statusCode()).isEqualTo(403);
        assertThat(code(us)).isEqualTo("residency_not_allowed");
        assertThat(us.body()).contains("this gateway cluster keeps everything it receives in [eu-west]");
        assertThat(priorities.get("us")).isEmpty();
    }

    /**
     * On a closed gateway the model list is a tenant's, as OpenAI's is a key's: without a valid key 401, with one the
     * models its tenant may use (a tenant restricted to a model the gateway does not route sees none, and retrieving
     * the routed one is 404, as for a model it does not have). An open gateway lists every routed model to anyone.
     */
    @Test
    void theModelList_isATenantsOwn_andNeedsAKey() throws Exception {
        start(GatewayConfig.builder("gw").tenantsFile(tenants(tenantsYaml(EU_KEY))));
        HttpResponse<String> none = Fleet.get(gw.port(), "/v1/models");
        assertThat(none.statusCode()).isEqualTo(401);
        assertThat(code(none)).isEqualTo("invalid_api_key");
        assertThat(Fleet.get(gw.port(), "/v1/models/m").statusCode()).isEqualTo(401);

        assertThat(models(FREE_KEY, "/v1/models").path("data")).extracting(n -> n.path("id").asText())
                .containsExactly("m");
        assertThat(models(OTHER_MODEL_KEY, "/v1/models").path("data")).as("may use only not-m, not routed here")
                .isEmpty();
        assertThat(models(FREE_KEY, "/v1/models/m").path("id").asText()).isEqualTo("m");
        assertThat(Fleet.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gw.port()
                + "/v1/models/m")).header("authorization", "Bearer " + OTHER_MODEL_KEY).GET().build(),
                HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(404);

        gw.close();
        start(GatewayConfig.builder("gw"));
        assertThat(Fleet.get(gw.port(), "/v1/models").statusCode()).as("open: anyone").isEqualTo(200);
    }

    private JsonNode models(String key, String path) throws Exception {
        HttpResponse<String> r = Fleet.send(HttpRequest.newBuilder(URI.create(
                "http://127.0.0.1:" + gw.port() + path)).header("authorization", "Bearer " + key).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(path).isEqualTo(200);
        return JSON.readTree(r.body());
    }

    @Test
    void modelNotAllowed_is403_andALimit_is429WithRetryAfter() throws Exception {
        start(GatewayConfig.builder("gw").tenantsFile(tenants(tenantsYaml(EU_KEY))));
        HttpResponse<String> other = chat(OTHER_MODEL_KEY);
        assertThat(other.statusCode()).isEqualTo(403);
        assertThat(code(other)).isEqualTo("model_not_allowed");
        int ok = 0;
        HttpResponse<String> limited = null;
        for (int i = 0; i < 10; i++) { // a burst well above 2 a second: the bucket holds 2
            HttpResponse<String> r = chat(LIMITED_KEY);
            if (r.statusCode() == 200) {
                ok++;
            } else {
                limited = r;
            }
        }
        assertThat(ok).isBetween(2, 5);
        assertThat(limited).isNotNull();
        assertThat(limited.statusCode()).isEqualTo(429);
        assertThat(code(limited)).isEqualTo("rate_limit_exceeded");
        assertThat(limited.headers().firstValue("retry-after")).hasValue("1");
        assertThat(JSON.readTree(limited.body()).path("error").path("type").asText()).isEqualTo("rate_limit_error");
        assertThat(Fleet.get(gw.port(), "/metrics").body())
                .contains("sextant_gateway_tenant_refusals_total{reason=\"requests_per_second\",tenant=\"limited\"}")
                .contains("sextant_gateway_tenant_refusals_total{reason=\"model_not_allowed\",tenant=\"other-model\"} 1.0");
    }

    @Test
    void rotatedAndRevokedKeys_takeEffectOnReload_andABrokenFileKeepsTheTenantsInForce() throws Exception {
        Path file = tenants(tenantsYaml(EU_KEY));
        start(GatewayConfig.builder("gw").tenantsFile(file));
        assertThat(chat(EU_KEY).statusCode()).isEqualTo(200);
        String rotated = "sk-test-eu-rotated";
        Fleet.rewrite(file, tenantsYaml(rotated)); // the old key revoked, the new one in
        assertThat(Fleet.await(() -> status(rotated) == 200, Duration.ofSeconds(15))).as("new key taken").isTrue();
        assertThat(chat(EU_KEY).statusCode()).as("the old key, revoked").isEqualTo(401);

        Fleet.rewrite(file, "tenants:\n  eu-only: {keys: [not-a-hash]}\n");
        assertThat(Fleet.await(() -> gw.tenancy.watch().failures() == 1, Duration.ofSeconds(15))).isTrue();
        assertThat(chat(rotated).statusCode()).as("the tenants before stay in force").isEqualTo(200);
        assertThat(Fleet.get(gw.port(), "/metrics").body())
                .contains("sextant_gateway_tenants_reload_failures_total 1.0");
    }

    private int status(String key) {
        try {
            return chat(key).statusCode();
        } catch (Exception e) {
            return -1;
        }
    }
}
