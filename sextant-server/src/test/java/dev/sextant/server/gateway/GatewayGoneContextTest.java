package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Snapshot;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A conversation back after its engine's cache has dropped its context is placed as a new one, through a running
 * gateway: the gateway's own table of when each conversation's last request ended, read against the snapshot's
 * {@code context_kept_seconds} (docs/request-path.md §4, "Spacing new conversations").
 */
class GatewayGoneContextTest {
    /** Engines that take 100 ms a token: a long answer holds its engine while the test routes beside it. */
    private final Fleet fleet = new Fleet(100);
    private final java.util.List<CompletableFuture<?>> held = new java.util.ArrayList<>();

    @AfterEach
    void stop() {
        held.forEach(f -> f.cancel(true));
        fleet.close();
    }

    /** {@code s} with every engine's cache keeping a context {@code seconds} after its last request. */
    private static Snapshot keeping(Snapshot s, double seconds) {
        Map<String, EngineState> engines = new LinkedHashMap<>();
        s.engines().forEach((id, e) -> engines.put(id, e.withContextKeptSeconds(seconds)));
        return s.withEngines(engines);
    }

    /**
     * The reason the second request of a conversation is routed by, on a gateway holding {@code snapshot}: its first
     * answered, then a long answer of another conversation held on the same engine while the second is routed.
     */
    private String secondRequestsReason(Snapshot snapshot) throws Exception {
        try (Gateway gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false), SnapshotSource.fixed(snapshot),
                1)) {
            HttpResponse<String> first = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("back", false, 1));
            assertThat(first.statusCode()).isEqualTo(200);
            String engine = first.headers().firstValue("x-sextant-engine").orElseThrow();
            String other = null;
            for (int i = 0; other == null; i++) {
                HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("other-" + i, false, 1));
                if (engine.equals(r.headers().firstValue("x-sextant-engine").orElseThrow())) {
                    other = "other-" + i;
                }
            }
            held.add(Fleet.HTTP.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gw.port()
                            + "/v1/chat/completions")).header("content-type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(Fleet.chat(other, true, 300))).build(),
                    HttpResponse.BodyHandlers.discarding()));
            assertThat(Fleet.await(() -> gw.plane().inFlight(engine) == 1, Duration.ofSeconds(10)))
                    .as("the long answer held on %s", engine).isTrue();

            HttpResponse<String> second = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("back", false, 1));
            assertThat(second.statusCode()).isEqualTo(200);
            String reason = second.headers().firstValue("x-sextant-reason").orElseThrow();
            assertThat(second.headers().firstValue("x-sextant-engine").orElseThrow().equals(engine))
                    .as("stayed on its engine exactly when its reason is its key: %s", reason)
                    .isEqualTo(reason.equals("key"));
            return reason;
        }
    }

    @Test
    void aConversationWhoseContextIsGone_isSpacedLikeANewOne() throws Exception {
        // a cache that keeps nothing: any time away is more than twice its time
        assertThat(secondRequestsReason(keeping(fleet.snapshot(), 0))).isEqualTo("spaced:prefill");
    }

    @Test
    void aConversationWhoseContextMayStillBeThere_keepsItsEngine() throws Exception {
        assertThat(secondRequestsReason(keeping(fleet.snapshot(), 3600))).isEqualTo("key");
        assertThat(secondRequestsReason(fleet.snapshot())).as("a snapshot without the time").isEqualTo("key");
    }
}
