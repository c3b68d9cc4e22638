package dev.sextant.server.control;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.gateway.Fleet;
import dev.sextant.server.internal.Http;
import dev.sextant.snapshot.Route;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The control plane on loopback; its policy loop is driven by {@link ControlPlane#tickNow()}. */
class ControlPlaneTest {
    static final String TOKEN = "s3cret-token";

    @TempDir
    Path dir;
    Fleet fleet;
    Path file;
    ControlPlane cp;

    @BeforeEach
    void start() throws Exception {
        fleet = new Fleet(1);
        file = dir.resolve("topology.yaml");
        Files.writeString(file, fleet.yaml(150));
        // the schedule never fires during a test: every step is tickNow(); each step scrapes
        cp = ControlPlane.start(ControlPlaneConfig.defaults(file, TOKEN).withIntervals(Duration.ofHours(1),
                Duration.ofHours(1), Duration.ofMillis(1), Duration.ofSeconds(1), 2));
    }

    @AfterEach
    void stop() {
        cp.close();
        fleet.close();
    }

    private HttpResponse<String> get(String path, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(cp.uri() + path)).timeout(Duration.ofSeconds(30));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return Fleet.HTTP.send(b.GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> postReport(String body, String authorization) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(cp.uri() + "/v1/reports"))
                .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
        if (authorization != null) {
            b.header("authorization", authorization);
        }
        return Fleet.HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @ParameterizedTest(name = "{0} with authorization [{1}]")
    @CsvSource(nullValues = "none", value = {
            "/v1/snapshot?gateway=gw, none", "/v1/snapshot?gateway=gw, Bearer wrong", "/v1/snapshot?gateway=gw, Basic czNjcmV0",
            "/v1/snapshot?gateway=gw, Bearer s3cret-token2", "/v1/explain?gateway=gw&class=chat, none",
            "/v1/explain?gateway=gw&class=chat, Bearer s3cret-toke"})
    void auth_missingOrWrongToken_is401AndNothingElse(String path, String authorization) throws Exception {
        HttpResponse<String> r = authorization == null ? get(path) : get(path, "authorization", authorization);
        assertThat(r.statusCode()).isEqualTo(401);
        assertThat(Http.JSON.readTree(r.body()).path("error").path("code").asText()).isEqualTo("unauthorized");
        assertThat(r.body()).doesNotContain("routes").doesNotContain("eu-1");
        assertThat(r.headers().firstValue("etag")).isEmpty();
    }

    @Test
    void auth_reportsWithoutTheToken_are401AndIgnored() throws Exception {
        String report = "{\"gateway\":\"gw\",\"engines\":{\"eu-1\":{\"requests\":100,\"errors\":100}}}";
        assertThat(postReport(report, null).statusCode()).isEqualTo(401);
        assertThat(postReport(report, "Bearer nope").statusCode()).isEqualTo(401);
        cp.tickNow();
        assertThat(cp.current().engines().get("eu-1").penalty()).isEqualTo(1.0);
    }

    @Test
    void snapshot_etagAndLongPoll_wakeOnANewVersionAfterTheTopologyChanged() throws Exception {
        String auth = "Bearer " + TOKEN;
        HttpResponse<String> first = get("/v1/snapshot?gateway=gw", "authorization", auth);
        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(Http.JSON.readTree(first.body()).path("version").asLong()).isEqualTo(1);
        String etag = first.headers().firstValue("etag").orElseThrow();
        assertThat(get("/v1/snapshot?gateway=gw", "authorization", auth, "if-none-match", etag).statusCode())
                .isEqualTo(304);
        assertThat(get("/v1/snapshot?gateway=nope", "authorization", auth).statusCode()).isEqualTo(404);

        CompletableFuture<HttpResponse<String>> poll = Fleet.HTTP.sendAsync(
                HttpRequest.newBuilder(URI.create(cp.uri() + "/v1/snapshot?gateway=gw&wait=25s"))
                        .header("authorization", auth).header("if-none-match", etag).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        Files.writeString(file, fleet.yaml(10)); // far less demand: the spill-over to us-east disappears
        cp.tickNow();
        HttpResponse<String> woken = poll.get();
        assertThat(woken.statusCode()).isEqualTo(200);
        assertThat(Http.JSON.readTree(woken.body()).path("version").asLong()).isEqualTo(2);
        assertThat(woken.headers().firstValue("etag").orElseThrow()).isNotEqualTo(etag);
    }

    @Test
    void unchangedInputs_publishNothingNew() throws Exception {
        cp.tickNow();
        cp.tickNow();
        assertThat(cp.current().version()).isEqualTo(1);
    }

    @Test
    void invalidTopology_keepsTheOldOneLoudly_untilAValidOneArrives() throws Exception {
        Files.writeString(file, fleet.yaml(150).replace("capacity_rps: 100", "capacity_rps: -5"));
        cp.tickNow();
        JsonNode health = Http.JSON.readTree(get("/healthz").body());
        assertThat(health.path("status").asText()).isEqualTo("topology_invalid");
        assertThat(health.path("topology_error").asText()).contains("capacity_rps");
        assertThat(cp.current().version()).isEqualTo(1);
        assertThat(cp.topology().engines().get(0).capacityRps()).isEqualTo(100);

        Files.writeString(file, fleet.yaml(10));
        cp.tickNow();
        assertThat(Http.JSON.readTree(get("/healthz").body()).path("status").asText()).isEqualTo("ok");
        assertThat(cp.current().version()).isEqualTo(2);
    }

    @Test
    void explain_answersJsonAndText() throws Exception {
        String auth = "Bearer " + TOKEN;
        HttpResponse<String> json = get("/v1/explain?gateway=gw&class=chat", "authorization", auth);
        assertThat(json.statusCode()).isEqualTo(200);
        assertThat(json.headers().firstValue("content-type")).hasValue("application/json");
        assertThat(Http.JSON.readTree(json.body()).isObject()).isTrue();
        assertThat(json.body()).contains("eu-1");
        HttpResponse<String> text = get("/v1/explain?gateway=gw&class=chat", "authorization", auth, "accept", "text/plain");
        assertThat(text.headers().firstValue("content-type").orElseThrow()).startsWith("text/plain");
        assertThat(text.body()).contains("eu-1").doesNotStartWith("{");
        assertThat(get("/v1/explain?gateway=gw&class=chat&format=text", "authorization", auth).body())
                .isEqualTo(text.body());
        assertThat(get("/v1/explain?gateway=gw&class=nope", "authorization", auth).statusCode()).isEqualTo(404);
        HttpResponse<String> xml = get("/v1/explain?gateway=gw&class=chat&format=xml", "authorization", auth);
        assertThat(xml.statusCode()).isEqualTo(400);
        assertThat(xml.body()).contains("format: 'xml' (expected: json or text)");
        assertThat(get("/v1/explain?gateway=gw&class=chat&format=json", "authorization", auth, "accept", "text/plain")
                .body()).isEqualTo(json.body());
        // the baselines kept between explanations give what solving them afresh gives
        assertThat(text.body()).isEqualTo(dev.sextant.policy.Explainer.toText(
                dev.sextant.policy.Explainer.explain(cp.solvedTopology(), cp.current(), "gw", "chat")));
        assertThat(text.body()).contains("With nearest routing instead").contains("With waterfall routing instead");
    }

    @Test
    void deadEngine_isMarkedUnhealthyAfterMissedScrapes_andLosesItsTraffic() throws Exception {
        double before = cp.current().routes().get("gw").get("chat").weights().getOrDefault("us-1", 0.0);
        assertThat(before).as("us-1 carries spill-over at 150 req/s").isPositive();
        fleet.engines.get("us-1").close();
        cp.tickNow(); // one miss
        assertThat(cp.current().version()).isEqualTo(1);
        cp.tickNow(); // two misses: unhealthy, re-solved
        assertThat(cp.current().version()).isEqualTo(2);
        for (Route r : cp.current().routes().get("gw").values()) {
            assertThat(r.weights().getOrDefault("us-1", 0.0)).isZero();
        }
        JsonNode health = Http.JSON.readTree(get("/healthz").body());
        assertThat(health.path("engines").path("us-1").path("healthy").asBoolean()).isFalse();
        assertThat(health.path("engines").path("eu-1").path("healthy").asBoolean()).isTrue();
    }

    @Test
    void reportedErrors_penalizeTheEngineWithAReason_andThePenaltyDecays() throws Exception {
        String report = "{\"gateway\":\"gw\",\"interval_seconds\":5,\"demand_rps\":{\"chat\":150},"
                + "\"engines\":{\"eu-1\":{\"requests\":100,\"errors\":60,\"ttft_ms\":30}}}";
        assertThat(postReport(report, "Bearer " + TOKEN).statusCode()).isEqualTo(204);
        cp.tickNow();
        assertThat(cp.current().engines().get("eu-1").penalty()).isEqualTo(0.5);
        assertThat(cp.current().engines().get("eu-2").penalty()).isEqualTo(1.0);
        JsonNode eu1 = Http.JSON.readTree(get("/healthz").body()).path("engines").path("eu-1");
        assertThat(eu1.path("reason").asText()).contains("errors 60 of 100");
        cp.tickNow(); // no new errors: recovering
        JsonNode later = Http.JSON.readTree(get("/healthz").body()).path("engines").path("eu-1");
        assertThat(later.path("penalty").asDouble()).isEqualTo(0.6);
    }

    @Test
    void slowEngine_isPenalizedForItsTtftAgainstItsProfile() throws Exception {
        cp.tickNow(); // first scrape: the baseline of every engine's counters
        var slow = fleet.engines.get("eu-1");
        slow.setFaults(new dev.sextant.server.engine.Faults(0, 500, false, -1)); // ~0.5 s per step instead of 1 ms
        java.util.List<CompletableFuture<HttpResponse<String>>> calls = new java.util.ArrayList<>();
        for (int i = 0; i < 3; i++) {
            calls.add(Fleet.HTTP.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + slow.port()
                            + "/v1/chat/completions")).header("content-type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(Fleet.chat("x" + i, false, 1))).build(),
                    HttpResponse.BodyHandlers.ofString()));
        }
        for (var c : calls) {
            assertThat(c.get().statusCode()).isEqualTo(200);
        }
        cp.tickNow(); // second scrape: the interval's mean TTFT is far above the profile's
        assertThat(cp.current().engines().get("eu-1").penalty()).isEqualTo(0.5);
        JsonNode eu1 = Http.JSON.readTree(get("/healthz").body()).path("engines").path("eu-1");
        assertThat(eu1.path("reason").asText()).startsWith("TTFT").contains("profile");
        assertThat(cp.current().engines().get("eu-2").penalty()).isEqualTo(1.0);
    }

    @Test
    void snapshotWithoutAGateway_is400NamingTheParameter() throws Exception {
        HttpResponse<String> r = get("/v1/snapshot", "authorization", "Bearer " + TOKEN);
        assertThat(r.statusCode()).isEqualTo(400);
        assertThat(r.body()).contains("gateway: missing (expected: ?gateway=ID, one of [gw])");
        assertThat(get("/v1/snapshot?gateway=mars", "authorization", "Bearer " + TOKEN).statusCode()).isEqualTo(404);
    }

    @Test
    void aReportOverTheBodyLimit_is413InOpenAisShape_andTheControlPlaneServesOn() throws Exception {
        String huge = "{\"gateway\":\"gw\",\"pad\":\"" + "x".repeat(ControlPlane.MAX_BODY_BYTES) + "\"}";
        HttpResponse<String> r = postReport(huge, "Bearer " + TOKEN);

        assertThat(r.statusCode()).isEqualTo(413);
        assertThat(Http.JSON.readTree(r.body()).path("error").path("code").asText()).isEqualTo("request_too_large");
        assertThat(get("/healthz").statusCode()).isEqualTo(200);
        assertThat(get("/metrics").body()).contains("sextant_control_oversized_bodies_total 1.0");
    }

    @Test
    void aMalformedRequestHead_is400NamingTheFault_andTheConnectionCloses() throws Exception {
        try (java.net.Socket s = new java.net.Socket(cp.uri().getHost(), cp.uri().getPort())) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write("GET /healthz HTTP/1.1\r\nhost: x\r\nno colon here\r\n\r\n"
                    .getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
            String answer = new String(s.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.ISO_8859_1);
            assertThat(answer).startsWith("HTTP/1.1 400 ").contains("\"code\":\"malformed_request\"");
        }
    }

    @Test
    void ifNoneMatchStar_isAnsweredNotModified_asAnyCurrentEtagWouldBe() throws Exception {
        HttpResponse<String> r = get("/v1/snapshot?gateway=gw", "authorization", "Bearer " + TOKEN, "if-none-match", "*");
        assertThat(r.statusCode()).isEqualTo(304);
        assertThat(r.headers().firstValue("etag")).isPresent();
    }

    @ParameterizedTest
    @ValueSource(strings = {"-5s", "-1ms", "NaNs", "abc"})
    void snapshotWithAWaitThatIsNoDuration_is400(String wait) throws Exception {
        HttpResponse<String> r = get("/v1/snapshot?gateway=gw&wait=" + wait, "authorization", "Bearer " + TOKEN);
        assertThat(r.statusCode()).isEqualTo(400);
        assertThat(r.body()).contains("wait: '" + wait + "' (expected: a duration >= 0");
    }

    @Test
    void metrics_everyMetricSaysWhatItCounts() throws Exception {
        String body = get("/metrics").body();
        assertThat(body).contains("sextant_control_solves_total")
                .as("the process's own meters beside Sextant's").contains("# TYPE jvm_compilation_time_ms_total counter")
                .contains("jvm_memory_used_bytes{area=\"heap\"").contains("# TYPE process_files_open_files gauge");
        assertThat(body.lines().filter(l -> l.startsWith("# HELP "))).isNotEmpty()
                .allSatisfy(l -> assertThat(l.split(" ", 4)).hasSize(4).satisfies(p -> assertThat(p[3]).isNotBlank()));
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({"POST, /metrics, GET, HEAD", "DELETE, /healthz, GET, HEAD", "PUT, /v1/snapshot?gateway=gw, GET, HEAD",
            "GET, /v1/reports, POST,"})
    void wrongMethod_is405WithAllow_butOnlyAfterTheTokenOnGuardedPaths(String method, String path, String allow1,
                                                                       String allow2) throws Exception {
        String allow = allow2 == null ? allow1 : allow1 + ", " + allow2;
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(cp.uri() + path)).timeout(Duration.ofSeconds(10))
                .method(method, HttpRequest.BodyPublishers.noBody());
        HttpResponse<String> anonymous = Fleet.HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        HttpResponse<String> r = Fleet.HTTP.send(b.header("authorization", "Bearer " + TOKEN).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(405);
        assertThat(r.headers().firstValue("allow")).hasValue(allow);
        assertThat(Http.JSON.readTree(r.body()).path("error").path("code").asText()).isEqualTo("method_not_allowed");
        assertThat(anonymous.statusCode()).isEqualTo(path.startsWith("/v1/") ? 401 : 405);
    }

    @Test
    void malformedReport_is400() throws Exception {
        HttpResponse<String> notJson = postReport("{not json", "Bearer " + TOKEN);
        assertThat(notJson.statusCode()).isEqualTo(400);
        assertThat(dev.sextant.server.internal.Http.JSON.readTree(notJson.body()).path("error").path("message").asText())
                .startsWith("malformed JSON report: Unexpected character").doesNotContain("\n").doesNotContain("Source");
        HttpResponse<String> unclosed = postReport("{\"gateway\":\"gw\"", "Bearer " + TOKEN);
        assertThat(unclosed.statusCode()).isEqualTo(400);
        assertThat(Http.JSON.readTree(unclosed.body()).path("error").path("message").asText())
                .startsWith("malformed JSON report: Unexpected end-of-input").endsWith("(opened on line 1)")
                .doesNotContain("Source");
        assertThat(postReport("{\"gateway\":\"mars\"}", "Bearer " + TOKEN).statusCode()).isEqualTo(400);
        assertThat(postReport("{\"gateway\":\"gw\",\"demand_rps\":{\"chat\":-1}}", "Bearer " + TOKEN).statusCode())
                .isEqualTo(400);
    }

    @Test
    void snapshot_isTheGatewaysOwnView_madeOncePerPublication() throws Exception {
        // a second gateway cluster, in the other region
        Files.writeString(file, fleet.yaml(150)
                .replace("gateway_clusters: [{id: gw, region: eu-west}]",
                        "gateway_clusters: [{id: gw, region: eu-west}, {id: gw2, region: us-east}]")
                .replace("network_rtt_ms: {gw: {c-eu: 2, c-us: 10}}",
                        "network_rtt_ms: {gw: {c-eu: 2, c-us: 10}, gw2: {c-eu: 10, c-us: 2}}"));
        cp.tickNow();
        assertThat(cp.current().routes()).containsOnlyKeys("gw", "gw2");
        String auth = "Bearer " + TOKEN;
        HttpResponse<String> gw = get("/v1/snapshot?gateway=gw", "authorization", auth);
        HttpResponse<String> gw2 = get("/v1/snapshot?gateway=gw2", "authorization", auth);
        assertThat(gw.statusCode()).isEqualTo(200);
        assertThat(gw2.statusCode()).isEqualTo(200);

        var view = dev.sextant.config.SnapshotJson.read(gw2.body());
        assertThat(view.version()).isEqualTo(cp.current().version());
        assertThat(view.routes()).containsOnlyKeys("gw2");
        assertThat(view.route("gw2", "chat")).isEqualTo(cp.current().route("gw2", "chat"));
        assertThat(view.networkRttMs()).containsOnlyKeys("gw2");
        assertThat(view.engines()).isEqualTo(cp.current().engines());
        assertThat(view.hash()).isEqualTo(view.contentHash()).isNotEqualTo(cp.current().hash());
        assertThat(gw2.headers().firstValue("etag").orElseThrow())
                .isNotEqualTo(gw.headers().firstValue("etag").orElseThrow())
                .startsWith("\"" + view.version() + "-" + view.hash().substring(0, 16));
        // every gateway of a cluster gets the same bytes, written once per publication
        assertThat(get("/v1/snapshot?gateway=gw2", "authorization", auth).body()).isEqualTo(gw2.body());
        assertThat(cp.view("gw2").get()).isSameAs(cp.view("gw2").get());
        assertThat(cp.view("nope").get()).isNull();
    }

    @Test
    void materialChange_ignoresSmallWeightMoves() {
        var s = cp.current();
        assertThat(ControlPlane.materialChange(s, s, 0.02)).isNull();
    }

    @Test
    void materialChange_namesTheFirstWeightThatMovedBeyondTheHysteresis() {
        var s = cp.current();
        String gateway = s.routes().keySet().iterator().next();
        String cls = s.routes().get(gateway).keySet().iterator().next();
        Route r = s.route(gateway, cls);
        String engine = r.weights().keySet().iterator().next();
        double w = r.weights().get(engine);
        double moved = w >= 0.5 ? w - 0.1 : w + 0.1;
        var weights = new java.util.TreeMap<>(r.weights());
        weights.put(engine, moved);
        var routes = new java.util.TreeMap<>(s.routes());
        var byClass = new java.util.TreeMap<>(routes.get(gateway));
        byClass.put(cls, new Route(r.model(), r.residency(), r.priority(), r.demandRps(), weights, r.shedFraction(),
                r.priceMs()));
        routes.put(gateway, byClass);
        var next = new dev.sextant.snapshot.Snapshot(s.version() + 1, "", s.policy(), s.fleetUtilization(),
                s.retryBudget(), routes, s.engines(), s.networkRttMs(), s.objective(), s.groups());

        assertThat(ControlPlane.materialChange(s, next, 0.05)).isEqualTo(String.format(
                "%s/%s weight of %s %.3f → %.3f", gateway, cls, engine, w, moved));
        assertThat(ControlPlane.materialChange(s, next, 0.2)).as("within the hysteresis").isNull();
    }
}
