package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Why this engine, on the wire: the data plane's reason in {@code x-sextant-reason}, in the access log and in
 * {@code sextant_gateway_decisions_total}, for an answer, a retried answer and refusals.
 */
class GatewayDecisionReasonTest {
    private Fleet fleet;
    private Gateway gw;
    private LogCapture log;

    @BeforeEach
    void start() {
        log = new LogCapture();
        fleet = new Fleet(1);
        gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(true), SnapshotSource.fixed(fleet.snapshot()), 1);
    }

    @AfterEach
    void stop() {
        gw.close();
        fleet.close();
        log.close();
    }

    private double decisions(String label) {
        Counter c = gw.metrics.registry.find("sextant.gateway.decisions").tag("reason", label).counter();
        assertThat(c).as("a counter for %s", label).isNotNull();
        return c.count();
    }

    private boolean logged(String... parts) throws InterruptedException {
        String[] all = new String[parts.length + 1];
        all[0] = "dev.sextant.gateway.access";
        System.arraycopy(parts, 0, all, 1, parts.length);
        return Fleet.await(() -> log.any(all), Duration.ofSeconds(5));
    }

    @Test
    void anAnswer_saysItsKeysEngineChoseIt_inTheHeader_theAccessLog_andTheCounter() throws Exception {
        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("why-1", true, 1));

        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("x-sextant-reason")).hasValue("key");
        String id = r.headers().firstValue("x-request-id").orElseThrow();
        assertThat(logged("attempts=1 reason=key ttft_ms=", "id=" + id)).as("%s", log.lines()).isTrue();
        assertThat(decisions("key")).isEqualTo(1);
        assertThat(gw.metrics.scrape()).contains("sextant_gateway_decisions_total{reason=\"key\"} 1.0")
                .as("every label from the start, at 0").contains("sextant_gateway_decisions_total{reason=\"refused:shed\"} 0.0")
                .as("each routed class's sheds from the start, at 0")
                .contains("sextant_gateway_sheds_total{class=\"chat\"} 0.0",
                        "sextant_gateway_sheds_total{class=\"chat-eu\"} 0.0")
                .as("its class's time to first token").contains("sextant_gateway_class_ttft_seconds_count{class=\"chat\"} 1");
    }

    @Test
    void aRetriedAnswer_saysWhyTheEngineThatAnswered() throws Exception {
        String first = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("why-retry", false, 1)).headers()
                .firstValue("x-sextant-engine").orElseThrow();
        fleet.engines.get(first).close(); // its port refuses: a connect error, then the key's next engine

        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("why-retry", false, 1));

        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("x-sextant-attempts")).hasValue("2");
        String reason = r.headers().firstValue("x-sextant-reason").orElseThrow();
        assertThat(reason).startsWith("retry:connect-error,");
        assertThat(logged("attempts=2 reason=" + reason + " ")).as("%s", log.lines()).isTrue();
        assertThat(decisions("key")).as("both requests' first attempts").isEqualTo(2);
        assertThat(decisions("retry:connect-error")).isEqualTo(1);
    }

    @Test
    void aRefusal_saysWhy_andARequestRefusedBeforeRoutingHasNoReason() throws Exception {
        HttpResponse<String> unknown = Fleet.post(gw.port(), "/v1/chat/completions",
                "{\"model\":\"gpt-9\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
        HttpResponse<String> malformed = Fleet.post(gw.port(), "/v1/chat/completions", "{\"model\":");

        assertThat(unknown.statusCode()).isEqualTo(404);
        assertThat(unknown.headers().firstValue("x-sextant-reason")).hasValue("refused:unknown-model");
        assertThat(logged(" 404 ", "reason=refused:unknown-model ")).as("%s", log.lines()).isTrue();
        assertThat(decisions("refused:unknown-model")).isEqualTo(1);

        assertThat(malformed.statusCode()).isEqualTo(400);
        assertThat(malformed.headers().firstValue("x-sextant-reason")).as("no decision was made").isEmpty();
        assertThat(logged(" 400 ", "reason=- ")).as("%s", log.lines()).isTrue();
    }

    @Test
    void retriesThatEndInARefusal_sayTheRefusal() throws Exception {
        String body = "{\"error\":{\"message\":\"boom\",\"type\":\"server_error\",\"param\":null,\"code\":null}}";
        String answer = "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: "
                + body.length() + "\r\n\r\n" + body;
        try (RawEngine engine = new RawEngine(answer, false);
             Gateway g = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false),
                     SnapshotSource.fixed(engine.behindEveryEngine(fleet.snapshot())), 1)) {
            // a stream (a 500 before its first event is retried; a non-streaming request's is not, it may have run)
            HttpResponse<String> r = Fleet.post(g.port(), "/v1/chat/completions", Fleet.chat("why-fail", true, 1));

            assertThat(r.statusCode()).isIn(502, 503);
            String reason = r.headers().firstValue("x-sextant-reason").orElseThrow();
            assertThat(reason).startsWith("refused:");
            assertThat(g.metrics.registry.find("sextant.gateway.decisions").tag("reason", reason).counter().count())
                    .isEqualTo(1);
        }
    }
}
