package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.internal.Http;
import java.net.http.HttpResponse;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What the gateway makes of an engine's status line: a status that is no HTTP status, or a protocol switch no request
 * asked for, is a malformed answer (502, never passed on); an interim (1xx) answer is skipped for the answer after it;
 * an answer that has no content (204, 304, 205) reaches the client without the content or length an engine gave it
 * anyway. Found
 * by random edits of engines' answers: each of these once reached the client as it came (an HTTP/2 client refused
 * them all: status 0, a 101, a 100 as the final answer, a 204 with a length).
 */
class GatewayEngineStatusTest {
    private static final String BODY = "{\"id\":\"c\",\"object\":\"chat.completion\",\"model\":\"m\",\"choices\":[]}";

    private static HttpResponse<String> through(String answer, boolean stream) throws Exception {
        try (Fleet fleet = new Fleet(1);
             RawEngine engine = new RawEngine(answer, false);
             Gateway g = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false),
                     SnapshotSource.fixed(engine.behindEveryEngine(fleet.snapshot())), 1)) {
            HttpResponse<String> first = Fleet.post(g.port(), "/v1/chat/completions", Fleet.chat("s", stream, 1));
            // and the connections on both sides still serve: the same answer again
            HttpResponse<String> second = Fleet.post(g.port(), "/v1/chat/completions", Fleet.chat("s", stream, 1));
            assertThat(second.statusCode()).isEqualTo(first.statusCode());
            return first;
        }
    }

    @ParameterizedTest(name = "status {0}")
    @CsvSource({"0, status 0 (expected: 100 to 599)", "999, status 999 (expected: 100 to 599)",
        "101, status 101 (expected: an answer; no request asks for a switch of protocols)"})
    void statusThatIsNoAnswer_isAMalformedAnswer_502(int status, String why) throws Exception {
        HttpResponse<String> r = through("HTTP/1.1 " + status + " X\r\ncontent-type: application/json\r\n"
                + "content-length: " + BODY.length() + "\r\n\r\n" + BODY, false);

        assertThat(r.statusCode()).isEqualTo(502);
        assertThat(Http.JSON.readTree(r.body()).path("error").path("message").asText())
                .contains("sent a malformed HTTP response (" + why + ")");
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"100 Continue", "103 Early Hints\r\nlink: </style.css>; rel=preload"})
    void interimAnswer_isSkipped_andTheAnswerAfterItReachesTheClient(String interim) throws Exception {
        HttpResponse<String> r = through("HTTP/1.1 " + interim + "\r\n\r\nHTTP/1.1 200 OK\r\n"
                + "content-type: application/json\r\ncontent-length: " + BODY.length() + "\r\n\r\n" + BODY, false);

        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).isEqualTo(BODY);
        assertThat(r.headers().firstValue("link")).as("nothing of the interim answer").isEmpty();
    }

    /** A 205 has no content either (RFC 9110 §15.3.6), though framed: what an engine sent with it is dropped. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"content-length: 5\r\n\r\nhello", "transfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        "content-length: 0\r\n\r\n"})
    void resetContent_reachesTheClientWithoutContent_whateverTheEngineSentWithIt(String rest) throws Exception {
        HttpResponse<String> r = through("HTTP/1.1 205 Reset Content\r\n" + rest, false);

        assertThat(r.statusCode()).isEqualTo(205);
        assertThat(r.body()).isEmpty();
        assertThat(r.headers().firstValue("content-length").orElse("0")).isEqualTo("0");
    }

    @ParameterizedTest(name = "status {0}")
    @ValueSource(ints = {204, 304})
    void answerWithoutContent_reachesTheClientWithoutTheLengthTheEngineGaveIt(int status) throws Exception {
        HttpResponse<String> r = through("HTTP/1.1 " + status + " X\r\ncontent-length: 47\r\n\r\n", false);

        assertThat(r.statusCode()).isEqualTo(status);
        assertThat(r.body()).isEmpty();
        assertThat(r.headers().firstValue("content-length").orElse("0")).isEqualTo("0");
    }
}
