package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.engine.Faults;
import dev.sextant.server.internal.Http;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code busy_poll}: event loops that never sleep still do everything a sleeping loop does, including what no socket
 * event triggers (a request's timeout, a task or shutdown handed over by another thread). A loop that missed those
 * would hang the gateway's start or close, so each is guarded: a hang fails the test instead.
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class GatewayBusyPollTest {
    Fleet fleet;
    Gateway gw;

    @BeforeEach
    void start() {
        fleet = new Fleet(2);
        // the start hands the loop a task of its own (which thread it is, for the CPU counter) and waits for it
        gw = assertTimeoutPreemptively(Duration.ofSeconds(30),
                () -> Gateway.start(config(true), SnapshotSource.fixed(fleet.snapshot()), 1));
    }

    @AfterEach
    void stop() {
        try {
            if (gw != null) {
                assertTimeoutPreemptively(Duration.ofSeconds(30), gw::close);
            }
        } finally {
            fleet.close();
        }
    }

    private static GatewayConfig config(boolean busyPoll) {
        return GatewayConfig.defaults("gw").withAccessLog(false).withBusyPoll(busyPoll)
                .withTimeouts(Duration.ofSeconds(1), Duration.ofMillis(300), Duration.ofMillis(300), Duration.ofSeconds(20));
    }

    @Test
    void busyPolling_answersPlainAndStreamingRequests() throws Exception {
        HttpResponse<String> plain = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("plain", false, 3));
        assertThat(plain.statusCode()).isEqualTo(200);
        assertThat(Http.JSON.readTree(plain.body()).path("choices").path(0).path("message").path("content").asText())
                .isNotEmpty();

        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gw.port() + "/v1/chat/completions"))
                .timeout(Duration.ofSeconds(20)).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(Fleet.chat("stream", true, 5))).build();
        HttpResponse<String> streamed = Fleet.send(req, HttpResponse.BodyHandlers.ofString());
        assertThat(streamed.statusCode()).isEqualTo(200);
        List<String> data = streamed.body().lines().filter(l -> l.startsWith("data: ")).collect(Collectors.toList());
        assertThat(data).as("every token's event, then the end").hasSizeGreaterThanOrEqualTo(6)
                .last().isEqualTo("data: [DONE]");
    }

    @Test
    void busyPolling_stillFiresATimeout_whileNoSocketHasAnythingToRead() throws Exception {
        // every engine accepts the request and never answers: only the loop's timer can end it
        fleet.engines.values().forEach(e -> e.setFaults(new Faults(0, 1, true, -1)));
        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("hang", true, 1));
        assertThat(r.statusCode()).isEqualTo(504);
        JsonNode error = Http.JSON.readTree(r.body()).path("error");
        assertThat(error.path("code").asText()).isEqualTo("timeout");
        assertThat(error.path("message").asText()).contains("first_token_timeout");
    }

    @Test
    void busyPolling_closesWhenAskedFromAnotherThread_withNoSocketEvent() throws Exception {
        assertThat(Fleet.get(gw.port(), "/healthz").statusCode()).isEqualTo(200);
        // close() hands the loop its shutdown as a task from this thread, with no socket event to go with it: a
        // spinning loop that looked only at its sockets would never take it (the guard turns that hang into a failure)
        assertTimeoutPreemptively(Duration.ofSeconds(30), gw::close);
        assertThatThrownBy(() -> new java.net.Socket("127.0.0.1", gw.port()).close()).as("the listener is gone")
                .isInstanceOf(java.net.ConnectException.class);
    }
}
