package dev.sextant.server.control;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.engine.Faults;
import dev.sextant.server.gateway.Fleet;
import dev.sextant.server.gateway.LogCapture;
import dev.sextant.server.internal.Http;
import dev.sextant.snapshot.Route;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The control plane on loopback, the shell of the control loop: its policy loop is driven by
 * {@link ControlPlane#tickNow()}, and every tick scrapes every engine and steps the loop, so that a publication
 * follows a change and not the noise of the signals.
 */
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
        cp = ControlPlane.start(config());
    }

    /** The schedule never fires during a test: every tick is tickNow(), and each scrapes, steps and sends canaries. */
    private ControlPlaneConfig config() {
        return ControlPlaneConfig.defaults(file, TOKEN).withIntervals(Duration.ofMillis(1), Duration.ofHours(1),
                Duration.ofMillis(1), Duration.ofSeconds(1), 2).withCanaryInterval(Duration.ofMillis(1));
    }

    private JsonNode health() throws Exception {
        return Http.JSON.readTree(get("/healthz").body());
    }

    private JsonNode engine(String id) throws Exception {
        return health().path("engines").path(id);
    }

    private double weight(String engine) {
        return cp.current().route("gw", "chat").weights().getOrDefault(engine, 0.0);
    }

    private double metric(String name, String... labels) throws Exception {
        double sum = 0;
        for (var sample : dev.sextant.signal.PrometheusText.parse(get("/metrics").body()).samples(name)) {
            boolean match = true;
            for (int i = 0; i < labels.length; i += 2) {
                match &= labels[i + 1].equals(sample.labels().get(labels[i]));
            }
            if (match) {
                sum += sample.value();
            }
        }
        return sum;
    }

    private static final String AUTH = "Bearer " + TOKEN;

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
        String report = "{\"gateway\":\"gw\",\"interval_seconds\":5,"
                + "\"engines\":{\"eu-1\":{\"requests\":100,\"server_errors\":100}}}";
        assertThat(postReport(report, null).statusCode()).isEqualTo(401);
        assertThat(postReport(report, "Bearer nope").statusCode()).isEqualTo(401);
        cp.tickNow();
        assertThat(engine("eu-1").path("condition").asText()).isEqualTo("healthy");
        assertThat(cp.current().version()).isEqualTo(1);
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
    void unchangedInputs_publishNothingNew_stepAfterStep() throws Exception {
        for (int i = 0; i < 5; i++) {
            cp.tickNow();
        }
        assertThat(cp.current().version()).isEqualTo(1);
        assertThat(metric("sextant_control_steps_total", "outcome", "kept")).as("steps that kept snapshot 1")
                .isGreaterThanOrEqualTo(5);
        assertThat(health().path("role").asText()).as("a control plane without etcd").isEqualTo("alone");
        JsonNode last = health().path("last_step");
        assertThat(last.path("published").asBoolean()).isFalse();
        assertThat(last.path("reason").asText()).contains("not above the threshold").contains("snapshot 1 stays");
        assertThat(last.path("threshold_ms").asDouble()).isGreaterThanOrEqualTo(0.5);
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
    void deletedTopology_isAWarningNamingTheFile_theTopologyStays_andItsReturnIsInfo() throws Exception {
        String yaml = Files.readString(file);
        var before = cp.topology();
        try (LogCapture log = new LogCapture()) {
            Files.delete(file);
            cp.tickNow();
            cp.tickNow(); // logged once, not every watch interval
            assertThat(log.lines()).filteredOn(l -> l.contains(file.toString()))
                    .containsExactly("WARNING " + ControlPlane.class.getName() + ": topology " + file
                            + ": cannot read: no such file; keeping the topology in force");
            assertThat(health().path("topology_error").asText()).isEqualTo(file + ": cannot read: no such file");
            assertThat(cp.topology()).isSameAs(before);

            Files.writeString(file, yaml);
            cp.tickNow();
            assertThat(health().path("status").asText()).isEqualTo("ok");
            assertThat(log.lines()).filteredOn(l -> l.contains(file.toString())).last().asString()
                    .startsWith("INFO ").endsWith("is readable again, unchanged");
        }
    }

    @Test
    void invalidTopology_thenValid_logsTheRecoveryAtInfo() throws Exception {
        try (LogCapture log = new LogCapture()) {
            Files.writeString(file, fleet.yaml(150).replace("capacity_rps: 100", "capacity_rps: -5"));
            cp.tickNow();
            Files.writeString(file, fleet.yaml(10));
            cp.tickNow();
            assertThat(log.lines()).filteredOn(l -> l.contains("is valid again")).singleElement().asString()
                    .startsWith("INFO ");
        }
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
        // the baselines kept between explanations give what solving them afresh gives; the estimates follow
        String policy = dev.sextant.policy.Explainer.toText(
                dev.sextant.policy.Explainer.explain(cp.solvedTopology(), cp.current(), "gw", "chat"));
        assertThat(text.body()).startsWith(policy);
        assertThat(text.body()).contains("With nearest routing instead").contains("With waterfall routing instead");
        assertThat(text.body().substring(policy.length())).startsWith("\nEstimates behind it")
                .contains("Last step: published snapshot 1: first snapshot.")
                .contains("\nEngines:\n  eu-1 HEALTHY (health 1.00): ").contains("  us-2 HEALTHY")
                .contains("Demand:\n  gw/chat-eu: 40.0 req/s — configured (no report yet)\n"
                        + "  gw/chat: 150.0 req/s — configured (no report yet)")
                .contains("Round trips:\n  gw → c-eu: 2.0 ms");

        JsonNode estimates = Http.JSON.readTree(json.body()).path("estimates");
        assertThat(Http.JSON.readTree(json.body()).path("class_id").asText()).as("the explanation as before")
                .isEqualTo("chat");
        assertThat(estimates.path("engines").size()).as("chat may use every engine").isEqualTo(4);
        JsonNode eu1 = estimates.path("engines").path("eu-1");
        assertThat(eu1.path("condition").asText()).isEqualTo("healthy");
        assertThat(eu1.path("health").asDouble()).isEqualTo(1.0);
        assertThat(eu1.path("capacity_rps").asDouble()).isEqualTo(100.0);
        assertThat(eu1.path("configured_rps").asDouble()).isEqualTo(100.0);
        assertThat(eu1.path("slowdown").asDouble()).isEqualTo(1.0);
        assertThat(eu1.has("batch_slots")).isTrue();
        assertThat(eu1.has("evidence")).isTrue();
        assertThat(eu1.path("condition_why").asText()).isNotBlank();
        assertThat(eu1.path("capacity_why").asText()).contains("capacity");
        assertThat(estimates.path("demand").path("chat").path("rps").asDouble()).isEqualTo(150.0);
        assertThat(estimates.path("demand").path("chat").path("why").asText()).startsWith("configured");
        assertThat(estimates.path("round_trips").path("c-us").path("ms").asDouble()).isEqualTo(10.0);
        assertThat(estimates.path("last_step").path("published").asBoolean()).isTrue();
        assertThat(estimates.path("last_step").path("version").asLong()).isEqualTo(1);
    }

    @Test
    void explain_ofARouteWithResidency_estimatesOnlyTheEnginesItMayUse() throws Exception {
        JsonNode estimates = Http.JSON.readTree(get("/v1/explain?gateway=gw&class=chat-eu", "authorization", AUTH)
                .body()).path("estimates");
        assertThat(estimates.path("engines").fieldNames()).toIterable().containsExactly("eu-1", "eu-2");
        String text = get("/v1/explain?gateway=gw&class=chat-eu&format=text", "authorization", AUTH).body();
        assertThat(text.substring(text.indexOf("Estimates behind it"))).contains("eu-1 HEALTHY")
                .doesNotContain("us-1 HEALTHY");
    }

    @Test
    void anEngineWhoseScrapesFail_andThatNothingElseSeesAnswering_goesOutOfService_andBackWhenItAnswers()
            throws Exception {
        cp.tickNow(); // every engine answered a scrape: the loop has seen them all
        assertThat(weight("us-1")).as("us-1 carries spill-over at 150 req/s").isPositive();
        int port = fleet.engines.get("us-1").port();
        fleet.engines.get("us-1").close();
        cp.tickNow(); // one miss
        assertThat(cp.current().version()).isEqualTo(1);
        assertThat(engine("us-1").path("missed_scrapes").asInt()).isEqualTo(1);
        assertThat(engine("us-1").path("condition").asText()).isEqualTo("healthy");
        cp.tickNow(); // two misses, no gateway nor canary saw it answer: down, and the loop steps at once
        assertThat(cp.current().version()).isEqualTo(2);
        for (Route r : cp.current().routes().get("gw").values()) {
            assertThat(r.weights().getOrDefault("us-1", 0.0)).isZero();
        }
        JsonNode us1 = engine("us-1");
        assertThat(us1.path("condition").asText()).isEqualTo("down");
        assertThat(us1.path("healthy").asBoolean()).isFalse();
        assertThat(us1.path("health").asDouble()).isZero();
        assertThat(us1.path("why").asText()).contains("scrapes missed");
        assertThat(us1.path("scrape_error").isNull()).isFalse();
        assertThat(engine("eu-1").path("healthy").asBoolean()).isTrue();
        assertThat(health().path("last_step").path("reason").asText()).isEqualTo("engine us-1 out of service");
        assertThat(metric("sextant_control_engine_condition", "engine", "us-1", "condition", "down")).isEqualTo(1);
        assertThat(metric("sextant_control_engine_condition", "engine", "us-1", "condition", "healthy")).isZero();
        assertThat(metric("sextant_control_engine_health", "engine", "us-1")).isZero();
        assertThat(metric("sextant_control_publications_total", "kind", "change")).isEqualTo(1);

        // the same engine back on its port: its next scrape answers
        fleet.engines.put("us-1", dev.sextant.server.engine.EngineEmulator.start(dev.sextant.server.engine.EngineConfig
                .defaults("us-1", "m").withLatency(64, 0.0, 1, 0.0).withDefaultMaxTokens(8).withPort(port)));
        cp.tickNow();
        assertThat(engine("us-1").path("condition").asText()).isEqualTo("healthy");
        assertThat(engine("us-1").path("missed_scrapes").asInt()).isZero();
        assertThat(cp.current().version()).isEqualTo(3);
        assertThat(weight("us-1")).isPositive();
        assertThat(health().path("last_step").path("reason").asText()).isEqualTo("engine us-1 back in service");
    }

    @Test
    void anEngineWhoseCoreStandsStill_whileItsMetricsAnswer_isStalled_andBackWhenItsCanariesAreAnswered()
            throws Exception {
        cp.tickNow();
        assertThat(weight("us-1")).isPositive();
        var us1 = fleet.engines.get("us-1");
        us1.setFaults(new Faults(0, 1, false, -1, Faults.Corruption.NONE, true));
        // requests it accepts and never works on: its batch and queue hold them, its counters stand still
        List<CompletableFuture<HttpResponse<String>>> held = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            held.add(Fleet.HTTP.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + us1.port()
                    + "/v1/completions")).header("content-type", "application/json").POST(HttpRequest.BodyPublishers
                    .ofString("{\"model\":\"m\",\"prompt\":\"held\",\"max_tokens\":4}")).build(),
                    HttpResponse.BodyHandlers.ofString()));
        }
        long start = System.nanoTime();
        assertThat(Fleet.await(() -> tick() && condition("us-1").equals("stalled"), Duration.ofSeconds(60))).isTrue();
        assertThat(System.nanoTime() - start).as("ten seconds of silence, not one scrape").isGreaterThan(9_000_000_000L);
        JsonNode stalled = engine("us-1");
        assertThat(stalled.path("healthy").asBoolean()).isFalse();
        assertThat(stalled.path("why").asText()).contains("showed no sign of work").contains("back when a canary");
        assertThat(metric("sextant_control_engine_condition", "engine", "us-1", "condition", "stalled")).isEqualTo(1);
        cp.tickNow();
        for (Route r : cp.current().routes().get("gw").values()) {
            assertThat(r.weights().getOrDefault("us-1", 0.0)).isZero();
        }
        assertThat(held).noneMatch(CompletableFuture::isDone);

        // its core moves again: what it held is answered, and its canaries bring it back
        us1.setFaults(Faults.NONE);
        for (var f : held) {
            assertThat(f.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        }
        assertThat(Fleet.await(() -> tick() && condition("us-1").equals("healthy"), Duration.ofSeconds(30))).isTrue();
        cp.tickNow();
        assertThat(weight("us-1")).isPositive();
    }

    /** A gateway's report that 60 of eu-1's last 100 attempts failed: enough to make it failing. */
    private static final String EU1_FAILING_REPORT = "{\"gateway\":\"gw\",\"interval_seconds\":5,"
            + "\"arrivals\":{\"chat\":750,\"chat-eu\":200},\"engines\":{\"eu-1\":{\"requests\":100,\"successes\":40,"
            + "\"server_errors\":60,\"errors\":60,\"ttft_ms\":30,\"ttft_count\":40}}}";

    @Test
    void reportedErrors_makeAnEngineFailing_andCanariesThatSucceed_liftIt() throws Exception {
        cp.tickNow();
        var eu1 = fleet.engines.get("eu-1");
        eu1.setFaults(new dev.sextant.server.engine.Faults(1.0, 1, false, -1)); // every generation a 500
        assertThat(postReport(EU1_FAILING_REPORT, AUTH).statusCode()).isEqualTo(204);
        cp.tickNow();
        JsonNode failing = engine("eu-1");
        assertThat(failing.path("condition").asText()).isEqualTo("failing");
        // 100 attempts reported; outcomes fade with time (half-life 10 s), so a tick slowed by a busy machine counts
        // a few less (90 after 1.5 s), but the failed share stays what was reported
        assertThat(failing.path("why").asText()).containsPattern("60% of (9\\d|100) recent attempts failed")
                .contains("canaries in a row succeed");
        assertThat(cp.current().version()).isEqualTo(2);
        assertThat(weight("eu-1")).isZero();
        assertThat(cp.current().route("gw", "chat-eu").weights().getOrDefault("eu-1", 0.0)).isZero();
        assertThat(engine("eu-2").path("condition").asText()).isEqualTo("healthy");

        // its canaries fail while it fails: it stays out
        assertThat(Fleet.await(() -> tick() && canaries("failed") >= 2, Duration.ofSeconds(30))).isTrue();
        cp.tickNow();
        assertThat(engine("eu-1").path("condition").asText()).isEqualTo("failing");
        assertThat(weight("eu-1")).isZero();

        // mended: its canaries succeed, and two in a row lift it
        eu1.setFaults(dev.sextant.server.engine.Faults.NONE);
        assertThat(Fleet.await(() -> tick() && condition("eu-1").equals("healthy"), Duration.ofSeconds(30))).isTrue();
        assertThat(canaries("ok")).isGreaterThanOrEqualTo(2);
        cp.tickNow(); // the last canary may have come back after this tick's step: the change is urgent for the next
        assertThat(weight("eu-1")).isPositive();
        // published again for it; on a busy machine its first canaries after the mend may decode slowly enough to be
        // judged slow first (one more publication), so not exactly one
        assertThat(cp.current().version()).isGreaterThanOrEqualTo(3);
    }

    @Test
    void anEngineBehindAnApiKey_isLiftedByCanariesCarryingTheEngineToken_readAgainWhenItsFileChanges() throws Exception {
        // eu-1 again on its port, as a vLLM started with --api-key engine-key; the control plane's token file is wrong
        int port = fleet.engines.get("eu-1").port();
        fleet.engines.get("eu-1").close();
        fleet.engines.put("eu-1", dev.sextant.server.engine.EngineEmulator.start(dev.sextant.server.engine.EngineConfig
                        .defaults("eu-1", "m").withLatency(64, 0.0, 1, 0.0).withDefaultMaxTokens(8).withPort(port),
                null, null, dev.sextant.server.auth.BearerToken.of("engine-key"),
                dev.sextant.server.internal.ListenerLimits.engine()));
        Path tokenFile = Files.writeString(dir.resolve("engine-token"), "old-key\n");
        cp.close();
        cp = ControlPlane.start(config().withEngineToken(dev.sextant.server.auth.BearerToken.file(tokenFile)));
        cp.tickNow();
        assertThat(postReport(EU1_FAILING_REPORT, AUTH).statusCode()).isEqualTo(204);
        cp.tickNow();
        assertThat(condition("eu-1")).isEqualTo("failing");

        // its /metrics answers without a key, its canaries with the wrong one are refused: it stays out
        assertThat(Fleet.await(() -> tick() && canaries("failed") >= 2, Duration.ofSeconds(30))).isTrue();
        assertThat(canaries("ok")).isZero();
        assertThat(condition("eu-1")).isEqualTo("failing");

        // the token file rotated to the engine's key, no restart: its canaries succeed and lift it
        Files.writeString(tokenFile, "engine-key\n");
        assertThat(Fleet.await(() -> tick() && condition("eu-1").equals("healthy"), Duration.ofSeconds(30))).isTrue();
        assertThat(canaries("ok")).isGreaterThanOrEqualTo(2);
    }

    /** One tick (for a wait on a condition that ticks until it holds). */
    private boolean tick() {
        cp.tickNow();
        return true;
    }

    private double canaries(String outcome) {
        try {
            return metric("sextant_control_canaries_total", "outcome", outcome);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private String condition(String id) {
        try {
            return engine(id).path("condition").asText();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void aGatewayReportsDemand_drivesTheSolve_andSeveralGatewaysOfAClusterAddUp() throws Exception {
        Files.writeString(file, fleet.yaml(10));
        cp.tickNow();
        long before = cp.current().version();
        assertThat(cp.current().route("gw", "chat").demandRps()).as("the topology's, before any report").isEqualTo(10);
        for (String instance : new String[] {"a1b2c3d4e5f6", "0f9e8d7c6b5a"}) {
            assertThat(postReport("{\"gateway\":\"gw\",\"instance\":\"" + instance + "\",\"interval_seconds\":5,"
                    + "\"arrivals\":{\"chat\":500,\"chat-eu\":100}}", AUTH).statusCode()).isEqualTo(204);
        }
        cp.tickNow();
        // twenty times the demand planned for: more than the held plan's eu engines carry, so part of it goes to us-east
        assertThat(cp.current().version()).isEqualTo(before + 1);
        assertThat(cp.current().route("gw", "chat").demandRps()).as("2 × 500 requests in 5 s").isEqualTo(200.0);
        assertThat(cp.current().route("gw", "chat-eu").demandRps()).isEqualTo(40.0);
        assertThat(cp.current().route("gw", "chat").weights().keySet()).contains("us-1");
        assertThat(health().path("last_step").path("reason").asText()).startsWith("the held routing no longer fits");
        assertThat(metric("sextant_control_reports_total")).isEqualTo(2);
        String text = get("/v1/explain?gateway=gw&class=chat&format=text", "authorization", AUTH).body();
        assertThat(text).contains("gw/chat: 200.0 req/s").contains("from 2 gateway processes");
    }

    /**
     * Reports below the topology's demand that cannot yet tell a ramp from a level leave the plan at the topology's
     * demand, and the explanation says what they show.
     */
    @Test
    void firstReportsBelowTheTopologysDemand_leaveItAsTheFloor_andExplainSaysSo() throws Exception {
        cp.tickNow();
        for (String instance : new String[] {"a1b2c3d4e5f6", "0f9e8d7c6b5a"}) {
            assertThat(postReport("{\"gateway\":\"gw\",\"instance\":\"" + instance + "\",\"interval_seconds\":5,"
                    + "\"arrivals\":{\"chat\":100,\"chat-eu\":100}}", AUTH).statusCode()).isEqualTo(204);
        }
        cp.tickNow();

        assertThat(cp.current().version()).isEqualTo(1);
        assertThat(cp.current().route("gw", "chat").demandRps()).isEqualTo(150.0);
        JsonNode demand = Http.JSON.readTree(get("/v1/explain?gateway=gw&class=chat", "authorization", AUTH).body())
                .path("estimates").path("demand").path("chat");
        assertThat(demand.path("rps").asDouble()).isEqualTo(150.0);
        assertThat(demand.path("reported_rps").asDouble()).isEqualTo(40.0);
        assertThat(demand.path("why").asText()).startsWith("configured, until the reports settle")
                .contains("from 2 gateway processes so far show 40.0");
    }

    @Test
    void aBadReport_is400NamingTheField_andNothingOfItCounts() throws Exception {
        cp.tickNow();
        HttpResponse<String> r = postReport("{\"gateway\":\"gw\",\"interval_seconds\":5,"
                + "\"arrivals\":{\"chat\":99999},\"engines\":{\"eu-1\":{\"requests\":-5}}}", AUTH);
        assertThat(r.statusCode()).isEqualTo(400);
        assertThat(Http.JSON.readTree(r.body()).path("error").path("message").asText())
                .isEqualTo("engines.eu-1.requests: -5 (expected: a whole number >= 0)");
        cp.tickNow();
        assertThat(cp.current().version()).isEqualTo(1);
        assertThat(cp.current().route("gw", "chat").demandRps()).isEqualTo(150);
        assertThat(metric("sextant_control_reports_total")).isZero();
    }

    @Test
    void aGatewayHoldingAHigherVersion_getsTheSameContentAboveIt_andTheLoopGoesOnFromThere() throws Exception {
        dev.sextant.snapshot.Snapshot first = cp.current();
        CompletableFuture<HttpResponse<String>> poll = Fleet.HTTP.sendAsync(
                HttpRequest.newBuilder(URI.create(cp.uri() + "/v1/snapshot?gateway=gw&wait=25s"))
                        .header("authorization", AUTH).header("if-none-match", "\"7-0123456789abcdef\"").GET().build(),
                HttpResponse.BodyHandlers.ofString());
        HttpResponse<String> caughtUp = poll.get();
        assertThat(caughtUp.statusCode()).isEqualTo(200);
        assertThat(Http.JSON.readTree(caughtUp.body()).path("version").asLong()).isEqualTo(8);
        assertThat(cp.current().version()).isEqualTo(8);
        assertThat(cp.current().routes()).as("the same content").isEqualTo(first.routes());
        assertThat(cp.current().engines()).isEqualTo(first.engines());
        assertThat(metric("sextant_control_publications_total", "kind", "catch_up")).isEqualTo(1);

        Files.writeString(file, fleet.yaml(10));
        cp.tickNow();
        assertThat(cp.current().version()).as("the loop's next publication, above the adopted one").isEqualTo(9);
        assertThat(cp.current().routes()).isNotEqualTo(first.routes());
        assertThat(get("/v1/explain?gateway=gw&class=chat", "authorization", AUTH).statusCode()).isEqualTo(200);
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
        assertThat(body).contains("sextant_control_solves_total").contains("sextant_control_steps_total{outcome=\"published\"} 1.0")
                .contains("sextant_control_publications_total{kind=\"first\"} 1.0")
                .contains("sextant_control_engine_condition{condition=\"healthy\",engine=\"eu-1\"} 1.0")
                .contains("sextant_control_engine_condition{condition=\"down\",engine=\"eu-1\"} 0.0")
                .contains("sextant_control_engine_capacity_rps{engine=\"eu-1\"} 100.0")
                .contains("sextant_control_engine_slowdown{engine=\"eu-1\"} 1.0")
                .contains("sextant_control_canaries_total{outcome=\"ok\"}")
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
        HttpResponse<String> mars = postReport("{\"gateway\":\"mars\",\"interval_seconds\":5}", "Bearer " + TOKEN);
        assertThat(mars.statusCode()).isEqualTo(400);
        assertThat(mars.body()).contains("gateway: 'mars' (expected: a gateway cluster of the topology)");
        assertThat(postReport("{\"gateway\":\"gw\",\"interval_seconds\":5,\"demand_rps\":{\"chat\":-1}}",
                "Bearer " + TOKEN).statusCode()).isEqualTo(400);
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
}
