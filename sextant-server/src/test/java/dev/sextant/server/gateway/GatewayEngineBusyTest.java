package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import dev.sextant.server.internal.Http;
import java.net.InetSocketAddress;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Engines that answer "too busy" (429, or 503) to everything: what the client is told once retries are spent. */
class GatewayEngineBusyTest {
    private final List<HttpServer> engines = new ArrayList<>();
    private final AtomicInteger hits = new AtomicInteger();
    private Gateway gw;

    @AfterEach
    void stop() {
        if (gw != null) {
            gw.close();
        }
        engines.forEach(e -> e.stop(0));
    }

    /** Two engines answering {@code status} with {@code headers} (name, value, …) to every request. */
    private void start(int status, String... headers) throws Exception {
        int[] ports = new int[2];
        int n = 0;
        for (String id : List.of("e1", "e2")) {
            HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
            s.createContext("/", ex -> {
                hits.incrementAndGet();
                ex.getRequestBody().readAllBytes();
                for (int i = 0; i + 1 < headers.length; i += 2) {
                    ex.getResponseHeaders().add(headers[i], headers[i + 1]);
                }
                byte[] body = ("{\"error\":{\"message\":\"" + id + " is full\"}}").getBytes(StandardCharsets.UTF_8);
                ex.sendResponseHeaders(status, body.length);
                ex.getResponseBody().write(body);
                ex.close();
            });
            s.start();
            engines.add(s);
            ports[n++] = s.getAddress().getPort();
        }
        var snapshot = Fleet.standIns(ports);
        gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false), SnapshotSource.fixed(snapshot), 1);
    }

    private static HttpResponse<String> chat(Gateway gw) throws Exception {
        return Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1));
    }

    @Test
    void everyEngineAnswers429_clientGets429WithTheEnginesRetryAfter_notA502() throws Exception {
        start(429, "Retry-After", "7");
        HttpResponse<String> r = chat(gw);
        assertThat(r.statusCode()).isEqualTo(429);
        assertThat(r.headers().firstValue("retry-after")).hasValue("7");
        assertThat(r.headers().firstValue("x-sextant-overloaded")).hasValue("true");
        assertThat(Integer.parseInt(r.headers().firstValue("x-sextant-attempts").orElseThrow())).isGreaterThan(1);
        assertThat(hits.get()).isGreaterThan(1); // retried on the other engine first
        JsonNode error = Http.JSON.readTree(r.body()).path("error");
        assertThat(error.path("type").asText()).isEqualTo("rate_limit_error");
        assertThat(error.path("code").asText()).isEqualTo("overloaded");
        assertThat(error.path("message").asText()).contains("answered 429").contains("is full");
    }

    @Test
    void everyEngineAnswers503_clientGets503WithARetryAfter() throws Exception {
        start(503);
        HttpResponse<String> r = chat(gw);
        assertThat(r.statusCode()).isEqualTo(503);
        assertThat(r.headers().firstValue("retry-after")).hasValue("1");
        assertThat(Http.JSON.readTree(r.body()).path("error").path("code").asText()).isEqualTo("overloaded");
    }

    @Test
    void anEngineSayingTheWholeSystemIsOverloaded_isNotRetried_andTheClientGets429() throws Exception {
        start(429, "x-sextant-overloaded", "true", "Retry-After", "3");
        HttpResponse<String> r = chat(gw);
        assertThat(r.statusCode()).isEqualTo(429);
        assertThat(r.headers().firstValue("x-sextant-attempts")).hasValue("1");
        assertThat(r.headers().firstValue("retry-after")).hasValue("3");
        assertThat(hits.get()).isEqualTo(1);
    }

    @Test
    void retryAfter_isTakenInSecondsOnly_withinASecondAndADay() {
        assertThat(Exchange.retryAfterSeconds("7")).isEqualTo(Duration.ofSeconds(7));
        assertThat(Exchange.retryAfterSeconds(" 12 ")).isEqualTo(Duration.ofSeconds(12));
        assertThat(Exchange.retryAfterSeconds("0")).isEqualTo(Duration.ofSeconds(1));
        assertThat(Exchange.retryAfterSeconds("100000")).isEqualTo(Duration.ofDays(1));
        assertThat(Exchange.retryAfterSeconds("Wed, 21 Oct 2015 07:28:00 GMT")).isNull();
        assertThat(Exchange.retryAfterSeconds("-3")).isNull();
        assertThat(Exchange.retryAfterSeconds("99999999999")).isNull();
        assertThat(Exchange.retryAfterSeconds(null)).isNull();
    }
}
