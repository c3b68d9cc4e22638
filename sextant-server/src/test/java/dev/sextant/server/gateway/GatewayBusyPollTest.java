package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.engine.Faults;
import dev.sextant.server.internal.Http;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A gateway whose event loop polls without sleeping ({@code busy_poll: true}) serves as any other. */
class GatewayBusyPollTest {
    Fleet fleet;
    Gateway gw;

    @BeforeEach
    void start() {
        fleet = new Fleet(5);
        GatewayConfig config = GatewayConfig.defaults("gw").withAccessLog(false).withBusyPoll(true)
                .withTimeouts(Duration.ofSeconds(1), Duration.ofMillis(300), Duration.ofMillis(300), Duration.ofSeconds(20));
        gw = Gateway.start(config, SnapshotSource.fixed(fleet.snapshot()), 1);
    }

    @AfterEach
    void stop() {
        gw.close();
        fleet.close();
    }

    @Test
    void answersAndStreams() throws Exception {
        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 3));
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(Http.JSON.readTree(r.body()).path("choices").get(0).path("message").path("content").asText())
                .isNotEmpty();
        HttpResponse<String> s = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", true, 3));
        assertThat(s.statusCode()).isEqualTo(200);
        assertThat(s.body()).contains("data: ").endsWith("data: [DONE]\n\n");
    }

    @Test
    void timeoutsFire_onAGatewayWithNothingElseToDo() throws Exception {
        fleet.engines.values().forEach(e -> e.setFaults(new Faults(0, 1, true, -1)));
        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("all-hang", false, 1));
        assertThat(r.statusCode()).isEqualTo(504);
        JsonNode error = Http.JSON.readTree(r.body()).path("error");
        assertThat(error.path("message").asText()).contains("first_byte_timeout");
    }

    @Test
    void theEventLoopKeepsItsCpuBusyWhileIdle() throws Exception {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long id = gw.loops().next().submit(() -> Thread.currentThread().getId()).get(10, TimeUnit.SECONDS);
        long before = threads.getThreadCpuTime(id);
        Thread.sleep(1000);
        long spent = threads.getThreadCpuTime(id) - before;
        // a loop that sleeps until a socket is ready spends next to nothing here, with no request in flight
        assertThat(spent).as("CPU ns of the event loop over 1 s without requests").isGreaterThan(100_000_000L);
    }
}
