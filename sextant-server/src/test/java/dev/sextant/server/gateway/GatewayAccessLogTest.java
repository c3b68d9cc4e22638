package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Every answer's {@code x-request-id} is in its access-log line, so an operator finds the line a client quotes. */
class GatewayAccessLogTest {
    private Fleet fleet;
    private Gateway gw;

    @BeforeEach
    void start() {
        fleet = new Fleet(1);
        gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(true), SnapshotSource.fixed(fleet.snapshot()), 1);
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
}
