package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.internal.Http;
import dev.sextant.signal.MetricFamily;
import dev.sextant.signal.MetricType;
import dev.sextant.signal.PrometheusText;
import dev.sextant.signal.Sample;
import dev.sextant.signal.Scrape;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The gateway in front of emulated engines on loopback, with a fixed snapshot. */
class GatewayProxyTest {
    @RegisterExtension
    static final GatewayFixture GW = GatewayFixture.of(20, 2);



    @Test
    void nonStreaming_passesTheEngineAnswerThrough_withSextantHeaders() throws Exception {
        HttpResponse<String> r = Fleet.post(GW.port(), "/v1/chat/completions", Fleet.chat("k1", false, 4));
        assertThat(r.statusCode()).isEqualTo(200);
        JsonNode body = Http.JSON.readTree(r.body());
        assertThat(body.path("object").asText()).isEqualTo("chat.completion");
        assertThat(body.path("usage").path("completion_tokens").asInt()).isEqualTo(4);
        assertThat(r.headers().firstValue("x-sextant-engine")).isPresent()
                .hasValueSatisfying(e -> assertThat(GW.fleet().engines).containsKey(e));
        assertThat(r.headers().firstValue("x-sextant-engine")).isEqualTo(r.headers().firstValue("x-engine-id"));
        assertThat(r.headers().firstValue("x-sextant-snapshot-version")).hasValue("1");
        assertThat(r.headers().firstValue("x-sextant-attempts")).hasValue("1");
    }

    @Test
    void streaming_clientSeesFirstChunkBeforeTheEngineProducedTheLast() throws Exception {
        int tokens = 40; // 40 steps of 20 ms: the engine needs ~0.8 s for the whole answer
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + GW.port() + "/v1/chat/completions"))
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(Fleet.chat("stream-1", true, tokens))).build();
        HttpResponse<Stream<String>> r = Fleet.send(req, HttpResponse.BodyHandlers.ofLines());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("content-type")).hasValueSatisfying(ct -> assertThat(ct).startsWith("text/event-stream"));
        String engine = r.headers().firstValue("x-sextant-engine").orElseThrow();
        long before = -1;
        int dataLines = 0;
        String lastLine = null;
        Iterator<String> lines = r.body().iterator();
        while (lines.hasNext()) {
            String line = lines.next();
            if (line.startsWith("data: ")) {
                dataLines++;
                lastLine = line;
                if (dataLines == 2) { // the first chunk after the role chunk carries the first token
                    before = GW.fleet().engines.get(engine).generatedTokens();
                }
            }
        }
        assertThat(before).isGreaterThanOrEqualTo(0);
        assertThat(before).as("tokens the engine had generated when the client got the first token chunk")
                .isLessThan(tokens);
        assertThat(lastLine).isEqualTo("data: [DONE]");
        assertThat(dataLines).isGreaterThanOrEqualTo(tokens + 2);
    }

    @Test
    void affinity_hundredTurnsWithOnePromptCacheKey_landOnOneEngine() throws Exception {
        Set<String> engines = new HashSet<>();
        for (int i = 0; i < 100; i++) {
            HttpResponse<String> r = Fleet.post(GW.port(), "/v1/chat/completions", Fleet.chat("conversation-42", false, 1));
            assertThat(r.statusCode()).isEqualTo(200);
            engines.add(r.headers().firstValue("x-sextant-engine").orElseThrow());
        }
        assertThat(engines).hasSize(1);
        Set<String> spread = new HashSet<>();
        for (int i = 0; i < 40; i++) {
            spread.add(Fleet.post(GW.port(), "/v1/chat/completions", Fleet.chat("c-" + i, false, 1))
                    .headers().firstValue("x-sextant-engine").orElseThrow());
        }
        assertThat(spread).as("different keys follow the weights over several engines").hasSizeGreaterThan(1);
    }

    @Test
    void residency_restrictedRequestsAreServedOnlyInTheirRegion() throws Exception {
        for (int i = 0; i < 40; i++) {
            HttpResponse<String> r = Fleet.post(GW.port(), "/v1/chat/completions", Fleet.chat("eu-" + i, false, 1),
                    "x-sextant-residency", "eu-west");
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("x-sextant-engine").orElseThrow()).startsWith("eu-");
        }
    }

    @Test
    void models_listsTheRoutedModels() throws Exception {
        HttpResponse<String> r = Fleet.get(GW.port(), "/v1/models");
        assertThat(r.statusCode()).isEqualTo(200);
        JsonNode body = Http.JSON.readTree(r.body());
        assertThat(body.path("data").get(0).path("id").asText()).isEqualTo("m");
        assertThat(body.path("data")).hasSize(1);
    }

    @Test
    void embeddings_areProxied() throws Exception {
        HttpResponse<String> r = Fleet.post(GW.port(), "/v1/embeddings", "{\"model\":\"m\",\"input\":[\"a\",\"b\"]}");
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(Http.JSON.readTree(r.body()).path("data")).hasSize(2);
    }

    @Test
    void overhead_isRecordedOncePerAnsweredRequest_inBucketsBelowAMillisecond() throws Exception {
        double before = overheadCount();
        for (int i = 0; i < 3; i++) {
            assertThat(Fleet.post(GW.port(), "/v1/chat/completions", Fleet.chat("overhead-" + i, i == 1, 2))
                    .statusCode()).isEqualTo(200);
        }
        // recorded once the answer's last bytes are written, which can be a moment after the client has them
        assertThat(Fleet.await(() -> overheadCount() >= before + 3, Duration.ofSeconds(10))).isTrue();
        String body = Fleet.get(GW.port(), "/metrics").body();
        assertThat(body).contains("sextant_gateway_overhead_seconds_bucket{le=\"5.0E-5\"}")
                .contains("sextant_gateway_overhead_seconds_bucket{le=\"0.001\"}");
        // a refused request (unknown model) was not proxied: no overhead recorded for it
        double proxied = overheadCount();
        assertThat(Fleet.post(GW.port(), "/v1/chat/completions", "{\"model\":\"nope\",\"prompt\":\"x\"}").statusCode())
                .isEqualTo(404);
        assertThat(overheadCount()).isEqualTo(proxied);
    }

    private static double overheadCount() {
        try {
            List<Sample> count = PrometheusText.parse(Fleet.get(GW.port(), "/metrics").body())
                    .samples("sextant_gateway_overhead_seconds_count");
            return count.isEmpty() ? 0 : count.get(0).value();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void metricsAndHealth_reportRequestsAndSnapshot() throws Exception {
        Fleet.post(GW.port(), "/v1/chat/completions", Fleet.chat("metrics", false, 1));
        HttpResponse<String> m = Fleet.get(GW.port(), "/metrics");
        assertThat(m.statusCode()).isEqualTo(200);
        assertThat(m.body()).contains("sextant_gateway_requests_total{class=\"chat\"")
                .contains("sextant_gateway_ttft_seconds_bucket").contains("sextant_gateway_snapshot_version 1.0");
        assertThat(m.body().lines().filter(l -> l.startsWith("# HELP ")))
                .as("every metric says what it counts (promtool check metrics: \"no help text\")")
                .allSatisfy(l -> assertThat(l.split(" ", 4)).hasSize(4).satisfies(p -> assertThat(p[3]).isNotBlank()));
        HttpResponse<String> h = Fleet.get(GW.port(), "/healthz");
        JsonNode health = Http.JSON.readTree(h.body());
        assertThat(health.path("status").asText()).isEqualTo("ok");
        assertThat(health.path("fallback").asBoolean()).isFalse();
        assertThat(health.path("snapshot_version").asLong()).isEqualTo(1);
    }

    @Test
    void metrics_countEachEventLoopsCpuTime() throws Exception {
        assertThat(Fleet.post(GW.port(), "/v1/chat/completions", Fleet.chat("loops", false, 1)).statusCode())
                .isEqualTo(200);
        Scrape scrape = PrometheusText.parse(Fleet.get(GW.port(), "/metrics").body());
        MetricFamily family = scrape.family("sextant_gateway_event_loop_cpu_seconds_total");
        assertThat(family).as("the loops' CPU time in /metrics").isNotNull();
        assertThat(family.type()).isEqualTo(MetricType.COUNTER);
        java.util.Map<String, Double> loops = new java.util.TreeMap<>();
        for (Sample s : scrape.samples("sextant_gateway_event_loop_cpu_seconds_total")) {
            loops.put(s.label("loop"), s.value());
        }
        assertThat(loops).as("one counter per event loop (the gateway runs 2)").containsOnlyKeys("0", "1");
        assertThat(loops.values().stream().mapToDouble(Double::doubleValue).sum())
                .as("the loops have parsed, routed and proxied requests").isPositive();
    }

    @Test
    void metrics_includeTheProcesssOwn_underTheNamesJvmServicesExport() throws Exception {
        String body = Fleet.get(GW.port(), "/metrics").body();
        Scrape scrape = PrometheusText.parse(body);
        assertThat(scrape.problems()).as("the exposition parses whole").isEmpty();
        assertThat(firstValue(scrape, "jvm_compilation_time_ms_total"))
                .as("the JIT compiler's time so far: a gateway still compiling has a longer tail").isPositive();
        assertThat(firstValue(scrape, "process_files_open_files"))
                .as("descriptors open: at least the listening socket and the engine connections").isPositive();
        assertThat(firstValue(scrape, "process_files_max_files"))
                .isGreaterThan(firstValue(scrape, "process_files_open_files"));
        assertThat(firstValue(scrape, "jvm_threads_live_threads")).isPositive();
        assertThat(firstValue(scrape, "process_uptime_seconds")).isPositive();
        assertThat(body).contains("jvm_memory_used_bytes{area=\"heap\"").contains("# TYPE process_cpu_usage gauge")
                .contains("# TYPE jvm_classes_loaded_classes gauge");
    }

    @Test
    void aClosedGateway_noLongerRecordsTheCollectorsPauses() throws Exception {
        Gateway closed = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false),
                SnapshotSource.fixed(GW.fleet().snapshot()), 1);
        closed.close();
        // A collection that ended before close() may still be on its way to the closed gateway's listeners: the JVM
        // delivers its notifications from one thread, in order, so once the open gateway has seen a collection that
        // began after close(), every earlier notification has been delivered too.
        double openFirst = gcPauses(GW.gateway());
        System.gc();
        assertThat(Fleet.await(() -> gcPauses(GW.gateway()) > openFirst, Duration.ofSeconds(10)))
                .as("an open gateway records the collection (the control for the assertion below)").isTrue();
        double closedBefore = gcPauses(closed);
        double openBefore = gcPauses(GW.gateway());
        System.gc(); // a full collection, announced to the JVM's notification listeners
        assertThat(Fleet.await(() -> gcPauses(GW.gateway()) > openBefore, Duration.ofSeconds(10)))
                .as("an open gateway records the second collection too").isTrue();
        // the JVM tells its listeners one after another: give the closed gateway's, were it still there, its turn too
        assertThat(Fleet.await(() -> gcPauses(closed) > closedBefore, Duration.ofMillis(500)))
                .as("the closed gateway's listeners are gone").isFalse();
    }

    /** The collections recorded in {@code g}'s registry so far ({@code jvm.gc.pause}, every collector and cause). */
    private static double gcPauses(Gateway g) {
        return g.metrics.registry.find("jvm.gc.pause").timers().stream().mapToDouble(t -> t.count()).sum();
    }

    /** The value of the first sample called {@code name}, with or without labels (fails when there is none). */
    private static double firstValue(Scrape scrape, String name) {
        List<Sample> samples = scrape.samples(name);
        assertThat(samples).as(name + " in /metrics").isNotEmpty();
        return samples.get(0).value();
    }

    @Test
    void unknownModel_is404InOpenAiShape() throws Exception {
        HttpResponse<String> r = Fleet.post(GW.port(), "/v1/chat/completions",
                "{\"model\":\"nope\",\"messages\":[]}");
        assertThat(r.statusCode()).isEqualTo(404);
        assertThat(Http.JSON.readTree(r.body()).path("error").path("code").asText()).isEqualTo("model_not_found");
    }

    @Test
    void shedClass_gets429WithRetryAfter_andTheRestIsServed() throws Exception {
        try (StaticSource overloaded = SnapshotSource.fixed(GW.fleet().snapshot(1000));
             Gateway shedding = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false), overloaded, 1)) {
            double shed = overloaded.held().route("gw", "chat").shedFraction();
            assertThat(shed).isGreaterThan(0.3);
            int refused = 0;
            int served = 0;
            for (int i = 0; i < 40; i++) {
                HttpResponse<String> r = Fleet.post(shedding.port(), "/v1/chat/completions", Fleet.chat("s" + i, false, 1));
                if (r.statusCode() == 429) {
                    refused++;
                    assertThat(r.headers().firstValue("retry-after")).hasValue("1");
                    JsonNode error = Http.JSON.readTree(r.body()).path("error");
                    assertThat(error.path("code").asText()).isEqualTo("overloaded");
                    assertThat(error.path("type").asText()).isEqualTo("rate_limit_error");
                } else {
                    assertThat(r.statusCode()).isEqualTo(200);
                    served++;
                }
            }
            assertThat(refused).isPositive();
            assertThat(served).isPositive();
            assertThat(Fleet.get(shedding.port(), "/metrics").body()).contains("sextant_gateway_sheds_total{class=\"chat\"}");
            // the demand reported to the control plane counts the shed requests too: otherwise shedding would lower
            // the observed demand, and the next solve would shed less (an oscillation)
            JsonNode report = Http.JSON.readTree(shedding.reporter.drain());
            assertThat(report.path("demand_rps").path("chat").asDouble() * report.path("interval_seconds").asDouble())
                    .isCloseTo(40.0, org.assertj.core.data.Offset.offset(1e-6));
            assertThat(report.path("arrivals").path("chat").asLong()).as("the same arrivals, as a count").isEqualTo(40);
            long attempts = 0;
            for (JsonNode e : report.path("engines")) {
                attempts += e.path("requests").asLong();
            }
            assertThat(attempts).as("the shed ones reached no engine").isEqualTo(served);
        }
    }

    @Test
    void demandIsReportedAsRequestsArrive_notAsTheyAreAnswered() throws Exception {
        try (Fleet slow = new Fleet(250); // 8 tokens at 250 ms a step: each answer takes 2 s
             Gateway g = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false),
                     SnapshotSource.fixed(slow.snapshot()), 1)) {
            g.reporter.drain();
            java.util.List<java.util.concurrent.CompletableFuture<HttpResponse<String>>> answers = new java.util.ArrayList<>();
            for (int i = 0; i < 6; i++) {
                answers.add(Fleet.HTTP.sendAsync(java.net.http.HttpRequest.newBuilder(
                                java.net.URI.create("http://127.0.0.1:" + g.port() + "/v1/chat/completions"))
                        .header("content-type", "application/json")
                        .POST(java.net.http.HttpRequest.BodyPublishers.ofString(Fleet.chat("d" + i, false, 8))).build(),
                        HttpResponse.BodyHandlers.ofString()));
            }
            assertThat(Fleet.await(() -> g.inFlight() == 6, Duration.ofSeconds(10))).as("6 in flight").isTrue();
            // none answered yet, and the control plane must already hear of all six: a surge is seen as it arrives
            JsonNode report = Http.JSON.readTree(g.reporter.drain());
            assertThat(report.path("demand_rps").path("chat").asDouble() * report.path("interval_seconds").asDouble())
                    .isCloseTo(6.0, org.assertj.core.data.Offset.offset(1e-6));
            for (var a : answers) {
                assertThat(a.get(30, java.util.concurrent.TimeUnit.SECONDS).statusCode()).isEqualTo(200);
            }
            JsonNode after = Http.JSON.readTree(g.reporter.drain());
            assertThat(after.path("demand_rps").path("chat").asDouble()).as("not counted again when answered").isZero();
        }
    }

    @Test
    void sheddingIgnoresTheClientsRequestId_soOneIdIsNotAlwaysOrNeverShed() throws Exception {
        try (StaticSource overloaded = SnapshotSource.fixed(GW.fleet().snapshot(1000));
             Gateway shedding = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false), overloaded, 1)) {
            assertThat(overloaded.held().route("gw", "chat").shedFraction()).isBetween(0.3, 0.9);
            int refused = 0;
            int served = 0;
            for (int i = 0; i < 40; i++) {
                // a client that retries, or tags every request, with one id
                HttpResponse<String> r = Fleet.post(shedding.port(), "/v1/chat/completions", Fleet.chat("s" + i, false, 1),
                        "x-request-id", "the-same-id");
                if (r.statusCode() == 429) {
                    refused++;
                } else {
                    assertThat(r.statusCode()).isEqualTo(200);
                    served++;
                }
                assertThat(r.headers().firstValue("x-request-id")).hasValue("the-same-id");
            }
            assertThat(refused).isPositive();
            assertThat(served).isPositive();
        }
    }

    @Test
    void aClientRequestIdTooLongOrNotPrintableAscii_isReplacedByTheGatewaysOwn() throws Exception {
        assertThat(FrontHandler.usableRequestId("req 42")).isTrue();
        assertThat(FrontHandler.usableRequestId("req\t42")).isFalse();
        assertThat(FrontHandler.usableRequestId("req-\u00e9")).isFalse();
        assertThat(FrontHandler.usableRequestId("   ")).isFalse();
        for (String id : new String[] {"x".repeat(FrontHandler.MAX_REQUEST_ID + 1), "x".repeat(12_000)}) {
            HttpResponse<String> r = Fleet.post(GW.port(), "/v1/chat/completions", Fleet.chat("rid", false, 1),
                    "x-request-id", id);
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("x-request-id").orElseThrow()).startsWith("sx-");
        }
        String fine = "req_" + "a".repeat(FrontHandler.MAX_REQUEST_ID - 4);
        HttpResponse<String> r = Fleet.post(GW.port(), "/v1/chat/completions", Fleet.chat("rid", false, 1),
                "x-request-id", fine);
        assertThat(r.headers().firstValue("x-request-id")).hasValue(fine);
    }

    @Test
    void pipelinedRequests_areAnsweredInOrderOnOneConnection() throws Exception {
        String body = Fleet.chat("pipe", false, 2);
        String one = "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                + "x-request-id: first\r\ncontent-length: " + body.length() + "\r\n\r\n" + body;
        String two = one.replace("x-request-id: first", "x-request-id: second") ;
        String three = "GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
        try (java.net.Socket s = new java.net.Socket("127.0.0.1", GW.port())) {
            s.setSoTimeout(20_000);
            s.getOutputStream().write((one + two + three).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            String all = new String(s.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            assertThat(all.split("HTTP/1.1 200 OK", -1)).hasSize(4);
            assertThat(all.indexOf("x-request-id: first")).isLessThan(all.indexOf("x-request-id: second"));
            assertThat(all.indexOf("x-request-id: second")).isLessThan(all.indexOf("\"status\":\"ok\""));
        }
    }

    static Duration seconds(int s) {
        return Duration.ofSeconds(s);
    }
}
