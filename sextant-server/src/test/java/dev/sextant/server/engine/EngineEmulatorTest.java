package dev.sextant.server.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.signal.EngineMetrics;
import dev.sextant.signal.PrometheusText;
import dev.sextant.signal.Scrape;
import java.nio.charset.StandardCharsets;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class EngineEmulatorTest {
    /** Fast, exact model: steps of 2 + 1·batch ms, 0.01 ms per prefill token. */
    private static final EngineConfig FAST = EngineConfig.defaults("engine-a", "m").withLatency(8, 0.01, 2, 1)
            .withDefaultMaxTokens(4);

    private EngineEmulator engine;
    private Client client;

    @BeforeEach
    void start() {
        engine = EngineEmulator.start(FAST);
        client = new Client(engine);
    }

    @AfterEach
    void stop() {
        engine.close();
    }

    private static String chat(String extra) {
        return "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]" + extra + "}";
    }

    /**
     * A request waits while its prompt does not fit in the KV cache the running ones leave, as vLLM admits a request
     * only when it can allocate its prompt's blocks: two prompts of 800 tokens in a cache of 1,000, the second waits
     * for the first, with places free in the batch. The usage gauge reads what the running one holds.
     */
    @Test
    void aPromptThatDoesNotFitInTheKvCacheLeft_waits_withPlacesFree() throws Exception {
        try (EngineEmulator small = EngineEmulator.start(FAST.withKvCacheTokens(1_000))) {
            Client c = new Client(small);
            String prompt = "x".repeat(3_200 - 9); // "user: …\n" at four characters a token: 800 tokens
            String first = "{\"model\":\"m\",\"max_tokens\":400,\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt
                    + "\"}]}";
            String second = "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"y"
                    + prompt.substring(1) + "\"}]}";
            java.util.concurrent.CompletableFuture<HttpResponse<String>> a = c.http.sendAsync(c.request(
                    "/v1/chat/completions").header("content-type", "application/json").POST(
                    java.net.http.HttpRequest.BodyPublishers.ofString(first)).build(),
                    HttpResponse.BodyHandlers.ofString());
            Client.await("the first to run", () -> metric(c, "vllm:num_requests_running") == 1);
            java.util.concurrent.CompletableFuture<HttpResponse<String>> b = c.http.sendAsync(c.request(
                    "/v1/chat/completions").header("content-type", "application/json").POST(
                    java.net.http.HttpRequest.BodyPublishers.ofString(second)).build(),
                    HttpResponse.BodyHandlers.ofString());
            Client.await("the second to wait", () -> metric(c, "vllm:num_requests_waiting") == 1);
            assertThat(metric(c, "vllm:num_requests_running")).as("with 7 places free").isEqualTo(1);
            assertThat(metric(c, "vllm:kv_cache_usage_perc")).isGreaterThanOrEqualTo(0.8);

            assertThat(a.get().statusCode()).isEqualTo(200);
            assertThat(b.get().statusCode()).isEqualTo(200);
            assertThat(Client.json(b.get()).get("usage").get("prompt_tokens").asInt()).isEqualTo(800);
        }
    }

    /** The value of the metric line that starts with {@code name} (its labels whatever they are). */
    private static double metric(Client c, String name) {
        for (String line : c.get("/metrics").body().split("\n")) {
            if (line.startsWith(name + "{")) {
                return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return Double.NaN;
    }

    @Test
    void chatCompletion_notStreaming_answersOneCompletionInOpenAisShape() {
        HttpResponse<String> response = client.post("/v1/chat/completions", chat(",\"max_tokens\":5"));

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("x-engine-id")).hasValue("engine-a");
        assertThat(response.headers().firstValue("content-type")).hasValue("application/json");
        JsonNode body = Client.json(response);
        assertThat(body.get("object").asText()).isEqualTo("chat.completion");
        assertThat(body.get("id").asText()).startsWith("chatcmpl-");
        assertThat(body.get("model").asText()).isEqualTo("m");
        JsonNode choice = body.get("choices").get(0);
        assertThat(choice.get("message").get("role").asText()).isEqualTo("assistant");
        assertThat(choice.get("message").get("content").asText().split(" ")).hasSize(5);
        assertThat(choice.get("finish_reason").asText()).isEqualTo("length");
        // "user: hello there\n" is 18 characters: 5 tokens at 4 characters a token
        assertThat(body.get("usage").get("prompt_tokens").asInt()).isEqualTo(5);
        assertThat(body.get("usage").get("completion_tokens").asInt()).isEqualTo(5);
        assertThat(body.get("usage").get("total_tokens").asInt()).isEqualTo(10);
        assertThat(body.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt()).isZero();
    }

    @Test
    void generations_countEachRequestIdTheEngineProducedATokenFor() {
        for (String id : List.of("req-a", "req-b", "req-a")) {
            HttpResponse<String> r = client.send(client.request("/v1/chat/completions")
                    .header("content-type", "application/json").header("x-request-id", id)
                    .POST(java.net.http.HttpRequest.BodyPublishers.ofString(chat(",\"max_tokens\":3"))).build());
            assertThat(r.statusCode()).isEqualTo(200);
        }
        client.post("/v1/chat/completions", chat(",\"max_tokens\":2,\"stream\":true")); // no id: counted in the total

        assertThat(engine.generations("req-a")).isEqualTo(2);
        assertThat(engine.generations("req-b")).isEqualTo(1);
        assertThat(engine.generations("req-c")).isZero();
        assertThat(engine.generations()).isEqualTo(4);
    }

    @Test
    void engineTiming_singleRequest_followsTheStepModelExactly() {
        JsonNode body = Client.json(client.post("/v1/chat/completions", chat(",\"max_tokens\":5")));

        JsonNode t = body.get("engine_timing");
        // first step: a + c·1 + p·5 prompt tokens; then 4 steps of a + c·1
        assertThat(t.get("prefill_ms").asDouble()).isEqualTo(0.05, within(1e-9));
        assertThat(t.get("ttft_ms").asDouble() - t.get("queued_ms").asDouble()).isEqualTo(3.05, within(1e-9));
        assertThat(t.get("decode_ms").asDouble()).isEqualTo(12.0, within(1e-9));
    }

    @Test
    void completion_withoutMaxTokens_generatesTheDefaultAndStops() {
        HttpResponse<String> response = client.post("/v1/completions", "{\"model\":\"m\",\"prompt\":\"Once upon\"}");

        JsonNode body = Client.json(response);
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(body.get("object").asText()).isEqualTo("text_completion");
        assertThat(body.get("choices").get(0).get("text").asText().split(" ")).hasSize(4);
        assertThat(body.get("choices").get(0).get("finish_reason").asText()).isEqualTo("stop");
        assertThat(body.get("usage").get("completion_tokens").asInt()).isEqualTo(4);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {"[101,7,2023]|3|1", "[[101,7],[9,9,9]]|5|2"})
    void completion_ofTokenIds_countsThemAsThePrompt_aBatchOfListsAsOnePromptEach(String prompt, int tokens,
                                                                                  int choices) {
        HttpResponse<String> response = client.post("/v1/completions",
                "{\"model\":\"m\",\"max_tokens\":2,\"prompt\":" + prompt + "}");

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(Client.json(response).get("usage").get("prompt_tokens").asInt()).isEqualTo(tokens);
        assertThat(Client.json(response).get("choices")).hasSize(choices);
    }

    @Test
    void chatCompletion_withN_answersNChoices_eachItsOwnSequence_thePromptCountedOnce() {
        JsonNode body = Client.json(client.post("/v1/chat/completions", chat(",\"max_tokens\":3,\"n\":3")));

        JsonNode choices = body.get("choices");
        assertThat(choices).hasSize(3);
        List<String> texts = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            assertThat(choices.get(i).get("index").asInt()).isEqualTo(i);
            assertThat(choices.get(i).get("finish_reason").asText()).isEqualTo("length");
            texts.add(choices.get(i).get("message").get("content").asText());
        }
        assertThat(texts).allSatisfy(t -> assertThat(t.split(" ")).hasSize(3)).doesNotHaveDuplicates();
        assertThat(body.get("usage").get("prompt_tokens").asInt()).isEqualTo(5);
        assertThat(body.get("usage").get("completion_tokens").asInt()).isEqualTo(9);
        assertThat(engine.generatedTokens()).isEqualTo(9);
    }

    @Test
    void completion_ofABatchOfPrompts_answersEachPromptNTimes_inOpenAisOrder() {
        // "abcd" is 1 token, "abcdefgh" 2: choices 0 and 1 answer the first prompt, 2 and 3 the second
        JsonNode body = Client.json(client.post("/v1/completions",
                "{\"model\":\"m\",\"prompt\":[\"abcd\",\"abcdefgh\"],\"n\":2,\"max_tokens\":2}"));

        JsonNode choices = body.get("choices");
        assertThat(choices).hasSize(4);
        for (int i = 0; i < 4; i++) {
            assertThat(choices.get(i).get("index").asInt()).isEqualTo(i);
            assertThat(choices.get(i).get("text").asText().split(" ")).hasSize(2);
        }
        assertThat(body.get("usage").get("prompt_tokens").asInt()).isEqualTo(1 + 2);
        assertThat(body.get("usage").get("completion_tokens").asInt()).isEqualTo(4 * 2);
    }

    @Test
    void chatCompletion_streamingWithN_streamsEveryChoiceByIndex_thenOneUsageAndOneDone() {
        Client.Stream stream = client.stream("/v1/chat/completions", chat(",\"max_tokens\":3,\"n\":2,\"stream\":true,"
                + "\"stream_options\":{\"include_usage\":true}"), e -> { });

        List<String> events = stream.events();
        assertThat(events).filteredOn("[DONE]"::equals).hasSize(1);
        assertThat(events).last().isEqualTo("[DONE]");
        List<JsonNode> chunks = events.stream().filter(e -> !e.equals("[DONE]")).map(EngineEmulatorTest::read).toList();
        JsonNode usage = chunks.get(chunks.size() - 1);
        assertThat(usage.get("choices")).isEmpty();
        assertThat(usage.get("usage").get("completion_tokens").asInt()).isEqualTo(6);
        for (int choice = 0; choice < 2; choice++) {
            int index = choice;
            List<JsonNode> own = chunks.stream().filter(c -> c.get("choices").size() == 1
                    && c.get("choices").get(0).get("index").asInt() == index).map(c -> c.get("choices").get(0)).toList();
            assertThat(own).as("choice %d: role, 3 tokens, finish", index).hasSize(1 + 3 + 1);
            assertThat(own.get(0).get("delta").get("role").asText()).isEqualTo("assistant");
            assertThat(own.get(4).get("finish_reason").asText()).isEqualTo("length");
        }
    }

    @Test
    void chatCompletion_streaming_sendsTheFirstChunkBeforeTheLastTokenIsProduced() {
        engine.close();
        engine = EngineEmulator.start(FAST.withLatency(8, 0.01, 10, 0));
        client = new Client(engine);
        int maxTokens = 100;
        List<Long> producedAtArrival = new ArrayList<>();

        Client.Stream stream = client.stream("/v1/chat/completions", chat(",\"max_tokens\":" + maxTokens + ",\"stream\":true"),
                event -> producedAtArrival.add(engine.generatedTokens()));

        assertThat(stream.failure()).isNull();
        assertThat(stream.status()).isEqualTo(200);
        assertThat(stream.engineId()).isEqualTo("engine-a");
        List<JsonNode> chunks = stream.events().stream().filter(e -> !e.equals("[DONE]")).map(EngineEmulatorTest::read).toList();
        assertThat(stream.events()).last().isEqualTo("[DONE]");
        assertThat(chunks).allSatisfy(c -> assertThat(c.get("object").asText()).isEqualTo("chat.completion.chunk"));
        assertThat(chunks.get(0).get("choices").get(0).get("delta").get("role").asText()).isEqualTo("assistant");
        List<JsonNode> content = chunks.stream()
                .filter(c -> c.get("choices").get(0).path("delta").path("content").asText("").length() > 0).toList();
        assertThat(content).hasSize(maxTokens);
        JsonNode last = chunks.get(chunks.size() - 1);
        assertThat(last.get("choices").get(0).get("finish_reason").asText()).isEqualTo("length");
        assertThat(last.get("engine_timing")).isNotNull();
        // the first event comes with the first token, as vLLM's does, and index 1 is the first content chunk: when it
        // arrived, the engine had produced far from all tokens
        assertThat(producedAtArrival.get(0)).as("tokens produced when the role chunk arrived").isPositive();
        assertThat(producedAtArrival.get(1)).isLessThan(maxTokens);
        assertThat(producedAtArrival.stream().distinct().count()).as("chunks arrived while tokens were produced")
                .isGreaterThan(2);
    }

    @Test
    void completion_streamingWithUsage_endsWithAUsageChunkThenDone() {
        Client.Stream stream = client.stream("/v1/completions",
                "{\"model\":\"m\",\"prompt\":\"abc\",\"max_tokens\":3,\"stream\":true,"
                        + "\"stream_options\":{\"include_usage\":true}}", e -> { });

        List<String> events = stream.events();
        assertThat(events).hasSize(1 + 3 + 1 + 1 + 1);
        assertThat(events.get(events.size() - 1)).isEqualTo("[DONE]");
        JsonNode usage = read(events.get(events.size() - 2));
        assertThat(usage.get("choices")).isEmpty();
        assertThat(usage.get("usage").get("completion_tokens").asInt()).isEqualTo(3);
        JsonNode token = read(events.get(1));
        assertThat(token.get("object").asText()).isEqualTo("text_completion");
        assertThat(token.get("choices").get(0).get("text").asText()).isNotEmpty();
        assertThat(token.get("choices").get(0).get("finish_reason").isNull()).isTrue();
        assertThat(read(events.get(4)).get("choices").get(0).get("finish_reason").asText()).isEqualTo("length");
    }

    private static String responses(String extra) {
        return "{\"model\":\"m\",\"instructions\":\"be brief\",\"input\":\"hello there\"" + extra + "}";
    }

    @Test
    void response_notStreaming_isOneResponseObjectInOpenAisShape() {
        HttpResponse<String> response = client.post("/v1/responses", responses(",\"metadata\":{\"k\":\"v\"}"));

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("content-type")).hasValue("application/json");
        JsonNode body = Client.json(response);
        assertThat(body.get("object").asText()).isEqualTo("response");
        assertThat(body.get("id").asText()).startsWith("resp_");
        assertThat(body.get("status").asText()).isEqualTo("completed");
        assertThat(body.get("incomplete_details").isNull()).isTrue();
        assertThat(body.get("instructions").asText()).isEqualTo("be brief");
        assertThat(body.get("metadata").get("k").asText()).isEqualTo("v");
        assertThat(body.get("output")).hasSize(1);
        JsonNode message = body.get("output").get(0);
        assertThat(message.get("type").asText()).isEqualTo("message");
        assertThat(message.get("role").asText()).isEqualTo("assistant");
        assertThat(message.get("id").asText()).startsWith("msg_");
        JsonNode part = message.get("content").get(0);
        assertThat(part.get("type").asText()).isEqualTo("output_text");
        assertThat(part.get("text").asText().split(" ")).as("the default 4 tokens").hasSize(4);
        // the chat prompt of the same conversation: "system: be brief\nuser: hello there\n", 35 characters
        assertThat(body.get("usage").get("input_tokens").asInt()).isEqualTo(9);
        assertThat(body.get("usage").get("output_tokens").asInt()).isEqualTo(4);
        assertThat(body.get("usage").get("total_tokens").asInt()).isEqualTo(13);
        assertThat(body.get("usage").get("input_tokens_details").get("cached_tokens").asInt()).isZero();
        assertThat(body.get("engine_timing")).isNotNull();
    }

    @Test
    void response_cutByMaxOutputTokens_isIncomplete() {
        JsonNode body = Client.json(client.post("/v1/responses", responses(",\"max_output_tokens\":6")));

        assertThat(body.get("status").asText()).isEqualTo("incomplete");
        assertThat(body.get("incomplete_details").get("reason").asText()).isEqualTo("max_output_tokens");
        assertThat(body.get("max_output_tokens").asInt()).isEqualTo(6);
        assertThat(body.get("usage").get("output_tokens").asInt()).isEqualTo(6);
    }

    @Test
    void response_streaming_sendsOpenAisEventsInOrder_namedAndNumbered_withoutDone() {
        Client.Stream stream = client.stream("/v1/responses", responses(",\"stream\":true,\"max_output_tokens\":3"),
                e -> { });

        assertThat(stream.failure()).isNull();
        assertThat(stream.status()).isEqualTo(200);
        List<JsonNode> events = stream.events().stream().map(EngineEmulatorTest::read).toList();
        assertThat(events).extracting(e -> e.get("type").asText()).containsExactly("response.created",
                "response.in_progress", "response.output_item.added", "response.content_part.added",
                "response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
                "response.output_text.done", "response.content_part.done", "response.output_item.done",
                "response.incomplete");
        assertThat(stream.names()).as("every event named in an event: line as its type")
                .isEqualTo(events.stream().map(e -> e.get("type").asText()).toList());
        assertThat(events).extracting(e -> e.get("sequence_number").asInt())
                .containsExactlyElementsOf(IntStream.range(0, events.size()).boxed().toList());
        assertThat(events.get(0).get("response").get("status").asText()).isEqualTo("in_progress");
        assertThat(events.get(0).get("response").get("output")).isEmpty();
        String deltas = events.stream().filter(e -> e.get("type").asText().equals("response.output_text.delta"))
                .map(e -> e.get("delta").asText()).reduce("", String::concat);
        assertThat(events.get(7).get("text").asText()).isEqualTo(deltas);
        JsonNode last = events.get(events.size() - 1).get("response");
        assertThat(last.get("output").get(0).get("content").get(0).get("text").asText()).isEqualTo(deltas);
        assertThat(last.get("usage").get("output_tokens").asInt()).isEqualTo(3);
        assertThat(last.get("status").asText()).isEqualTo("incomplete");
    }

    @Test
    void response_andChat_ofOneConversation_shareItsPrefixCache() {
        String history = "x".repeat(4000);
        JsonNode chat = Client.json(client.post("/v1/chat/completions", "{\"model\":\"m\",\"max_tokens\":2,"
                + "\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":\""
                + history + "\"}]}"));
        JsonNode response = Client.json(client.post("/v1/responses", "{\"model\":\"m\",\"max_output_tokens\":2,"
                + "\"instructions\":\"be brief\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\","
                + "\"text\":\"" + history + "\"}]}]}"));

        int prompt = chat.get("usage").get("prompt_tokens").asInt();
        assertThat(response.get("usage").get("input_tokens").asInt()).isEqualTo(prompt);
        assertThat(response.get("usage").get("input_tokens_details").get("cached_tokens").asInt())
                .as("the chat turn left the conversation's prefix in the cache").isEqualTo(prompt - 1);
    }

    @Test
    void streamingToAnHttp10Client_isNotChunked_andEndsWithTheConnection() throws Exception {
        String body = chat(",\"stream\":true,\"max_tokens\":3");
        try (java.net.Socket s = new java.net.Socket("127.0.0.1", engine.port())) {
            s.setSoTimeout(5000);
            s.getOutputStream().write(("POST /v1/chat/completions HTTP/1.0\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.ISO_8859_1));
            String answer = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8); // to the close
            String head = answer.substring(0, answer.indexOf("\r\n\r\n")).toLowerCase(java.util.Locale.ROOT);
            String events = answer.substring(answer.indexOf("\r\n\r\n") + 4);
            assertThat(head).startsWith("http/1.1 200").doesNotContain("transfer-encoding").contains("connection: close");
            assertThat(events).startsWith("data: {").endsWith("data: [DONE]\n\n").doesNotContainPattern("(?m)^[0-9a-f]+\r$");
        }
    }

    @Test
    void wrongMethod_is405WithAllow_andHeadReadsWhatGetDoes() throws Exception {
        java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        java.util.function.BiFunction<String, String, HttpResponse<String>> send = (method, path) -> {
            try {
                return http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + engine.port()
                        + path)).method(method, java.net.http.HttpRequest.BodyPublishers.noBody()).build(),
                        HttpResponse.BodyHandlers.ofString());
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        };
        assertThat(send.apply("GET", "/v1/chat/completions").headers().firstValue("allow")).hasValue("POST");
        HttpResponse<String> postMetrics = send.apply("POST", "/metrics");
        assertThat(postMetrics.statusCode()).isEqualTo(405);
        assertThat(postMetrics.headers().firstValue("allow")).hasValue("GET, HEAD");
        assertThat(send.apply("DELETE", "/admin/faults").headers().firstValue("allow")).hasValue("GET, HEAD, POST");
        HttpResponse<String> head = send.apply("HEAD", "/v1/models");
        assertThat(head.statusCode()).isEqualTo(200);
        assertThat(head.body()).isEmpty();
    }

    @Test
    void embeddings_areDeterministicUnitVectors() {
        JsonNode one = Client.json(client.post("/v1/embeddings", "{\"model\":\"m\",\"input\":[\"a\",\"b\"]}"));
        JsonNode again = Client.json(client.post("/v1/embeddings", "{\"model\":\"m\",\"input\":\"a\"}"));

        assertThat(one.get("object").asText()).isEqualTo("list");
        assertThat(one.get("data")).hasSize(2);
        JsonNode a = one.get("data").get(0).get("embedding");
        assertThat(a).hasSize(8);
        double norm = 0;
        for (JsonNode x : a) {
            norm += x.asDouble() * x.asDouble();
        }
        assertThat(norm).isEqualTo(1.0, within(1e-9));
        assertThat(again.get("data").get(0).get("embedding")).isEqualTo(a);
        assertThat(one.get("data").get(1).get("embedding")).isNotEqualTo(a);
    }

    @Test
    void embeddings_inBase64_areTheSameVectorAsFloat32LittleEndian() {
        JsonNode floats = Client.json(client.post("/v1/embeddings", "{\"model\":\"m\",\"input\":\"a\"}"));
        JsonNode base64 = Client.json(client.post("/v1/embeddings",
                "{\"model\":\"m\",\"input\":\"a\",\"encoding_format\":\"base64\"}"));

        JsonNode expected = floats.get("data").get(0).get("embedding");
        java.nio.ByteBuffer bytes = java.nio.ByteBuffer.wrap(java.util.Base64.getDecoder()
                .decode(base64.get("data").get(0).get("embedding").asText())).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        assertThat(bytes.remaining()).isEqualTo(4 * expected.size());
        for (JsonNode x : expected) {
            assertThat(bytes.getFloat()).isEqualTo((float) x.asDouble());
        }
    }

    @Test
    void modelsAndHealthz_answer() {
        JsonNode models = Client.json(client.get("/v1/models"));
        HttpResponse<String> health = client.get("/healthz");

        assertThat(models.get("data")).hasSize(1);
        assertThat(models.get("data").get(0).get("id").asText()).isEqualTo("m");
        assertThat(health.statusCode()).isEqualTo(200);
        assertThat(health.headers().firstValue("x-engine-id")).hasValue("engine-a");
    }

    @Test
    void metrics_parseWithTheSignalParserAndCountRequests() {
        for (int i = 0; i < 3; i++) {
            client.post("/v1/chat/completions", chat(",\"max_tokens\":" + (i + 2)));
        }
        client.post("/v1/completions", "{\"model\":\"m\",\"prompt\":\"x\"}");

        HttpResponse<String> response = client.get("/metrics");
        Scrape scrape = PrometheusText.parse(response.body());
        EngineMetrics m = EngineMetrics.from(scrape, "m");

        assertThat(response.headers().firstValue("content-type").orElse("")).startsWith("text/plain");
        assertThat(scrape.problems()).isEmpty();
        assertThat(scrape.families()).containsKeys("vllm:num_requests_running", "vllm:num_requests_waiting",
                "vllm:kv_cache_usage_perc", "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
                "vllm:request_success_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total");
        assertThat(m.flavor()).isEqualTo(EngineMetrics.Flavor.VLLM);
        assertThat(m.successCount()).isEqualTo(4.0);
        assertThat(scrape.samples("vllm:request_success_total").stream()
                .filter(s -> "stop".equals(s.label("finished_reason"))).findFirst().orElseThrow().value()).isEqualTo(1.0);
        assertThat(m.ttft().count()).isEqualTo(4.0);
        assertThat(m.ttft().buckets()).hasSize(23);
        assertThat(m.tbt().count()).as("gaps: 1 + 2 + 3 + 3").isEqualTo(9.0);
        assertThat(m.generationTokens()).isEqualTo(2 + 3 + 4 + 4);
        assertThat(m.outputLengths().count()).as("one length per finished request").isEqualTo(4.0);
        assertThat(m.outputLengths().sum()).isEqualTo(2 + 3 + 4 + 4);
        assertThat(m.outputLengths().quantile(0.25)).as("vLLM's 1-2-5 buckets: 2 in (1, 2]").isEqualTo(2.0);
        assertThat(m.promptTokens()).isEqualTo(5 * 3 + 1);
        assertThat(m.running()).isZero();
        assertThat(m.waiting()).isZero();
        assertThat(m.kvCacheUsage()).isZero();
        assertThat(m.kvCapacityTokens()).as("vllm:cache_config_info's blocks × block size")
                .isEqualTo((double) FAST.kvCacheTokens());
    }

    @Test
    void batch_fullOfSequences_queuesTheRestAndShowsItInMetrics() {
        engine.close();
        // each request decodes for 1 s, so the state "one running, two waiting" lasts about a second
        engine = EngineEmulator.start(FAST.withLatency(1, 0.01, 10, 0));
        client = new Client(engine);
        List<Thread> streams = new ArrayList<>();
        List<Client.Stream> results = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int i = 0; i < 3; i++) {
            Thread t = new Thread(() -> results.add(client.stream("/v1/chat/completions",
                    chat(",\"max_tokens\":100,\"stream\":true"), e -> { })));
            t.start();
            streams.add(t);
        }

        Client.await("one running and two waiting", () -> {
            EngineMetrics m = EngineMetrics.from(PrometheusText.parse(client.get("/metrics").body()));
            return m.running() == 1 && m.waiting() == 2;
        });
        streams.forEach(EngineEmulatorTest::join);

        assertThat(results).hasSize(3).allSatisfy(r -> assertThat(r.events()).last().isEqualTo("[DONE]"));
        EngineMetrics after = EngineMetrics.from(PrometheusText.parse(client.get("/metrics").body()));
        assertThat(after.successCount()).isEqualTo(3.0);
        assertThat(after.waiting()).isZero();
        // vLLM's queue time: the first waited for nothing, the others for one and two requests of a second each
        assertThat(after.queueTime().count()).isEqualTo(3);
        assertThat(after.queueTime().mean()).isGreaterThan(0.5);
    }

    @ParameterizedTest
    @CsvSource({
        "'\"prompt_cache_key\":\"conv-1\",', '\"prompt_cache_key\":\"conv-1\",'",
        "'\"user\":\"alice\",', '\"user\":\"alice\",'",
        "'', ''"
    })
    void prefixCache_secondTurnOfAConversation_prefillsOnlyTheNewTokens(String key1, String key2) {
        String history = "x".repeat(4000);
        String turn1 = "{" + key1 + "\"model\":\"m\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\""
                + history + "\"}]}";
        String turn2 = "{" + key2 + "\"model\":\"m\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\""
                + history + "\"},{\"role\":\"assistant\",\"content\":\"ok\"},{\"role\":\"user\",\"content\":\"" + "m".repeat(200) + "\"}]}";

        JsonNode first = Client.json(client.post("/v1/chat/completions", turn1));
        JsonNode second = Client.json(client.post("/v1/chat/completions", turn2));

        int prompt1 = first.get("usage").get("prompt_tokens").asInt();
        int prompt2 = second.get("usage").get("prompt_tokens").asInt();
        assertThat(first.get("engine_timing").get("cached_tokens").asInt()).isZero();
        assertThat(first.get("engine_timing").get("prefill_ms").asDouble()).isEqualTo(prompt1 * 0.01, within(1e-9));
        // turn 1 left its prompt and its 10 answer tokens in the cache
        int cached = second.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt();
        assertThat(cached).isEqualTo(prompt1 + 10);
        assertThat(second.get("engine_timing").get("prefill_ms").asDouble())
                .isEqualTo((prompt2 - cached) * 0.01, within(1e-9))
                .isLessThan(first.get("engine_timing").get("prefill_ms").asDouble());
        Scrape scrape = PrometheusText.parse(client.get("/metrics").body());
        assertThat(scrape.samples("vllm:prefix_cache_hits_total").get(0).value()).isEqualTo(cached);
    }

    @Test
    void prefixCache_anotherConversation_missesTheCache() {
        client.post("/v1/chat/completions", "{\"prompt_cache_key\":\"a\",\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
        JsonNode other = Client.json(client.post("/v1/chat/completions",
                "{\"prompt_cache_key\":\"b\",\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"));

        assertThat(other.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt()).isZero();
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "POST|/v1/chat/completions|{\"model\":\"m\",|400|invalid_request_error",
        "POST|/v1/chat/completions|[1,2]|400|invalid_request_error",
        "POST|/v1/chat/completions|{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}|400|invalid_request_error",
        "POST|/v1/chat/completions|{\"model\":\"m\",\"messages\":\"x\"}|400|invalid_request_error",
        "POST|/v1/chat/completions|{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}],\"max_tokens\":\"5\"}|400|invalid_request_error",
        "POST|/v1/chat/completions|{\"model\":\"nope\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}|404|invalid_request_error",
        "POST|/v1/completions|{\"model\":\"m\"}|400|invalid_request_error",
        "POST|/v1/completions|{\"model\":\"m\",\"prompt\":[1,-2]}|400|invalid_request_error",
        "POST|/v1/completions|{\"model\":\"m\",\"prompt\":\"x\"} x|400|invalid_request_error",
        "POST|/v1/completions|{\"model\":\"m\",\"prompt\":[[1],[]]}|400|invalid_request_error",
        "POST|/v1/completions|{\"model\":\"m\",\"prompt\":[[[1]]]}|400|invalid_request_error",
        "POST|/v1/embeddings|{\"model\":\"m\",\"input\":5}|400|invalid_request_error",
        "POST|/v1/embeddings|{\"model\":\"m\",\"input\":\"x\",\"encoding_format\":\"int8\"}|400|invalid_request_error",
        "POST|/v1/chat/completions|{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}],\"n\":0}|400|invalid_request_error",
        "POST|/v1/chat/completions|{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}],\"n\":129}|400|invalid_request_error",
        "POST|/v1/completions|{\"model\":\"m\",\"prompt\":\"x\",\"n\":\"2\"}|400|invalid_request_error",
        "POST|/v1/completions|{\"model\":\"m\",\"prompt\":[\"x\",[1]]}|400|invalid_request_error",
        "POST|/v1/responses|{\"model\":\"m\"}|400|invalid_request_error",
        "POST|/v1/responses|{\"model\":\"m\",\"input\":[\"x\"]}|400|invalid_request_error",
        "POST|/v1/responses|{\"model\":\"m\",\"input\":\"x\",\"instructions\":5}|400|invalid_request_error",
        "POST|/v1/responses|{\"model\":\"m\",\"input\":\"x\",\"max_output_tokens\":0}|400|invalid_request_error",
        "POST|/v1/nothing|{}|404|invalid_request_error",
        "GET|/v1/chat/completions||405|invalid_request_error",
        "POST|/admin/faults|{\"error_rate\":2}|400|invalid_request_error",
    })
    void badRequest_isAnsweredInOpenAisErrorShapeAndTheEngineKeepsServing(String method, String path, String body,
                                                                         int status, String type) {
        java.net.http.HttpRequest.Builder request = client.request(path).header("content-type", "application/json");
        request = method.equals("GET") ? request.GET()
                : request.POST(java.net.http.HttpRequest.BodyPublishers.ofString(body == null ? "" : body));

        HttpResponse<String> response = client.send(request.build());

        assertThat(response.statusCode()).isEqualTo(status);
        assertThat(response.headers().firstValue("x-engine-id")).hasValue("engine-a");
        JsonNode error = Client.json(response).get("error");
        assertThat(error.get("message").asText()).isNotEmpty();
        assertThat(error.get("type").asText()).isEqualTo(type);
        assertThat(error.has("code")).isTrue();
        assertThat(client.post("/v1/chat/completions", chat("")).statusCode()).isEqualTo(200);
    }

    private static JsonNode read(String event) {
        try {
            return Client.JSON.readTree(event);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void join(Thread t) {
        try {
            t.join(30_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    @Test
    void requests_manyOnOneKeptAliveConnection_allSucceed() {
        AtomicLong ok = new AtomicLong();
        IntStream.range(0, 50).forEach(i -> {
            if (client.post("/v1/completions", "{\"model\":\"m\",\"prompt\":\"p\",\"max_tokens\":1}").statusCode() == 200) {
                ok.incrementAndGet();
            }
        });

        assertThat(ok.get()).isEqualTo(50);
    }
}
