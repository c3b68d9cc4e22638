package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.internal.Http;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@code POST /v1/responses} through the gateway to emulated engines on loopback, as the other OpenAI endpoints. */
class GatewayResponsesApiTest {
    @RegisterExtension
    static final GatewayFixture GW = GatewayFixture.of(20, 1);



    private static String response(String instructions, boolean stream, int maxOutputTokens) {
        return "{\"model\":\"m\",\"stream\":" + stream + ",\"max_output_tokens\":" + maxOutputTokens
                + ",\"instructions\":\"" + instructions + "\",\"input\":[{\"role\":\"user\",\"content\":"
                + "[{\"type\":\"input_text\",\"text\":\"hello\"}]}]}";
    }

    @Test
    void notStreaming_passesTheEnginesResponseThrough_withSextantHeaders() throws Exception {
        HttpResponse<String> r = Fleet.post(GW.port(), "/v1/responses", response("be brief", false, 4));

        assertThat(r.statusCode()).isEqualTo(200);
        JsonNode body = Http.JSON.readTree(r.body());
        assertThat(body.path("object").asText()).isEqualTo("response");
        assertThat(body.path("output").get(0).path("content").get(0).path("type").asText()).isEqualTo("output_text");
        assertThat(body.path("usage").path("output_tokens").asInt()).isEqualTo(4);
        assertThat(r.headers().firstValue("x-sextant-engine")).isEqualTo(r.headers().firstValue("x-engine-id"));
        assertThat(r.headers().firstValue("x-sextant-attempts")).hasValue("1");
    }

    @Test
    void streaming_eventsReachTheClientAsTheyAreMade_andEndWithTheEnginesLastEvent() throws Exception {
        int tokens = 40; // 40 steps of 20 ms: the engine needs ~0.8 s for the whole answer
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + GW.port() + "/v1/responses"))
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(response("stream", true, tokens))).build();
        HttpResponse<Stream<String>> r = Fleet.send(req, HttpResponse.BodyHandlers.ofLines());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("content-type")).hasValueSatisfying(ct -> assertThat(ct)
                .startsWith("text/event-stream"));
        String engine = r.headers().firstValue("x-sextant-engine").orElseThrow();
        long atFirstDelta = -1;
        List<String> names = new ArrayList<>();
        List<String> data = new ArrayList<>();
        Iterator<String> lines = r.body().iterator();
        while (lines.hasNext()) {
            String line = lines.next();
            if (line.startsWith("event: ")) {
                names.add(line.substring(7));
                if (line.equals("event: response.output_text.delta") && atFirstDelta < 0) {
                    atFirstDelta = GW.fleet().engines.get(engine).generatedTokens();
                }
            } else if (line.startsWith("data: ")) {
                data.add(line.substring(6));
            }
        }
        assertThat(atFirstDelta).as("tokens the engine had made when the client got the first delta")
                .isBetween(0L, (long) tokens - 1);
        assertThat(names).first().isEqualTo("response.created");
        assertThat(names).last().as("max_output_tokens ended it").isEqualTo("response.incomplete");
        assertThat(names).filteredOn("response.output_text.delta"::equals).hasSize(tokens);
        assertThat(data).hasSameSizeAs(names).noneMatch(d -> d.startsWith("{\"error\""));
        assertThat(GW.gateway().plane().ejections()).as("a complete Responses stream is no failure of its engine").isEmpty();
    }

    @Test
    void aConversation_goesToOneEngine_whetherChatOrResponsesCarriesIt() throws Exception {
        for (int i = 0; i < 12; i++) {
            String system = "conversation " + i + " of a long-standing system prompt";
            HttpResponse<String> chat = Fleet.post(GW.port(), "/v1/chat/completions", "{\"model\":\"m\",\"max_tokens\":1,"
                    + "\"messages\":[{\"role\":\"system\",\"content\":\"" + system + "\"},{\"role\":\"user\","
                    + "\"content\":\"hello\"}]}");
            HttpResponse<String> resp = Fleet.post(GW.port(), "/v1/responses", response(system, false, 1));
            assertThat(resp.statusCode()).isEqualTo(200);
            assertThat(resp.headers().firstValue("x-sextant-engine")).as("conversation %d", i)
                    .isEqualTo(chat.headers().firstValue("x-sextant-engine"));
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            vLLM's field order, complete | event: response.completed\\ndata: {"response":{},"sequence_number":2,"type":"response.completed"}\\n\\n | false
            cut after a delta            | '' | true
            a chat stream's [DONE] only  | data: [DONE]\\n\\n | true
            """)
    void anEngineEndingAResponseStreamBeforeItsLastEvent_isAnErrorEventForTheClient(String name, String end,
                                                                                  boolean cut) throws Exception {
        String events = ("event: response.created\\ndata: {\"type\":\"response.created\",\"sequence_number\":0}\\n\\n"
                + "event: response.output_text.delta\\ndata: {\"type\":\"response.output_text.delta\","
                + "\"sequence_number\":1,\"delta\":\"hi\"}\\n\\n" + (end == null ? "" : end)).replace("\\n", "\n");
        String answer = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                + Integer.toHexString(events.length()) + "\r\n" + events + "\r\n0\r\n\r\n";
        try (RawEngine engine = new RawEngine(answer, false);
             Gateway g = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false),
                     SnapshotSource.fixed(engine.behindEveryEngine(GW.fleet().snapshot())), 1)) {
            HttpResponse<String> r = Fleet.post(g.port(), "/v1/responses", response("raw", true, 5));

            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).as("the engine's events reach the client").contains("\"delta\":\"hi\"");
            List<String> errors = r.body().lines().filter(l -> l.startsWith("data: {\"error\"")).toList();
            if (cut) {
                assertThat(errors).hasSize(1);
                assertThat(Http.JSON.readTree(errors.get(0).substring(6)).path("error").path("message").asText())
                        .contains("without a response.completed, response.incomplete or response.failed event");
            } else {
                assertThat(errors).as(r.body()).isEmpty();
            }
        }
    }
}
