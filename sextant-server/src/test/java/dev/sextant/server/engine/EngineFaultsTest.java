package dev.sextant.server.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class EngineFaultsTest {
    private static final EngineConfig FAST = EngineConfig.defaults("engine-f", "m").withLatency(8, 0.01, 2, 1)
            .withDefaultMaxTokens(4);
    private static final String CHAT = "{\"model\":\"m\",\"max_tokens\":6,\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}";
    private static final String STREAM = "{\"model\":\"m\",\"max_tokens\":6,\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

    @Test
    void errorRateOne_atStart_answersEveryGenerationWith500InOpenAisShape() {
        try (EngineEmulator engine = EngineEmulator.start(FAST.withFaults(new Faults(1, 1, false, -1), 7))) {
            Client client = new Client(engine);

            HttpResponse<String> chat = client.post("/v1/chat/completions", CHAT);
            HttpResponse<String> embed = client.post("/v1/embeddings", "{\"model\":\"m\",\"input\":\"a\"}");

            assertThat(chat.statusCode()).isEqualTo(500);
            assertThat(embed.statusCode()).isEqualTo(500);
            JsonNode error = Client.json(chat).get("error");
            assertThat(error.get("type").asText()).isEqualTo("server_error");
            assertThat(error.get("code").asText()).isEqualTo("injected_fault");
            assertThat(client.get("/healthz").statusCode()).as("only generation fails").isEqualTo(200);
            assertThat(engine.generatedTokens()).isZero();
        }
    }

    @Test
    void errorRate_sameSeed_failsTheSameRequests() {
        List<Integer> first = statuses(42);
        List<Integer> second = statuses(42);
        List<Integer> otherSeed = statuses(43);

        assertThat(first).isEqualTo(second).contains(200, 500);
        assertThat(otherSeed).isNotEqualTo(first);
    }

    private static List<Integer> statuses(long seed) {
        try (EngineEmulator engine = EngineEmulator.start(FAST.withFaults(new Faults(0.5, 1, false, -1), seed))) {
            Client client = new Client(engine);
            List<Integer> out = new ArrayList<>();
            for (int i = 0; i < 24; i++) {
                out.add(client.post("/v1/completions", "{\"model\":\"m\",\"prompt\":\"p\",\"max_tokens\":1}").statusCode());
            }
            return out;
        }
    }

    @Test
    void adminEndpoint_changesFaultsAtRunTime() {
        try (EngineEmulator engine = EngineEmulator.start(FAST)) {
            Client client = new Client(engine);
            assertThat(client.post("/v1/chat/completions", CHAT).statusCode()).isEqualTo(200);

            JsonNode set = Client.json(client.post("/admin/faults", "{\"error_rate\":1.0}"));
            int during = client.post("/v1/chat/completions", CHAT).statusCode();
            client.post("/admin/faults", "{\"error_rate\":0}");
            int after = client.post("/v1/chat/completions", CHAT).statusCode();

            assertThat(set.get("error_rate").asDouble()).isEqualTo(1.0);
            assertThat(set.get("slowdown").asDouble()).as("untouched").isEqualTo(1.0);
            assertThat(during).isEqualTo(500);
            assertThat(after).isEqualTo(200);
            assertThat(Client.json(client.get("/admin/faults")).get("error_rate").asDouble()).isZero();
            assertThat(engine.faults()).isEqualTo(Faults.NONE);
        }
    }

    @Test
    void faultsApi_refusesUnknownFieldsAndBadCrashCounts_andChangesNothingThen() {
        try (EngineEmulator engine = EngineEmulator.start(FAST)) {
            Client client = new Client(engine);
            for (String body : new String[] {"{\"error-rate\":1}", "{\"error_rate\":1,\"nope\":1}",
                "{\"crash_after_tokens\":-5}", "{\"crash_after_tokens\":2.5}"}) {
                var r = client.post("/admin/faults", body);
                assertThat(r.statusCode()).as(body).isEqualTo(400);
                assertThat(Client.json(r).path("error").path("message").asText()).as(body)
                        .containsAnyOf("unknown field", "crash_after_tokens: ");
            }
            assertThat(engine.faults()).isEqualTo(Faults.NONE);
            // what GET shows can be sent back as it is
            String shown = client.get("/admin/faults").body();
            assertThat(client.post("/admin/faults", shown).statusCode()).isEqualTo(200);
            assertThat(engine.faults()).isEqualTo(Faults.NONE);
        }
    }

    @Test
    void aCrashCountBelowMinusOne_isRefusedOnTheCommandLineToo() {
        org.assertj.core.api.Assertions.assertThatThrownBy(
                        () -> EngineOptions.parseArgs(new String[] {"--crash-after-tokens", "-5"}))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("crash_after_tokens: -5");
        assertThat(EngineOptions.parseArgs(new String[] {"--crash-after-tokens", "-1"}).faults().crashes()).isFalse();
    }

    @Test
    void anUnknownOption_isCalledUnknown_evenAtTheEndWithoutAValue() {
        for (String[] args : new String[][] {{"--bogus"}, {"--bogus", "1"}, {"stray"}, {"--id", "e", "--errors=0.5"}}) {
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> EngineOptions.parseArgs(args))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(": unknown option (expected one of")
                    .hasMessageContaining("--error-rate");
        }
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> EngineOptions.parseArgs(new String[] {"--port"}))
                .hasMessage("--port: missing value");
    }

    @Test
    void slowdown_multipliesTheModelsStepTimes() {
        try (EngineEmulator engine = EngineEmulator.start(FAST)) {
            Client client = new Client(engine);
            JsonNode normal = Client.json(client.post("/v1/chat/completions", CHAT)).get("engine_timing");
            client.post("/admin/faults", "{\"slowdown\":3}");
            JsonNode slow = Client.json(client.post("/v1/chat/completions",
                    CHAT.replace("hello there", "other words"))).get("engine_timing");

            assertThat(slow.get("prefill_ms").asDouble()).isEqualTo(3 * normal.get("prefill_ms").asDouble(), within(1e-9));
            assertThat(slow.get("decode_ms").asDouble()).isEqualTo(3 * normal.get("decode_ms").asDouble(), within(1e-9));
            assertThat(normal.get("decode_ms").asDouble()).isEqualTo(5 * 3.0, within(1e-9));
        }
    }

    @Test
    void hang_acceptsTheRequestAndNeverAnswersUntilTheEngineCloses() throws Exception {
        EngineEmulator engine = EngineEmulator.start(FAST.withFaults(new Faults(0, 1, true, -1), 1));
        try {
            Client client = new Client(engine);
            HttpRequest request = client.request("/v1/chat/completions").timeout(java.time.Duration.ofMinutes(5))
                    .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(CHAT)).build();
            CompletableFuture<HttpResponse<String>> response = client.http.sendAsync(request,
                    HttpResponse.BodyHandlers.ofString());

            Client.await("the request to hang", () -> engine.hungRequests() == 1);
            assertThat(response).isNotDone();
            engine.close();

            assertThat(response).failsWithin(20, TimeUnit.SECONDS).withThrowableOfType(ExecutionException.class)
                    .withCauseInstanceOf(IOException.class);
            assertThat(engine.generatedTokens()).isZero();
        } finally {
            engine.close();
        }
    }

    @Test
    void stall_queuesRequestsWithoutWorkingOnThem_metricsStandStill_andLiftingItAnswersThem() throws Exception {
        try (EngineEmulator engine = EngineEmulator.start(FAST)) {
            Client client = new Client(engine);
            assertThat(Client.json(client.post("/admin/faults", "{\"stall\":true}")).get("stall").asBoolean())
                    .isTrue();
            List<CompletableFuture<HttpResponse<String>>> held = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                held.add(client.http.sendAsync(client.request("/v1/chat/completions")
                        .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(CHAT))
                        .build(), HttpResponse.BodyHandlers.ofString()));
            }
            Client.await("both requests queued", () -> client.get("/metrics").body()
                    .matches("(?s).*vllm:num_requests_waiting\\{[^}]*} 2\\.0.*"));
            assertThat(held).noneMatch(CompletableFuture::isDone);
            assertThat(engine.generatedTokens()).isZero();
            assertThat(client.get("/metrics").body()).containsPattern("vllm:num_requests_running\\{[^}]*} 0\\.0")
                    .containsPattern("vllm:generation_tokens_total\\{[^}]*} 0\\.0");

            assertThat(Client.json(client.post("/admin/faults", "{\"stall\":false}")).get("stall").asBoolean())
                    .isFalse();
            for (CompletableFuture<HttpResponse<String>> r : held) {
                assertThat(r.get(20, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
            }
            assertThat(engine.generatedTokens()).isEqualTo(12);
        }
    }

    @Test
    void crashAfterTokens_streaming_closesTheConnectionMidStream() throws IOException {
        try (EngineEmulator engine = EngineEmulator.start(FAST.withFaults(new Faults(0, 1, false, 3), 1))) {
            Client client = new Client(engine);

            // a raw socket sees exactly what went over the wire: HttpClient may drop data it read before an error
            String wire = rawExchange(engine.port(), "/v1/chat/completions", STREAM);
            Client.Stream viaHttpClient = client.stream("/v1/chat/completions", STREAM, e -> { });

            assertThat(wire).startsWith("HTTP/1.1 200 OK");
            assertThat(wire.split("data: ", -1)).as("role chunk and three tokens").hasSize(1 + 1 + 3);
            assertThat(wire).doesNotContain("[DONE]").doesNotContain("finish_reason\":\"");
            assertThat(wire).as("no terminating chunk").doesNotEndWith("0\r\n\r\n");
            assertThat(viaHttpClient.failure()).as("a truncated chunked body").isInstanceOf(IOException.class);
            assertThat(viaHttpClient.events()).doesNotContain("[DONE]");
            Client.await("the crashes counted as aborts", () -> client.get("/metrics").body()
                    .contains("vllm:request_success_total{engine=\"0\",finished_reason=\"abort\",model_name=\"m\"} 2.0"));
        }
    }

    /** Sends one request on a fresh connection and reads everything until the server closes it. */
    static String rawExchange(int port, String path, String body) throws IOException {
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", port)) {
            socket.setSoTimeout(20_000);
            byte[] bytes = body.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            String head = "POST " + path + " HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                    + "content-length: " + bytes.length + "\r\n\r\n";
            socket.getOutputStream().write(head.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            socket.getOutputStream().write(bytes);
            socket.getOutputStream().flush();
            return new String(socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        }
    }

    @Test
    void crashAfterTokens_notStreaming_closesWithoutAnswer() {
        try (EngineEmulator engine = EngineEmulator.start(FAST.withFaults(new Faults(0, 1, false, 2), 1))) {
            Client client = new Client(engine);

            assertThat(org.assertj.core.api.Assertions.catchThrowable(() -> client.post("/v1/chat/completions", CHAT)))
                    .isInstanceOf(UncheckedIOException.class);
            client.post("/admin/faults", "{\"crash_after_tokens\":null}");
            assertThat(client.post("/v1/chat/completions", CHAT).statusCode()).isEqualTo(200);
        }
    }

    @Test
    void crashAfterZeroTokens_closesBeforeTheFirstToken() throws IOException {
        try (EngineEmulator engine = EngineEmulator.start(FAST.withFaults(new Faults(0, 1, false, 0), 1))) {
            Client client = new Client(engine);

            String wire = rawExchange(engine.port(), "/v1/chat/completions", STREAM);

            assertThat(wire).startsWith("HTTP/1.1 200 OK");
            assertThat(wire).as("the head only: the first event comes with the first token").doesNotContain("data: ");
            assertThat(engine.generatedTokens()).isZero();
            assertThat(engine.generations()).isZero();
        }
    }

    @Test
    void corruptStreamTruncate_endsTheChunkedBodyCleanlyAfterTheFirstTokenWithoutDone() throws IOException {
        try (EngineEmulator engine = EngineEmulator.start(FAST.withFaults(
                new Faults(0, 1, false, -1, Faults.Corruption.TRUNCATE), 1))) {
            String wire = closingExchange(engine.port(), STREAM);

            assertThat(wire).startsWith("HTTP/1.1 200 OK");
            assertThat(wire.split("data: ", -1)).as("role chunk and one token").hasSize(1 + 1 + 1);
            assertThat(wire).doesNotContain("[DONE]").doesNotContain("finish_reason\":\"");
            assertThat(wire).as("a clean end of the chunked body").endsWith("\r\n0\r\n\r\n");
            assertThat(Client.json(new Client(engine).post("/v1/chat/completions", CHAT)).at("/choices/0/finish_reason")
                    .asText()).as("non-streaming answers are untouched").isEqualTo("length");
        }
    }

    @Test
    void corruptStreamMalformed_writesBytesThatAreNotChunkedEncoding() throws IOException {
        try (EngineEmulator engine = EngineEmulator.start(FAST)) {
            Client client = new Client(engine);
            JsonNode set = Client.json(client.post("/admin/faults", "{\"corrupt_stream\":\"malformed\"}"));
            String wire = closingExchange(engine.port(), STREAM);
            int bad = client.post("/admin/faults", "{\"corrupt_stream\":\"sideways\"}").statusCode();
            client.post("/admin/faults", "{\"corrupt_stream\":null}");

            assertThat(set.get("corrupt_stream").asText()).isEqualTo("malformed");
            assertThat(wire).startsWith("HTTP/1.1 200 OK").contains("\r\nzz-not-a-chunk-size\r\n");
            assertThat(bad).isEqualTo(400);
            assertThat(engine.faults()).isEqualTo(Faults.NONE);
        }
    }

    /** Sends one request with {@code connection: close} and reads everything until the server closes. */
    private static String closingExchange(int port, String body) throws IOException {
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", port)) {
            socket.setSoTimeout(20_000);
            byte[] bytes = body.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            String head = "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                    + "connection: close\r\ncontent-length: " + bytes.length + "\r\n\r\n";
            socket.getOutputStream().write(head.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            socket.getOutputStream().write(bytes);
            socket.getOutputStream().flush();
            return new String(socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        }
    }
}
