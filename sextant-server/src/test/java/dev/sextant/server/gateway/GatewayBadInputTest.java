package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.internal.Http;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Bad requests get the right 4xx in OpenAI's error shape, and the gateway keeps serving. */
class GatewayBadInputTest {
    @RegisterExtension
    static final GatewayFixture GW = GatewayFixture.of(1, 2, c -> c.withMaxBodyBytes(4096));



    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            malformed JSON     | POST | /v1/chat/completions | {"model": "m",          | 400 | malformed JSON | -
            not an object      | POST | /v1/chat/completions | [1, 2]                  | 400 | expected: a JSON object | -
            empty body         | POST | /v1/completions      | ''                      | 400 | empty body | -
            missing model      | POST | /v1/chat/completions | {"messages": []}        | 400 | model: missing | model
            model not a string | POST | /v1/chat/completions | {"model": 5}            | 400 | model: 5 | model
            stream not boolean | POST | /v1/chat/completions | {"model": "m", "stream": "yes"} | 400 | stream | stream
            messages not array | POST | /v1/chat/completions | {"model": "m", "messages": "hi"} | 400 | messages | messages
            user not a string  | POST | /v1/chat/completions | {"model": "m", "user": {}} | 400 | user | user
            cache key a number | POST | /v1/chat/completions | {"model": "m", "prompt_cache_key": 7} | 400 | prompt_cache_key | prompt_cache_key
            unknown model      | POST | /v1/chat/completions | {"model": "gpt-9"}      | 404 | gpt-9 | model
            unknown path       | POST | /v1/nothing          | {"model": "m"}          | 404 | unknown path | -
            wrong method       | GET  | /v1/chat/completions | ''                      | 405 | use POST | -
            POST to /metrics   | POST | /metrics             | ''                      | 405 | use GET or HEAD | -
            POST to a model    | POST | /v1/models/m         | ''                      | 405 | use GET or HEAD | -
            model not routed   | GET  | /v1/models/gpt-9     | ''                      | 404 | 'gpt-9' is not routed | model
            model id escaped   | GET  | /v1/models/org%2Fm   | ''                      | 404 | 'org/m' is not routed | model
            """)
    void badRequest_getsTheRightStatusInOpenAiShape_andTheGatewayKeepsServing(String name, String method, String path,
                                                                               String body, int status, String says,
                                                                               String param)
            throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + GW.port() + path))
                .timeout(Duration.ofSeconds(10)).header("content-type", "application/json");
        b = "GET".equals(method) ? b.GET() : b.POST(HttpRequest.BodyPublishers.ofString(body));
        HttpResponse<String> r = Fleet.send(b.build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(status);
        if (status == 405) { // RFC 9110 §15.5.6: a 405 says which methods the resource takes
            assertThat(r.headers().firstValue("allow")).hasValue(path.startsWith("/v1/chat") ? "POST" : "GET, HEAD");
        }
        JsonNode error = Http.JSON.readTree(r.body()).path("error");
        assertThat(error.path("message").asText()).contains(says);
        assertThat(error.has("type")).isTrue();
        assertThat(error.has("code")).isTrue();
        assertThat(error.has("param")).isTrue();
        assertThat(error.path("param").isNull() ? "-" : error.path("param").asText())
                .as("param names the body field the message names, null (-) when none").isEqualTo(param);
        assertStillServing();
    }

    @Test
    void modelIdWithABrokenPercentEscape_is400() throws Exception {
        try (RawHttp c = new RawHttp(GW.port(), 5000)) { // a client that refuses to send such a URI cannot test it
            RawHttp.Answer a = c.send("GET /v1/models/m%zz HTTP/1.1\r\nHost: gw\r\n\r\n").read();
            assertThat(a.status()).isEqualTo(400);
            JsonNode error = Http.JSON.readTree(a.body()).path("error");
            assertThat(error.path("message").asText()).contains("model id");
            assertThat(error.path("param").asText()).isEqualTo("model");
        }
        assertStillServing();
    }

    @ParameterizedTest(name = "body of {0} bytes")
    @CsvSource({"5000", "100000"})
    void oversizedBody_is413InOpenAiShape(int size) throws Exception {
        String body = "{\"model\":\"m\",\"prompt\":\"" + "x".repeat(size) + "\"}";
        HttpResponse<String> r = Fleet.post(GW.port(), "/v1/completions", body);
        assertThat(r.statusCode()).isEqualTo(413);
        assertThat(Http.JSON.readTree(r.body()).path("error").path("code").asText()).isEqualTo("request_too_large");
        assertStillServing();
    }

    /**
     * A gzip-compressed body is refused as such (415, {@code Accept-Encoding: identity}), not read as malformed JSON;
     * {@code identity} is no coding and is served.
     */
    @ParameterizedTest(name = "content-encoding {0}")
    @CsvSource({"gzip, 415", "'identity, gzip', 415", "identity, 200"})
    void compressedBody_is415_namingTheCoding(String coding, int status) throws Exception {
        byte[] json = Fleet.chat(null, false, 1).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] body = json;
        if (!coding.equals("identity")) {
            java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
            try (java.util.zip.GZIPOutputStream z = new java.util.zip.GZIPOutputStream(out)) {
                z.write(json);
            }
            body = out.toByteArray();
        }
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + GW.port() + "/v1/chat/completions"))
                .timeout(Duration.ofSeconds(10)).header("content-type", "application/json")
                .header("content-encoding", coding).POST(HttpRequest.BodyPublishers.ofByteArray(body)).build();
        HttpResponse<String> r = Fleet.send(req, HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(status);
        if (status == 415) {
            JsonNode error = Http.JSON.readTree(r.body()).path("error");
            assertThat(error.path("message").asText()).isEqualTo(
                    "content-encoding: gzip is not supported (expected: an uncompressed body)");
            assertThat(error.path("code").asText()).isEqualTo("unsupported_content_encoding");
            assertThat(r.headers().firstValue("accept-encoding")).hasValue("identity");
        }
        assertStillServing();
    }

    private static void assertStillServing() throws Exception {
        HttpResponse<String> ok = Fleet.post(GW.port(), "/v1/chat/completions", Fleet.chat(null, false, 1));
        assertThat(ok.statusCode()).isEqualTo(200);
    }
}
