package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.internal.Http;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * HTTP/1.0 clients (ApacheBench, old proxies and scripts): they know no chunked coding (RFC 9112 §6.1), so an answer
 * without a length reaches them delimited by the end of the connection.
 */
class GatewayHttp10Test {
    @RegisterExtension
    static final GatewayFixture GW = GatewayFixture.of(1, 1);



    private static String post(String version, String connection, String body) {
        return "POST /v1/chat/completions " + version + "\r\nContent-Type: application/json\r\n" + connection
                + "Content-Length: " + body.length() + "\r\n\r\n" + body;
    }

    @Test
    void streamingToAnHttp10Client_isNotChunked_andEndsWithTheConnection() throws Exception {
        for (String connection : new String[] {"", "Connection: keep-alive\r\n"}) {
            try (RawHttp c = new RawHttp(GW.port(), 5000)) {
                RawHttp.Answer a = c.send(post("HTTP/1.0", connection, Fleet.chat("k10", true, 4))).readToClose();
                assertThat(a.status()).as(connection).isEqualTo(200);
                assertThat(a.header("transfer-encoding")).as(connection).isNull();
                assertThat(a.header("connection")).as(connection).isEqualToIgnoringCase("close");
                assertThat(a.body()).as(connection).startsWith("data: {").endsWith("data: [DONE]\n\n")
                        .doesNotContainPattern("(?m)^[0-9a-f]+\r$"); // no chunk-size lines in the events
            }
        }
    }

    @Test
    void nonStreamingToAnHttp10KeepAliveClient_hasALength_andTheConnectionServesTheNextRequest() throws Exception {
        try (RawHttp c = new RawHttp(GW.port(), 5000)) {
            for (int i = 0; i < 2; i++) {
                RawHttp.Answer a = c.send(post("HTTP/1.0", "Connection: keep-alive\r\n", Fleet.chat("k10", false, 2)))
                        .read();
                assertThat(a.status()).isEqualTo(200);
                assertThat(a.header("content-length")).isNotNull();
                assertThat(Http.JSON.readTree(a.body()).path("choices").get(0).path("message").path("content").asText())
                        .isNotEmpty();
            }
        }
    }

    @Test
    void streamingToAnHttp11Client_staysChunked_andTheConnectionOpen() throws Exception {
        try (RawHttp c = new RawHttp(GW.port(), 5000)) {
            for (int i = 0; i < 2; i++) {
                RawHttp.Answer a = c.send(post("HTTP/1.1", "Host: gw\r\n", Fleet.chat("k11", true, 3))).read();
                assertThat(a.status()).isEqualTo(200);
                assertThat(a.header("transfer-encoding")).isEqualTo("chunked");
                assertThat(a.body()).endsWith("data: [DONE]\n\n");
            }
        }
    }
}
