package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.config.SnapshotJson;
import dev.sextant.request.DataPlaneOptions;
import dev.sextant.request.Ejection;
import dev.sextant.server.engine.Faults;
import dev.sextant.server.internal.Http;
import dev.sextant.snapshot.Snapshot;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Engines that die, hang or crash mid-stream behind a gateway; each test gets a fresh fleet. */
class GatewayFailureTest {
    Fleet fleet;
    Gateway gw;

    @BeforeEach
    void start() {
        fleet = new Fleet(10);
        GatewayConfig config = GatewayConfig.defaults("gw").withAccessLog(false)
                .withTimeouts(Duration.ofSeconds(1), Duration.ofMillis(500), Duration.ofMillis(500), Duration.ofSeconds(20))
                .withOptions(DataPlaneOptions.builder().consecutiveFailures(2).build());
        gw = Gateway.start(config, SnapshotSource.fixed(fleet.snapshot()), 2);
    }

    @AfterEach
    void stop() {
        gw.close();
        fleet.close();
    }

    private String engineOf(String key, String... headers) throws Exception {
        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat(key, false, 1), headers);
        assertThat(r.statusCode()).isEqualTo(200);
        return r.headers().firstValue("x-sextant-engine").orElseThrow();
    }

    @Test
    void engineKilledBeforeFirstByte_requestIsRetriedTransparentlyOnAnotherEngine() throws Exception {
        String first = engineOf("kill-me");
        fleet.engines.get(first).close();
        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("kill-me", false, 2));
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("x-sextant-engine").orElseThrow()).isNotEqualTo(first);
        assertThat(r.headers().firstValue("x-sextant-attempts")).hasValue("2");
        assertThat(Http.JSON.readTree(r.body()).path("choices").get(0).path("message").path("content").asText())
                .isNotEmpty();
    }

    @Test
    void anEngineEndpointThatIsNoUrl_failsItsAttempts_andEveryRequestIsAnsweredElsewhere() throws Exception {
        // only a hand-made snapshot can hold one (topologies are checked); it used to leave requests unanswered
        String eu1 = "http://127.0.0.1:" + fleet.engines.get("eu-1").port();
        Snapshot broken = SnapshotJson.read(SnapshotJson.write(fleet.snapshot())
                .replace("\"" + eu1 + "\"", "\"not a url\""), "broken.json");
        try (Gateway g = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false), SnapshotSource.fixed(broken),
                1)) {
            for (int i = 0; i < 30; i++) {
                HttpResponse<String> r = Fleet.post(g.port(), "/v1/chat/completions", Fleet.chat("k" + i, false, 1));
                assertThat(r.statusCode()).as("request %d", i).isEqualTo(200);
                assertThat(r.headers().firstValue("x-sextant-engine")).isNotEqualTo(java.util.Optional.of("eu-1"));
            }
        }
    }

    @Test
    void twoOfFourEnginesRefusing_areBothEjected_andEveryLaterRequestIsAnsweredAtItsFirstAttempt() throws Exception {
        // one cluster of four: two answer, two refuse every connection (their ports closed). The cap ejects one of
        // four; the second goes past it, since half of the class's engines stay in rotation
        var up1 = Fleet.recordingEngine(ex -> { });
        var up2 = Fleet.recordingEngine(ex -> { });
        int[] dead = new int[2];
        for (int i = 0; i < 2; i++) {
            try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
                dead[i] = s.getLocalPort();
            }
        }
        Snapshot s = Fleet.standIns(up1.getAddress().getPort(), dead[0], up2.getAddress().getPort(), dead[1]);
        try (Gateway g = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false), SnapshotSource.fixed(s), 1)) {
            for (int i = 0; i < 60; i++) { // enough for five refused connections in a row at each dead engine
                HttpResponse<String> r = Fleet.post(g.port(), "/v1/chat/completions", Fleet.chat("k" + i, false, 1));
                assertThat(r.statusCode()).as("request %d", i).isEqualTo(200);
            }
            assertThat(g.plane().ejections()).extracting(Ejection::engineId).containsExactlyInAnyOrder("e2", "e4");
            for (int i = 0; i < 40; i++) {
                HttpResponse<String> r = Fleet.post(g.port(), "/v1/chat/completions", Fleet.chat("n" + i, false, 1));
                assertThat(r.statusCode()).isEqualTo(200);
                assertThat(r.headers().firstValue("x-sextant-engine").orElseThrow()).isIn("e1", "e3");
                assertThat(r.headers().firstValue("x-sextant-attempts")).as("request n%d", i).hasValue("1");
            }
        } finally {
            up1.stop(0);
            up2.stop(0);
        }
    }

    @Test
    void engineHangs_aStreamTimesOutOnItsFirstToken_andIsNotSentToAnotherEngine() throws Exception {
        String first = engineOf("hang");
        fleet.engines.get(first).setFaults(new Faults(0, 1, true, -1));
        long tokensBefore = fleet.engines.values().stream().mapToLong(e -> e.generatedTokens()).sum();
        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("hang", true, 2));
        assertThat(r.statusCode()).isEqualTo(504);
        assertThat(r.headers().firstValue("x-sextant-attempts")).as("the engine may be generating it").hasValue("1");
        assertThat(fleet.engines.values().stream().mapToLong(e -> e.generatedTokens()).sum())
                .as("no engine generated a token of it").isEqualTo(tokensBefore);
    }

    @Test
    void engineCrashesMidStream_clientGetsAnSseErrorEventAndACleanEnd_thenTheEngineIsEjected() throws Exception {
        String first = engineOf("crash");
        fleet.engines.get(first).setFaults(new Faults(0, 1, false, 3));
        List<String> data = streamData("crash", 20);
        assertThat(data).isNotEmpty();
        assertThat(data.get(data.size() - 1)).startsWith("data: {\"error\"").contains("mid-response");
        assertThat(data).doesNotContain("data: [DONE]");
        assertThat(data.stream().filter(l -> l.contains("chat.completion.chunk"))).isNotEmpty();

        streamData("crash", 20); // second consecutive failure: ejected (consecutive_failures = 2)
        assertThat(gw.plane().ejections()).extracting(Ejection::engineId).contains(first);
        HttpResponse<String> moved = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("crash", false, 2));
        assertThat(moved.statusCode()).isEqualTo(200);
        assertThat(moved.headers().firstValue("x-sextant-engine").orElseThrow()).isNotEqualTo(first);
        JsonNode health = Http.JSON.readTree(Fleet.get(gw.port(), "/healthz").body());
        assertThat(health.path("ejections").get(0).path("engine").asText()).isEqualTo(first);
    }

    @Test
    void engineCrashesMidStream_theClientConnectionStaysUsable_forItsNextRequest() throws Exception {
        // the cut stream's answer ends cleanly on a keep-alive connection, so a client puts that connection back in its
        // pool and may send its next request on it at once: closing it then loses that request (a POST is not resent)
        String first = engineOf("crash-reuse");
        fleet.engines.get(first).setFaults(new Faults(0, 1, false, 3));
        try (RawHttp c = new RawHttp(gw.port(), 10_000)) {
            RawHttp.Answer cut = c.send(RawHttp.chatRequest(Fleet.chat("crash-reuse", true, 20))).read();
            assertThat(cut.status()).isEqualTo(200);
            assertThat(cut.header("connection")).as("the answer announced keep-alive").isNotEqualToIgnoringCase("close");
            assertThat(cut.body()).contains("mid-response").doesNotContain("data: [DONE]");

            RawHttp.Answer next = c.send(RawHttp.chatRequest(Fleet.chat("crash-reuse", false, 1))).read();
            assertThat(next).as("the next request on the same connection is answered").isNotNull();
            assertThat(next.status()).isEqualTo(200);
        }
    }

    @ParameterizedTest(name = "engine {0}s the stream")
    @ValueSource(strings = {"close", "end"})
    void engineStopsHalfwayThroughAnEvent_theErrorEventStillStandsAlone(String how) throws Exception {
        // one whole event and half of the next, then the engine closes the connection (the gateway's error event
        // after a failure mid-response) or ends the chunked body (the error event of a stream without [DONE])
        String whole = "data: {\"choices\":[{\"delta\":{\"content\":\"whole\"}}]}\n\n";
        String half = "data: {\"choices\":[{\"delta\":{\"cont";
        boolean end = how.equals("end");
        String answer = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                + Integer.toHexString(whole.length()) + "\r\n" + whole + "\r\n"
                + Integer.toHexString(half.length()) + "\r\n" + half + "\r\n" + (end ? "0\r\n\r\n" : "");
        try (RawEngine engine = new RawEngine(answer, !end);
             Gateway g = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false),
                     SnapshotSource.fixed(engine.behindEveryEngine(fleet.snapshot())), 1)) {
            HttpResponse<String> r = Fleet.post(g.port(), "/v1/chat/completions", Fleet.chat("half", true, 5));
            assertThat(r.statusCode()).isEqualTo(200);
            List<String> errors = r.body().lines().filter(l -> l.startsWith("data: {\"error\"")).toList();
            assertThat(errors).as("an error event on a line of its own, in: %s", r.body()).hasSize(1);
            assertThat(Http.JSON.readTree(errors.get(0).substring(6)).path("error").path("message").asText())
                    .contains(end ? "without data: [DONE]" : "mid-response");
            assertThat(r.body()).as("the whole event before it reached the client").contains(whole);
        }
    }

    @Test
    void residency_isKeptDuringFailover_andRefusedRatherThanViolated() throws Exception {
        String[] eu = {"x-sextant-residency", "eu-west"};
        String first = engineOf("eu-conv", eu);
        assertThat(first).startsWith("eu-");
        fleet.engines.get(first).close();
        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("eu-conv", false, 1), eu);
        assertThat(r.statusCode()).isEqualTo(200);
        String second = r.headers().firstValue("x-sextant-engine").orElseThrow();
        assertThat(second).startsWith("eu-").isNotEqualTo(first);

        fleet.engines.get(second).close();
        for (int i = 0; i < 10; i++) {
            HttpResponse<String> dead = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("eu-" + i, false, 1), eu);
            assertThat(dead.statusCode()).as("no EU engine is left: refuse, never serve in us-east").isIn(502, 503);
            assertThat(dead.headers().firstValue("x-sextant-engine")).isEmpty();
            assertThat(Http.JSON.readTree(dead.body()).path("error").path("message").asText()).isNotEmpty();
        }
        int served = 0;
        for (int i = 0; i < 20; i++) { // unrestricted requests still find the us-east engines
            HttpResponse<String> any = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("any-" + i, false, 1));
            if (any.statusCode() == 200) {
                served++;
                assertThat(any.headers().firstValue("x-sextant-engine").orElseThrow()).startsWith("us-");
            }
        }
        assertThat(served).isPositive();
    }

    @Test
    void clientDisconnect_cancelsTheEngineRequest() throws Exception {
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gw.port() + "/v1/chat/completions"))
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(Fleet.chat("long", true, 5000))).build();
        HttpResponse<Stream<String>> r = Fleet.send(req, HttpResponse.BodyHandlers.ofLines());
        String engine = r.headers().firstValue("x-sextant-engine").orElseThrow();
        Iterator<String> lines = r.body().iterator();
        assertThat(lines.next()).startsWith("data: ");
        assertThat(gw.inFlight()).isEqualTo(1);
        r.body().close();
        assertThat(Fleet.await(() -> gw.inFlight() == 0 && gw.plane().inFlight(engine) == 0, Duration.ofSeconds(15)))
                .as("the 5000-token stream (50 s) was cancelled").isTrue();
        long tokens = fleet.engines.get(engine).generatedTokens();
        assertThat(tokens).isLessThan(5000);
    }

    /** A half-close cannot be told from a close until a write fails: the client counts as gone (docs/servers.md). */
    @Test
    void clientHalfClosesAfterItsRequest_countsAsGone_andTheEngineRequestIsCancelled() throws Exception {
        try (RawHttp c = new RawHttp(gw.port(), 20_000)) {
            c.send(RawHttp.chatRequest(Fleet.chat("half-close", false, 5000)));
            assertThat(Fleet.await(() -> gw.inFlight() == 1, Duration.ofSeconds(10))).isTrue();
            c.socket.shutdownOutput();
            assertThat(Fleet.await(() -> gw.inFlight() == 0, Duration.ofSeconds(15)))
                    .as("the 5000-token generation (50 s) was cancelled at the client's FIN").isTrue();
            assertThat(c.read()).as("the connection closed without an answer").isNull();
        }
    }

    @Test
    void everyEngineHangs_is504WithATimeoutError() throws Exception {
        fleet.engines.values().forEach(e -> e.setFaults(new Faults(0, 1, true, -1)));
        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("all-hang", true, 1));
        assertThat(r.statusCode()).isEqualTo(504);
        JsonNode error = Http.JSON.readTree(r.body()).path("error");
        assertThat(error.path("code").asText()).isEqualTo("timeout");
        assertThat(error.path("message").asText()).contains("first_token_timeout").contains("not retried");
        assertThat(r.headers().firstValue("x-sextant-attempts")).hasValue("1");
    }

    @Test
    void gracefulShutdown_drainsAnOpenHttp11StreamToItsEnd() throws Exception {
        // HTTP/1.1 here (GatewayHttp2LifecycleTest drains an HTTP/2 stream): the JDK 17 client, once upgraded to h2c,
        // fails its open streams on the drain's GOAWAY even when their ids are below its last stream id
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gw.port() + "/v1/chat/completions"))
                .version(java.net.http.HttpClient.Version.HTTP_1_1).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(Fleet.chat("drain", true, 60))).build();
        HttpResponse<Stream<String>> r = Fleet.send(req, HttpResponse.BodyHandlers.ofLines());
        assertThat(r.version()).isEqualTo(java.net.http.HttpClient.Version.HTTP_1_1);
        Iterator<String> lines = r.body().iterator();
        assertThat(lines.next()).startsWith("data: ");
        Thread closer = new Thread(gw::close);
        closer.start();
        assertThat(Fleet.await(() -> {
            try (java.net.Socket s = new java.net.Socket("127.0.0.1", gw.port())) {
                return false;
            } catch (java.io.IOException e) {
                return true;
            }
        }, Duration.ofSeconds(10))).as("no new connections while draining").isTrue();
        String last = null;
        while (lines.hasNext()) {
            String l = lines.next();
            if (l.startsWith("data: ")) {
                last = l;
            }
        }
        assertThat(last).isEqualTo("data: [DONE]");
        closer.join();
    }

    private List<String> streamData(String key, int tokens) throws Exception {
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gw.port() + "/v1/chat/completions"))
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(Fleet.chat(key, true, tokens))).build();
        HttpResponse<Stream<String>> r = Fleet.send(req, HttpResponse.BodyHandlers.ofLines());
        assertThat(r.statusCode()).isEqualTo(200);
        List<String> out = new ArrayList<>();
        r.body().filter(l -> l.startsWith("data: ")).forEach(out::add);
        return out;
    }
}
