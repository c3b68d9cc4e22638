package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Every answer's {@code x-request-id} is in its access-log line, so an operator finds the line a client quotes. */
class GatewayAccessLogTest {
    private Fleet fleet;
    private Gateway gw;

    @BeforeEach
    void start() {
        fleet = new Fleet(1);
        gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(true).withMaxBodyBytes(4096),
                SnapshotSource.fixed(fleet.snapshot()), 1);
    }

    @AfterEach
    void stop() {
        gw.close();
        fleet.close();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            answered       | 200 | {"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}
            malformed body | 400 | {"model":"m","messages":[
            unknown model  | 404 | {"model":"nope","messages":[{"role":"user","content":"hi"}]}
            """)
    void theAnswersRequestId_isInItsAccessLogLine(String name, int status, String body) throws Exception {
        try (LogCapture log = new LogCapture()) {
            HttpResponse<String> own = Fleet.post(gw.port(), "/v1/chat/completions", body);
            HttpResponse<String> given = Fleet.post(gw.port(), "/v1/chat/completions", body, "x-request-id", "ticket-42");

            assertThat(own.statusCode()).isEqualTo(status);
            String ownId = own.headers().firstValue("x-request-id").orElseThrow();
            assertThat(given.headers().firstValue("x-request-id")).hasValue("ticket-42");
            assertThat(Fleet.await(() -> log.any("dev.sextant.gateway.access", " " + status + " ", "id=ticket-42"),
                    Duration.ofSeconds(5))).isTrue();
            assertThat(log.any("dev.sextant.gateway.access", " " + status + " ", "id=" + ownId)).isTrue();
        }
    }

    /**
     * What a client writes reaches a log line escaped: a model name with a line break (a JSON string's {@code \n}), a
     * residency header with a C1 control (obs-text, which HTTP allows in a value) cannot end the line and begin a
     * forged one. Every access-log line is one line, with the client's text in it escaped.
     */
    @Test
    void clientTextWithLineBreaks_staysOnItsLine_escaped() throws Exception {
        try (LogCapture log = new LogCapture()) {
            HttpResponse<String> model = Fleet.post(gw.port(), "/v1/chat/completions", "{\"model\":\"nope\\n"
                    + "12:00:00.000 INFO dev.sextant.gateway.access: gw POST /v1/chat/completions 200\",\"messages\":"
                    + "[{\"role\":\"user\",\"content\":\"hi\"}]}", "x-request-id", "forge-1");
            HttpResponse<String> header = Fleet.post(gw.port(), "/v1/chat/completions",
                    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", "x-request-id", "forge-2",
                    "x-sextant-residency", "eu\u0085west");
            assertThat(model.statusCode()).isEqualTo(404);
            assertThat(header.statusCode()).isEqualTo(400);
            assertThat(Fleet.await(() -> log.any("dev.sextant.gateway.access", "id=forge-1", "model 'nope\\n12:00:00")
                    && log.any("dev.sextant.gateway.access", "id=forge-2", "eu\\u0085west"), Duration.ofSeconds(5)))
                    .as(log.lines().toString()).isTrue();
            assertThat(log.lines()).filteredOn(l -> l.contains(" dev.sextant.gateway.access: "))
                    .allSatisfy(l -> assertThat(l).doesNotContainPattern("[\\p{Cc}\\u2028\\u2029]"));
            assertThat(log.any("dev.sextant.gateway.access", "id=forge-1", "class=- engine=-")).isTrue();
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            unknown path   | POST | /v1/nothing          | 404 | unknown path: POST /v1/nothing
            wrong method   | GET  | /v1/chat/completions | 405 | GET
            body too large | POST | /v1/chat/completions | 413 | 4096
            """)
    void aRefusalMadeBeforeAnyRouting_hasARequestId_andALine(String name, String method, String path, int status,
                                                            String says) throws Exception {
        try (LogCapture log = new LogCapture()) {
            java.net.http.HttpRequest.Builder b = java.net.http.HttpRequest.newBuilder(
                    java.net.URI.create("http://127.0.0.1:" + gw.port() + path)).timeout(Duration.ofSeconds(10));
            b = method.equals("GET") ? b.GET() : b.POST(java.net.http.HttpRequest.BodyPublishers.ofString(
                    status == 413 ? "{\"model\":\"m\",\"pad\":\"" + "x".repeat(8192) + "\"}" : "{}"));
            HttpResponse<String> r = Fleet.send(b.build(), HttpResponse.BodyHandlers.ofString());

            assertThat(r.statusCode()).isEqualTo(status);
            String id = r.headers().firstValue("x-request-id").orElseThrow();
            assertThat(Fleet.await(() -> log.any("dev.sextant.gateway.access", method + " " + path + " " + status + " ",
                    "id=" + id, says), Duration.ofSeconds(5))).as(log.lines().toString()).isTrue();
        }
    }

    /** An {@code Upgrade: h2c} request with {@code head} lines added and {@code body} sent as given; read to the close. */
    private String upgradeExchange(String head, String body) throws Exception {
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", gw.port())) {
            socket.setSoTimeout(10_000);
            String request = "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                    + "connection: Upgrade, HTTP2-Settings, close\r\nupgrade: h2c\r\nhttp2-settings: AAMAAABkAAQAAP__\r\n"
                    + head + "\r\n" + body;
            socket.getOutputStream().write(request.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
            socket.getOutputStream().flush();
            return new String(socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.ISO_8859_1);
        }
    }

    @org.junit.jupiter.api.Test
    void anUpgradeRequestWithABodyOverTheLimit_getsTheGateways413_notABodilessOne() throws Exception {
        String body = "{\"model\":\"m\",\"pad\":\"" + "x".repeat(8192) + "\"}";
        String answer = upgradeExchange("content-length: " + body.length() + "\r\n", body);

        assertThat(answer).startsWith("HTTP/1.1 413 ").contains("x-request-id: ").contains("\"code\":\"request_too_large\"")
                .contains("limit of 4096 bytes");
    }

    @org.junit.jupiter.api.Test
    void aChunkedUpgradeRequest_isAnsweredInHttp11() throws Exception {
        String body = "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
        String chunked = Integer.toHexString(body.length()) + "\r\n" + body + "\r\n0\r\n\r\n";
        String answer = upgradeExchange("transfer-encoding: chunked\r\n", chunked);

        assertThat(answer).startsWith("HTTP/1.1 200 ").contains("chat.completion");
    }
}
