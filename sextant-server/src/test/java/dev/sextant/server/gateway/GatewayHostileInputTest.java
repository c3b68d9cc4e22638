package dev.sextant.server.gateway;

import dev.sextant.server.internal.ClientLimits;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.internal.Http;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Requests built to confuse a proxy, sent byte for byte on a real socket: request smuggling shapes, oversized heads,
 * path traversal, header folding, and bodies over the limit. Each gets a clear 4xx; nothing after a refused request
 * is parsed as another request; the gateway keeps serving.
 */
class GatewayHostileInputTest {
    private static final int MAX_BODY = 4096;
    private static final int MAX_HEAD = 2048;
    @RegisterExtension
    static final GatewayFixture GW = GatewayFixture.of(1, 2, c -> c.withMaxBodyBytes(MAX_BODY)
            .withClientLimits(new ClientLimits(Duration.ofSeconds(5), Duration.ofSeconds(5), MAX_HEAD))).watchingLeaks();



    private static final String SMUGGLED = "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n";

    /** The cases, with {@code \r\n} written as {@code |}; each ends with a request hidden where a body would be. */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = ';', textBlock = """
            Content-Length and Transfer-Encoding ; Content-Length: 4|Transfer-Encoding: chunked||0||
            two Content-Length headers           ; Content-Length: 4|Content-Length: 40||abcd
            Content-Length list                  ; Content-Length: 4, 40||abcd
            chunked then identity                ; Transfer-Encoding: chunked, identity||4|abcd|0||
            unknown transfer coding              ; Transfer-Encoding: xchunked||4|abcd|0||
            Transfer-Encoding folded (obs-fold)  ; Transfer-Encoding:| chunked||4|abcd|0||
            space before the colon               ; Transfer-Encoding : chunked||4|abcd|0||
            chunk size not hex                   ; Transfer-Encoding: chunked||zz|abcd|0||
            negative chunk size                  ; Transfer-Encoding: chunked||-4|abcd|0||
            chunk size overflow                  ; Transfer-Encoding: chunked||FFFFFFFFFFFFFFFFF|abcd|0||
            chunk data without its CRLF          ; Transfer-Encoding: chunked||4|abcdXX0||
            Content-Length with a sign           ; Content-Length: +4||abcd
            Content-Length not a number          ; Content-Length: 4x||abcd
            """)
    void smugglingShape_is400AndClose_andNothingAfterItIsParsed(String name, String headAndBody) throws Exception {
        String raw = "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n" + headAndBody.replace("|", "\r\n") + SMUGGLED;
        try (RawHttp c = new RawHttp(GW.port(), 5000)) {
            RawHttp.Answer a = c.send(raw).read();
            assertThat(a).as("an answer").isNotNull();
            assertThat(a.status()).isEqualTo(400);
            assertThat(a.header("connection")).isEqualToIgnoringCase("close");
            assertThat(Http.JSON.readTree(a.body()).path("error").path("code").asText()).isEqualTo("malformed_request");
            assertThat(c.closedByPeer()).as("closed, and no second answer for the hidden request").isTrue();
        }
        assertStillServing();
    }

    /** Written with {@code |} for CR LF, {@code ~} for a bare LF, {@code ^} for a bare CR, {@code @} for NUL. */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = ';', textBlock = """
            bare LF line endings       ; POST /v1/chat/completions HTTP/1.1~Host: gw~Content-Length: 0~~
            CR inside a header value   ; POST /v1/chat/completions HTTP/1.1|Host: gw|X-A: a^b|Content-Length: 0||
            NUL inside a header value  ; POST /v1/chat/completions HTTP/1.1|Host: gw|X-A: a@b|Content-Length: 0||
            Transfer-Encoding in 1.0   ; POST /v1/chat/completions HTTP/1.0|Host: gw|Transfer-Encoding: chunked||0||
            space inside the target    ; GET /healthz x HTTP/1.1|Host: gw||
            """)
    void malformedHead_is400AndClose(String name, String written) throws Exception {
        String raw = written.replace("|", "\r\n").replace("~", "\n").replace("^", "\r").replace("@", "\0");
        try (RawHttp c = new RawHttp(GW.port(), 5000)) {
            RawHttp.Answer a = c.send(raw + SMUGGLED).read();
            assertThat(a.status()).isEqualTo(400);
            assertThat(c.closedByPeer()).isTrue();
        }
        assertStillServing();
    }

    @Test
    void foldedHeaderValue_becomesOneValueWithASpace_neverASecondHeader() throws Exception {
        String body = Fleet.chat(null, false, 1);
        String raw = "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
                + "X-Request-Id: abc\r\n x-sextant-engine: evil\r\nContent-Length: " + body.length() + "\r\n\r\n" + body;
        try (RawHttp c = new RawHttp(GW.port(), 10000)) {
            RawHttp.Answer a = c.send(raw).read();
            assertThat(a.status()).isEqualTo(200);
            // RFC 9112 §5.2: obs-fold replaced by a space; it never starts a header of its own
            assertThat(a.header("x-request-id")).isEqualTo("abc x-sextant-engine: evil");
            assertThat(a.header("x-sextant-engine")).isIn(GW.fleet().engines.keySet());
        }
    }

    @Test
    void headerBlockOverTheLimit_is431AndClose() throws Exception {
        String raw = "GET /healthz HTTP/1.1\r\nHost: gw\r\nX-Big: " + "a".repeat(MAX_HEAD + 10) + "\r\n\r\n";
        try (RawHttp c = new RawHttp(GW.port(), 5000)) {
            RawHttp.Answer a = c.send(raw).read();
            assertThat(a.status()).isEqualTo(431);
            assertThat(Http.JSON.readTree(a.body()).path("error").path("code").asText()).isEqualTo("headers_too_large");
            assertThat(c.closedByPeer()).isTrue();
        }
        assertStillServing();
    }

    @Test
    void manySmallHeadersOverTheLimit_is431() throws Exception {
        StringBuilder raw = new StringBuilder("GET /healthz HTTP/1.1\r\nHost: gw\r\n");
        for (int i = 0; i < 300; i++) {
            raw.append("X-H").append(i).append(": v\r\n");
        }
        try (RawHttp c = new RawHttp(GW.port(), 5000)) {
            assertThat(c.send(raw.append("\r\n").toString()).read().status()).isEqualTo(431);
            assertThat(c.closedByPeer()).isTrue();
        }
    }

    @Test
    void requestLineOverTheLimit_is414AndClose() throws Exception {
        String raw = "GET /healthz?" + "q".repeat(MAX_HEAD + 10) + " HTTP/1.1\r\nHost: gw\r\n\r\n";
        try (RawHttp c = new RawHttp(GW.port(), 5000)) {
            RawHttp.Answer a = c.send(raw).read();
            assertThat(a.status()).isEqualTo(414);
            assertThat(c.closedByPeer()).isTrue();
        }
        assertStillServing();
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"/metrics/../healthz", "/metrics/..", "/%2e%2e/metrics", "/%2E%2E/%2E%2E/etc/passwd",
            "/healthz/../../../etc/passwd", "/./metrics", "//metrics", "/metrics%00", "/metrics%2f", "/v1/../metrics",
            "/v1%2Fmodels", "/..%2fmetrics", "/static/../../etc/passwd", "/metrics/", "/healthz;/..", "*",
            "http://127.0.0.1/../metrics"})
    void traversalOrEncodedPath_is404InOpenAiShape_neverAFile(String target) throws Exception {
        try (RawHttp c = new RawHttp(GW.port(), 5000)) {
            RawHttp.Answer a = c.send("GET " + target + " HTTP/1.1\r\nHost: gw\r\n\r\n").read();
            assertThat(a.status()).isEqualTo(404);
            JsonNode error = Http.JSON.readTree(a.body()).path("error");
            assertThat(error.path("code").asText()).isEqualTo("unknown_url");
            assertThat(a.body()).doesNotContain("root:").doesNotContain("sextant_gateway_");
            assertThat(a.header("content-type")).isEqualTo("application/json");
        }
    }

    @Test
    void encodedSlashesInAProxiedPath_are404_notClassifiedAsChat() throws Exception {
        String body = Fleet.chat(null, false, 1);
        String raw = "POST /v1%2Fchat%2Fcompletions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + body.length() + "\r\n\r\n" + body;
        try (RawHttp c = new RawHttp(GW.port(), 5000)) {
            RawHttp.Answer a = c.send(raw).read();
            assertThat(a.status()).isEqualTo(404);
            assertThat(a.header("x-sextant-engine")).isNull();
        }
    }

    @Test
    void absoluteFormTargets_areServedAsTheirPath() throws Exception {
        assertThat(FrontHandler.originForm("http://gw:8080/v1/models?x=1")).isEqualTo("/v1/models?x=1");
        assertThat(FrontHandler.originForm("HTTPS://gw")).isEqualTo("/");
        assertThat(FrontHandler.originForm("http://gw?q")).isEqualTo("/?q");
        assertThat(FrontHandler.originForm("/healthz")).isEqualTo("/healthz");
        String body = Fleet.chat("absolute", false, 1);
        String raw = "POST http://gw.example/v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + body.length() + "\r\n\r\n" + body
                + "GET http://gw.example/healthz HTTP/1.1\r\nHost: gw\r\n\r\n";
        try (RawHttp c = new RawHttp(GW.port(), 5000)) {
            c.send(raw);
            RawHttp.Answer chat = c.read();
            assertThat(chat.status()).isEqualTo(200);
            assertThat(chat.header("x-sextant-engine")).isNotNull();
            RawHttp.Answer health = c.read();
            assertThat(health.status()).isEqualTo(200);
            assertThat(Http.JSON.readTree(health.body()).has("status")).isTrue();
        }
    }

    @ParameterizedTest(name = "{0} body bytes, declared={1}")
    @CsvSource({"20000, true", "20000, false", "900000, true", "900000, false"})
    void bodyOverTheLimit_is413_afterTheGatewayReadTheRestOfTheBody_soTheClientSeesIt(int size, boolean declared)
            throws Exception {
        byte[] payload = new byte[size];
        Arrays.fill(payload, (byte) 'x');
        try (RawHttp c = new RawHttp(GW.port(), 10000)) {
            String head = "POST /v1/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
                    + (declared ? "Content-Length: " + size + "\r\n\r\n" : "Transfer-Encoding: chunked\r\n\r\n");
            c.send(head);
            if (declared) {
                c.send(payload); // would fail with a reset (or block) if the gateway stopped reading at the 413
            } else {
                for (int off = 0; off < size; off += 8192) {
                    int n = Math.min(8192, size - off);
                    c.send(Integer.toHexString(n) + "\r\n");
                    c.send(Arrays.copyOfRange(payload, off, off + n));
                    c.send("\r\n");
                }
                c.send("0\r\n\r\n");
            }
            RawHttp.Answer a = c.read();
            assertThat(a).isNotNull();
            assertThat(a.status()).isEqualTo(413);
            assertThat(a.header("connection")).isEqualToIgnoringCase("close");
            assertThat(Http.JSON.readTree(a.body()).path("error").path("code").asText()).isEqualTo("request_too_large");
            assertThat(c.closedByPeer()).isTrue();
        }
        assertStillServing();
    }

    @Test
    void bodyOverTheLimitAnnouncedWithExpectContinue_is413InOpenAiShape_beforeTheBodyIsSent() throws Exception {
        long before = GW.gateway().metrics.oversized.sum();
        try (RawHttp c = new RawHttp(GW.port(), 10000)) {
            c.send("POST /v1/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: "
                    + (MAX_BODY + 1) + "\r\nExpect: 100-continue\r\n\r\n");
            RawHttp.Answer a = c.read(); // no 100 Continue first: the body is refused unsent
            assertThat(a).isNotNull();
            assertThat(a.status()).isEqualTo(413);
            assertThat(a.header("connection")).isEqualToIgnoringCase("close");
            JsonNode error = Http.JSON.readTree(a.body()).path("error");
            assertThat(error.path("code").asText()).isEqualTo("request_too_large");
            assertThat(error.path("type").asText()).isEqualTo("invalid_request_error");
            assertThat(error.path("message").asText()).contains(Integer.toString(MAX_BODY));
            assertThat(c.closedByPeer()).isTrue();
        }
        assertThat(GW.gateway().metrics.oversized.sum()).isEqualTo(before + 1);
        assertStillServing();
    }

    @Test
    void bodyFarOverTheDrainBound_endsTheConnection_withoutHangingTheGateway() throws Exception {
        byte[] block = new byte[64 * 1024];
        try (RawHttp c = new RawHttp(GW.port(), 10000)) {
            c.socket.setSoTimeout(10000);
            c.send("POST /v1/completions HTTP/1.1\r\nHost: gw\r\nContent-Length: 104857600\r\n\r\n");
            IOException failure = null;
            try {
                for (int i = 0; i < 1600; i++) { // 100 MiB, far beyond the 1 MiB drained after the 413
                    c.send(block);
                }
            } catch (IOException e) {
                failure = e;
            }
            assertThat(failure).as("the gateway stopped reading and closed").isNotNull();
        }
        assertStillServing();
    }

    private static void assertStillServing() throws Exception {
        java.net.http.HttpResponse<String> ok = Fleet.post(GW.port(), "/v1/chat/completions", Fleet.chat(null, false, 1));
        assertThat(ok.statusCode()).isEqualTo(200);
    }

    static String text(byte[] b) {
        return new String(b, StandardCharsets.ISO_8859_1);
    }
}
