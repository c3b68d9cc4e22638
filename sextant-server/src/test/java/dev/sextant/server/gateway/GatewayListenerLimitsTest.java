package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.internal.Http;
import dev.sextant.server.internal.ListenerLimits;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The gateway's client listener bounded over all its clients, as the control plane's and the emulator's are: a cap on
 * open connections, and a budget of request bodies held while they arrive, so that clients that never finish their
 * bodies cannot take the direct memory the others need. Real sockets, one request or connection at a time by hand.
 */
class GatewayListenerLimitsTest {
    private static final int SAFETY_MILLIS = 10_000;
    /** The budget and the body limit: one MiB each, so that one unfinished body of 1,000,000 bytes fills it. */
    private static final int MIB = 1 << 20;
    private static LeakWatch leaks;
    private static Fleet fleet;

    @BeforeAll
    static void start() {
        leaks = LeakWatch.paranoid();
        fleet = new Fleet(0.2);
    }

    @AfterAll
    static void stop() {
        fleet.close();
        leaks.assertNoLeakThenClose();
    }

    private static Gateway gateway(ListenerLimits limits) {
        return Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false).withMaxBodyBytes(MIB)
                .withLimits(limits), SnapshotSource.fixed(fleet.snapshot()), 1);
    }

    @Test
    void connectionsOverTheCap_areClosedAtOnce_andAPlaceFreedIsTakenAgain() throws Exception {
        try (Gateway gw = gateway(GatewayConfig.defaults("gw").limits().withMaxConnections(3)
                .withMaxBufferedBodyBytes(MIB))) {
            List<RawHttp> idle = new ArrayList<>();
            try {
                idle.add(new RawHttp(gw.port(), SAFETY_MILLIS));
                idle.add(new RawHttp(gw.port(), SAFETY_MILLIS));
                idle.add(new RawHttp(gw.port(), SAFETY_MILLIS));
                assertThat(Fleet.await(() -> answersHealth(gw) == 0, Duration.ofSeconds(10)))
                        .as("a fourth connection is closed without an answer").isTrue();
                idle.remove(0).close();
                assertThat(Fleet.await(() -> answersHealth(gw) == 200, Duration.ofSeconds(10)))
                        .as("the place freed is taken again").isTrue();
            } finally {
                for (RawHttp c : idle) {
                    c.close();
                }
            }
            assertThat(Fleet.await(() -> metric(gw, "sextant_gateway_refused_connections_total") >= 1,
                    Duration.ofSeconds(10))).isTrue();
        }
    }

    @Test
    void bodiesOverTheBudget_get503BeforeTheyAreRead_inTheirTurn_andTheBudgetIsGivenBack() throws Exception {
        try (Gateway gw = gateway(GatewayConfig.defaults("gw").limits().withMaxBufferedBodyBytes(MIB))) {
            try (RawHttp holder = new RawHttp(gw.port(), SAFETY_MILLIS)) {
                // announces 1,000,000 bytes and sends 1,000 of them, then waits: it holds most of the budget
                holder.send("POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                        + "content-length: 1000000\r\n\r\n" + " ".repeat(1000));
                assertThat(Fleet.await(() -> metric(gw, "sextant_gateway_buffered_body_bytes") == 1_000_000,
                        Duration.ofSeconds(10))).isTrue();

                try (RawHttp c = new RawHttp(gw.port(), SAFETY_MILLIS)) { // announced, does not fit: refused unread
                    c.send("POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                            + "content-length: 100000\r\n\r\n");
                    assertOverloaded(c.read());
                    assertThat(c.closedByPeerAfterDraining()).isTrue();
                }
                try (RawHttp c = new RawHttp(gw.port(), SAFETY_MILLIS)) { // chunked, stops fitting on its way
                    c.send("POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                            + "transfer-encoding: chunked\r\n\r\n" + Integer.toHexString(60_000) + "\r\n"
                            + " ".repeat(60_000) + "\r\n");
                    assertOverloaded(c.read());
                    assertThat(c.closedByPeerAfterDraining()).isTrue();
                }
                try (RawHttp c = new RawHttp(gw.port(), SAFETY_MILLIS)) { // a small body fits; the one after it not
                    c.send(RawHttp.chatRequest(Fleet.chat("k", false, 2))
                            + "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                            + "content-length: 100000\r\n\r\n");
                    RawHttp.Answer first = c.read();
                    assertThat(first.status()).as("the first answer first").isEqualTo(200);
                    assertOverloaded(c.read());
                }
                assertThat(answersHealth(gw)).as("requests without a body are served").isEqualTo(200);
            }
            assertThat(Fleet.await(() -> metric(gw, "sextant_gateway_buffered_body_bytes") == 0,
                    Duration.ofSeconds(10))).as("given back when the holder left").isTrue();
            try (RawHttp c = new RawHttp(gw.port(), SAFETY_MILLIS)) {
                String big = Fleet.chat("k", false, 2).replace("hello", "h".repeat(500_000));
                c.send(RawHttp.chatRequest(big));
                assertThat(c.read().status()).as("a large body fits again").isEqualTo(200);
            }
            assertThat(metric(gw, "sextant_gateway_refused_bodies_total")).isEqualTo(3);
        }
    }

    private static void assertOverloaded(RawHttp.Answer a) throws IOException {
        assertThat(a).isNotNull();
        assertThat(a.status()).isEqualTo(503);
        assertThat(a.header("retry-after")).isEqualTo("1");
        JsonNode error = Http.JSON.readTree(a.body()).path("error");
        assertThat(error.path("code").asText()).isEqualTo("overloaded");
        assertThat(error.path("message").asText()).contains("max_buffered_body_bytes: " + MIB);
    }

    /** The status of {@code GET /healthz} on a new connection, 0 when it was closed without an answer. */
    private static int answersHealth(Gateway gw) {
        try (RawHttp c = new RawHttp(gw.port(), SAFETY_MILLIS)) {
            c.send("GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
            RawHttp.Answer a = c.read();
            return a == null ? 0 : a.status();
        } catch (IOException e) {
            return 0; // reset: closed at once
        }
    }

    private static double metric(Gateway gw, String name) {
        try (RawHttp c = new RawHttp(gw.port(), SAFETY_MILLIS)) {
            c.send("GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
            return c.readToClose().body().lines().filter(l -> l.startsWith(name + " "))
                    .mapToDouble(l -> Double.parseDouble(l.substring(l.indexOf(' ') + 1))).findFirst()
                    .orElseThrow(() -> new AssertionError("no " + name + " in /metrics"));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
