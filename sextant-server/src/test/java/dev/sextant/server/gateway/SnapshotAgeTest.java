package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import dev.sextant.config.SnapshotJson;
import dev.sextant.request.DataPlaneOptions;
import dev.sextant.server.internal.Http;
import dev.sextant.snapshot.Snapshot;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** What a gateway does with snapshots that age, and with a publisher that goes back in versions. */
class SnapshotAgeTest {

    @Test
    void oldSnapshot_switchesToFallback_saysSoInHealthAndMetrics_andStillServes() throws Exception {
        try (Fleet fleet = new Fleet(1);
             Gateway gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false)
                     .withOptions(DataPlaneOptions.builder().maxSnapshotAge(Duration.ofMillis(200)).build()),
                     SnapshotSource.fixed(fleet.snapshot()), 1)) {
            assertThat(Fleet.await(() -> gw.plane().status().ageNanos() > Duration.ofMillis(200).toNanos(),
                    Duration.ofSeconds(10))).isTrue();
            java.net.http.HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions",
                    Fleet.chat("old", false, 1), "x-sextant-residency", "eu-west");
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("x-sextant-engine").orElseThrow()).startsWith("eu-");
            JsonNode health = Http.JSON.readTree(Fleet.get(gw.port(), "/healthz").body());
            assertThat(health.path("status").asText()).isEqualTo("fallback");
            assertThat(health.path("fallback").asBoolean()).isTrue();
            assertThat(Fleet.get(gw.port(), "/metrics").body()).contains("sextant_gateway_fallback 1.0");
        }
    }

    @Test
    void controlPlaneCadence_isTheSourcesWhenNotConfigured() throws Exception {
        URI nowhere; // nothing listens there: the gateway opens without a snapshot, which is enough here
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            nowhere = URI.create("http://127.0.0.1:" + s.getLocalPort());
        }
        GatewayConfig config = GatewayConfig.defaults("gw").withAccessLog(false);
        try (Gateway gw = Gateway.open(config, SnapshotSource.longPoll(nowhere, "gw", "tok", Duration.ofSeconds(7)), 1)) {
            assertThat(gw.dataPlaneOptions().controlPlaneCadence()).isEqualTo(Duration.ofSeconds(7));
        }
        try (Gateway gw = Gateway.open(config.withOptions(DataPlaneOptions.builder()
                .controlPlaneCadence(Duration.ofSeconds(2)).build()),
                SnapshotSource.longPoll(nowhere, "gw", "tok", Duration.ofSeconds(7)), 1)) {
            assertThat(gw.dataPlaneOptions().controlPlaneCadence()).isEqualTo(Duration.ofSeconds(2)); // configured
        }
        try (Fleet fleet = new Fleet(1);
             Gateway gw = Gateway.start(config, SnapshotSource.fixed(fleet.snapshot()), 1)) {
            assertThat(gw.dataPlaneOptions().controlPlaneCadence()).isNull(); // a fixed snapshot has no cadence
        }
    }

    @Test
    void longPoll_refusesAnOlderVersion_andKeepsTheNewerOne() throws Exception {
        try (Fleet fleet = new Fleet(1)) {
            Snapshot base = fleet.snapshot();
            List<String> bodies = List.of(SnapshotJson.write(base.sealed(5)), SnapshotJson.write(base.sealed(3)));
            AtomicInteger calls = new AtomicInteger();
            List<String> auth = new CopyOnWriteArrayList<>();
            // a publisher that misbehaves: version 5, then version 3 on every later poll
            HttpServer publisher = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
            publisher.createContext("/v1/snapshot", ex -> {
                auth.add(ex.getRequestHeaders().getFirst("authorization"));
                byte[] body = bodies.get(Math.min(1, calls.getAndIncrement())).getBytes(StandardCharsets.UTF_8);
                ex.sendResponseHeaders(200, body.length);
                ex.getResponseBody().write(body);
                ex.close();
            });
            publisher.start();
            List<Long> delivered = new CopyOnWriteArrayList<>();
            try (SnapshotSource source = SnapshotSource.longPoll(URI.create("http://127.0.0.1:"
                    + publisher.getAddress().getPort()), "gw", "tok", Duration.ofSeconds(1))) {
                source.start(s -> delivered.add(s.version()));
                assertThat(Fleet.await(() -> calls.get() >= 3, Duration.ofSeconds(10))).isTrue();
            } finally {
                publisher.stop(0);
            }
            assertThat(delivered).containsOnly(5L);
            assertThat(auth).first().isEqualTo("Bearer tok");
        }
    }
}
