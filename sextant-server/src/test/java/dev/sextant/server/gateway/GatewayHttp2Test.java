package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.internal.Http;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * HTTP/2 clients on the gateway's plain listener: prior knowledge (a Netty client) and {@code Upgrade: h2c} (the
 * JDK's client), each stream served as an HTTP/1.1 request is, many at once on one connection; the engines behind
 * stay HTTP/1.1.
 */
class GatewayHttp2Test {
    static final int MAX_BODY = 8 * 1024;
    @RegisterExtension
    static final GatewayFixture GW = GatewayFixture.of(20, 2, c -> c.withMaxBodyBytes(MAX_BODY)).watchingLeaks();



    @Test
    void accessLog_namesTheClientsProtocol_h2ForAStream_http11ForAConnection() throws Exception {
        java.util.logging.Logger access = java.util.logging.Logger.getLogger("dev.sextant.gateway.access");
        List<String> lines = java.util.Collections.synchronizedList(new ArrayList<>());
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                lines.add(r.getMessage());
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        access.addHandler(capture);
        try (Gateway logged = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(true),
                SnapshotSource.fixed(GW.fleet().snapshot()), 1)) {
            try (H2Client c = new H2Client(logged.port())) {
                assertThat(c.post("/v1/chat/completions", Fleet.chat("log-h2", false, 2)).status()).isEqualTo(200);
            }
            HttpResponse<String> r = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build()
                    .send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + logged.port() + "/v1/chat/completions"))
                            .timeout(Duration.ofSeconds(20)).header("content-type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString(Fleet.chat("log-h1", false, 2))).build(),
                            HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(Fleet.await(() -> lines.size() >= 2, Duration.ofSeconds(10))).isTrue();
        } finally {
            access.removeHandler(capture);
        }
        assertThat(lines).hasSize(2);
        assertThat(lines.get(0)).startsWith("gw POST /v1/chat/completions 200 proto=h2 class=");
        assertThat(lines.get(1)).startsWith("gw POST /v1/chat/completions 200 proto=http/1.1 class=");
    }

    @Test
    void priorKnowledge_nonStreaming_passesTheEngineAnswerThrough_withoutConnectionHeaders() throws Exception {
        try (H2Client c = new H2Client(GW.port())) {
            H2Client.Stream s = c.post("/v1/chat/completions", Fleet.chat("h2-1", false, 4));
            assertThat(s.status()).isEqualTo(200);
            JsonNode body = Http.JSON.readTree(s.body());
            assertThat(body.path("object").asText()).isEqualTo("chat.completion");
            assertThat(body.path("usage").path("completion_tokens").asInt()).isEqualTo(4);
            assertThat(s.header("x-sextant-engine")).isIn(GW.fleet().engines.keySet().toArray());
            assertThat(s.header("x-sextant-attempts")).isEqualTo("1");
            for (String hopByHop : List.of("connection", "keep-alive", "transfer-encoding", "upgrade")) {
                assertThat(s.header(hopByHop)).as(hopByHop).isNull();
            }
        }
    }

    @Test
    void priorKnowledge_streaming_firstChunkArrivesBeforeTheEngineFinished() throws Exception {
        int tokens = 40; // 40 steps of 20 ms
        try (H2Client c = new H2Client(GW.port())) {
            java.util.Map<String, Long> before = new java.util.HashMap<>();
            GW.fleet().engines.forEach((id, e) -> before.put(id, e.generatedTokens()));
            H2Client.Stream s = c.post("/v1/chat/completions", Fleet.chat("h2-stream", true, tokens));
            assertThat(s.status()).isEqualTo(200);
            assertThat(s.header("content-type")).startsWith("text/event-stream");
            String engine = s.header("x-sextant-engine");
            assertThat(s.firstData.get(20, TimeUnit.SECONDS)).startsWith("data: ");
            long generated = GW.fleet().engines.get(engine).generatedTokens() - before.get(engine);
            assertThat(generated).as("tokens the engine had generated when the first chunk arrived").isLessThan(tokens);
            String body = s.body();
            assertThat(body.strip()).endsWith("data: [DONE]");
            assertThat(body.split("\n\n")).hasSizeGreaterThanOrEqualTo(tokens + 2);
        }
    }

    @Test
    void hundredConcurrentStreamsOnOneConnection_eachGetsItsOwnAnswer() throws Exception {
        try (H2Client c = new H2Client(GW.port())) {
            List<H2Client.Stream> streams = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                streams.add(c.post("/v1/chat/completions", Fleet.chat("many-" + i, i % 2 == 0, 1 + i % 7),
                        "x-request-id", "req-" + i));
            }
            Set<String> ids = new HashSet<>();
            for (int i = 0; i < 100; i++) {
                H2Client.Stream s = streams.get(i);
                assertThat(s.status()).as("stream %d", i).isEqualTo(200);
                assertThat(s.header("x-request-id")).isEqualTo("req-" + i);
                ids.add(s.header("x-request-id"));
                String body = s.body();
                if (i % 2 == 0) {
                    assertThat(body.strip()).endsWith("data: [DONE]");
                    assertThat(body.split("\n\n")).as("events of stream %d", i).hasSizeGreaterThanOrEqualTo(1 + i % 7 + 2);
                } else {
                    assertThat(Http.JSON.readTree(body).path("usage").path("completion_tokens").asInt())
                            .isEqualTo(1 + i % 7);
                }
            }
            assertThat(ids).hasSize(100);
            H2Client.Stream metrics = c.get("/metrics");
            assertThat(metrics.status()).isEqualTo(200);
            double connections = metrics.body().lines().filter(l -> l.startsWith("sextant_gateway_http2_connections "))
                    .mapToDouble(l -> Double.parseDouble(l.substring(l.indexOf(' ') + 1))).findFirst().orElse(-1);
            assertThat(connections).as("open HTTP/2 connections, this one among them").isGreaterThanOrEqualTo(1);
        }
    }

    @Test
    void oversizedBody_is413OnThatStream_whileTheConnectionServesOthers() throws Exception {
        try (H2Client c = new H2Client(GW.port())) {
            H2Client.Stream open = c.post("/v1/chat/completions", Fleet.chat("beside-413", true, 20));
            String big = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"" + "x".repeat(MAX_BODY) + "\"}]}";
            H2Client.Stream tooBig = c.post("/v1/chat/completions", big);
            assertThat(tooBig.status()).isEqualTo(413);
            JsonNode error = Http.JSON.readTree(tooBig.body()).path("error");
            assertThat(error.path("code").asText()).isEqualTo("request_too_large");
            assertThat(error.path("type").asText()).isEqualTo("invalid_request_error");
            assertThat(open.status()).isEqualTo(200);
            assertThat(open.body().strip()).endsWith("data: [DONE]");
            H2Client.Stream after = c.post("/v1/chat/completions", Fleet.chat("after-413", false, 2));
            assertThat(after.status()).isEqualTo(200);
            assertThat(c.isOpen()).isTrue();
        }
    }

    @Test
    void malformedJson_is400InOpenAiShape_andTheConnectionServesOn() throws Exception {
        try (H2Client c = new H2Client(GW.port())) {
            H2Client.Stream bad = c.post("/v1/chat/completions", "{\"model\": \"m\", \"messages\": [");
            assertThat(bad.status()).isEqualTo(400);
            JsonNode error = Http.JSON.readTree(bad.body()).path("error");
            assertThat(error.path("type").asText()).isEqualTo("invalid_request_error");
            assertThat(error.path("code").asText()).isEqualTo("invalid_request");
            assertThat(error.has("param")).isTrue();
            H2Client.Stream ok = c.post("/v1/chat/completions", Fleet.chat("after-400", false, 1));
            assertThat(ok.status()).isEqualTo(200);
        }
    }

    @Test
    void unknownPath_is404_andModelsAreListed() throws Exception {
        try (H2Client c = new H2Client(GW.port())) {
            H2Client.Stream missing = c.get("/v2/nothing");
            assertThat(missing.status()).isEqualTo(404);
            assertThat(Http.JSON.readTree(missing.body()).path("error").path("code").asText()).isEqualTo("unknown_url");
            H2Client.Stream models = c.get("/v1/models");
            assertThat(models.status()).isEqualTo(200);
            assertThat(Http.JSON.readTree(models.body()).path("data").get(0).path("id").asText()).isEqualTo("m");
        }
    }

    @Test
    void clientResetsTheStream_theEngineRequestIsCancelled_andTheConnectionServesOn() throws Exception {
        try (H2Client c = new H2Client(GW.port())) {
            H2Client.Stream s = c.post("/v1/chat/completions", Fleet.chat("reset-me", true, 5000));
            String engine = s.header("x-sextant-engine");
            assertThat(s.firstData.get(20, TimeUnit.SECONDS)).startsWith("data: ");
            assertThat(Fleet.await(() -> GW.gateway().inFlight() == 1, Duration.ofSeconds(10))).isTrue();
            assertThat(GW.gateway().plane().inFlight(engine)).isEqualTo(1);
            long before = GW.fleet().engines.get(engine).generatedTokens();
            s.cancel();
            assertThat(Fleet.await(() -> GW.gateway().inFlight() == 0 && GW.gateway().plane().inFlight(engine) == 0, Duration.ofSeconds(15)))
                    .as("the 5000-token stream (100 s) was cancelled").isTrue();
            assertThat(GW.fleet().engines.get(engine).generatedTokens() - before).isLessThan(5000);
            H2Client.Stream next = c.post("/v1/chat/completions", Fleet.chat("after-reset", false, 2));
            assertThat(next.status()).isEqualTo(200);
            assertThat(Http.JSON.readTree(next.body()).path("usage").path("completion_tokens").asInt()).isEqualTo(2);
        }
    }

    @Test
    void upgradeH2c_fromTheJdkClient_servesStreamsOverHttp2() throws Exception {
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2)
                .connectTimeout(Duration.ofSeconds(5)).build();
        URI base = URI.create("http://127.0.0.1:" + GW.port());
        HttpResponse<String> models = client.send(HttpRequest.newBuilder(URI.create(base + "/v1/models"))
                .timeout(Duration.ofSeconds(20)).GET().build(), HttpResponse.BodyHandlers.ofString());
        assertThat(models.statusCode()).isEqualTo(200);
        assertThat(models.version()).isEqualTo(HttpClient.Version.HTTP_2);
        for (boolean stream : new boolean[] {false, true}) {
            HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create(base + "/v1/chat/completions"))
                    .timeout(Duration.ofSeconds(20)).header("content-type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(Fleet.chat("upgraded", stream, 3))).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.version()).isEqualTo(HttpClient.Version.HTTP_2);
            assertThat(r.body()).contains(stream ? "data: [DONE]" : "\"completion_tokens\":3");
        }
    }

    @Test
    void http11Clients_areServedAsBefore_besideHttp2() throws Exception {
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5)).build();
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + GW.port() + "/v1/chat/completions"))
                .timeout(Duration.ofSeconds(20)).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(Fleet.chat("h1", true, 3))).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.version()).isEqualTo(HttpClient.Version.HTTP_1_1);
        assertThat(r.headers().firstValue("transfer-encoding")).hasValue("chunked");
        assertThat(r.body()).contains("data: [DONE]");
    }
}
