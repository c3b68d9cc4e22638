package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.control.ControlPlane;
import dev.sextant.server.control.ControlPlaneConfig;
import dev.sextant.server.internal.Http;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A gateway fed by a control plane's long-poll, and what happens when the control plane goes away. */
class GatewayControlPlaneTest {
    @TempDir
    Path dir;

    /**
     * An engine that takes requests and never starts them (the emulator's hang fault) has the gauges of an idle engine
     * and counters that do not move; only its gateway knows it holds requests. Its reports say so, and the control plane
     * judges it stalled.
     */
    @Test
    void anEngineThatTakesRequestsAndNeverStartsThem_isStalledOnItsGatewaysReports() throws Exception {
        try (Fleet fleet = new Fleet(1)) {
            Path file = dir.resolve("topology.yaml");
            Files.writeString(file, fleet.yaml(150));
            ControlPlane cp = ControlPlane.start(ControlPlaneConfig.defaults(file, "tok").withIntervals(
                    Duration.ofSeconds(1), Duration.ofMillis(200), Duration.ofMillis(500), Duration.ofSeconds(1), 3));
            GatewayConfig config = GatewayConfig.defaults("gw").withAccessLog(false)
                    .withTimeouts(Duration.ofSeconds(2), Duration.ofSeconds(60), Duration.ofSeconds(60),
                            Duration.ofSeconds(60))
                    .withControlPlane(cp.uri(), "tok", Duration.ofSeconds(1));
            try (cp; Gateway gw = Gateway.start(config, SnapshotSource.longPoll(cp.uri(), "gw", "tok",
                    Duration.ofSeconds(20)), 2)) {
                fleet.engines.get("eu-1").setFaults(new dev.sextant.server.engine.Faults(0, 1, true, -1));
                java.util.List<java.util.concurrent.CompletableFuture<HttpResponse<String>>> sent =
                        new java.util.ArrayList<>();
                for (int i = 0; i < 40; i++) { // whole answers: no stream for the gateway to watch
                    sent.add(Fleet.HTTP.sendAsync(java.net.http.HttpRequest.newBuilder(java.net.URI.create(
                            "http://127.0.0.1:" + gw.port() + "/v1/chat/completions")).timeout(Duration.ofSeconds(90))
                            .header("content-type", "application/json").POST(java.net.http.HttpRequest.BodyPublishers
                                    .ofString(Fleet.chat("c" + i, false, 1))).build(), HttpResponse.BodyHandlers.ofString()));
                }
                assertThat(Fleet.await(() -> fleet.engines.get("eu-1").hungRequests() > 0, Duration.ofSeconds(20)))
                        .as("some of them placed on eu-1").isTrue();

                assertThat(Fleet.await(() -> condition(cp, "eu-1").equals("stalled"), Duration.ofSeconds(60))).isTrue();
                assertThat(engine(cp, "eu-1").path("why").asText()).contains("showed no sign of work");
                assertThat(Fleet.await(() -> cp.current().route("gw", "chat").weights().getOrDefault("eu-1", 0.0)
                        == 0.0, Duration.ofSeconds(10))).isTrue();
                assertThat(condition(cp, "eu-2")).isEqualTo("healthy");
            }
        }
    }

    /** The control plane's view of {@code engine} in its {@code /healthz}. */
    private static JsonNode engine(ControlPlane cp, String engine) {
        try {
            return Http.JSON.readTree(Fleet.HTTP.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(
                    cp.uri() + "/healthz")).build(), HttpResponse.BodyHandlers.ofString()).body()).path("engines")
                    .path(engine);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static String condition(ControlPlane cp, String engine) {
        return engine(cp, engine).path("condition").asText();
    }

    @Test
    void gatewayFollowsNewSnapshots_andKeepsServingWhenTheControlPlaneStops() throws Exception {
        try (Fleet fleet = new Fleet(1)) {
            Path file = dir.resolve("topology.yaml");
            Files.writeString(file, fleet.yaml(150));
            // the topology's demand, changed in the file below (the gateway's reports would say how few requests came)
            ControlPlane cp = ControlPlane.start(ControlPlaneConfig.defaults(file, "tok").withIntervals(
                    Duration.ofHours(1), Duration.ofHours(1), Duration.ofHours(1), Duration.ofSeconds(1), 3)
                    .withDemand("configured"));
            GatewayConfig config = GatewayConfig.defaults("gw").withAccessLog(false)
                    .withControlPlane(cp.uri(), "tok", Duration.ofMillis(200));
            try (Gateway gw = Gateway.start(config, SnapshotSource.longPoll(cp.uri(), "gw", "tok", Duration.ofSeconds(20)), 2)) {
                HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("a", false, 1));
                assertThat(r.statusCode()).isEqualTo(200);
                assertThat(r.headers().firstValue("x-sextant-snapshot-version")).hasValue("1");

                Files.writeString(file, fleet.yaml(10));
                cp.tickNow();
                assertThat(cp.current().version()).isEqualTo(2);
                assertThat(Fleet.await(() -> gw.plane().snapshot().version() == 2, Duration.ofSeconds(20))).isTrue();
                assertThat(Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("a", false, 1))
                        .headers().firstValue("x-sextant-snapshot-version")).hasValue("2");

                cp.close(); // the control plane is gone: static stability
                for (int i = 0; i < 60; i++) {
                    HttpResponse<String> during = Fleet.post(gw.port(), "/v1/chat/completions",
                            Fleet.chat("k" + i, i % 2 == 0, 2));
                    assertThat(during.statusCode()).isEqualTo(200);
                    assertThat(during.headers().firstValue("x-sextant-snapshot-version")).hasValue("2");
                }
                JsonNode health = Http.JSON.readTree(Fleet.get(gw.port(), "/healthz").body());
                assertThat(health.path("status").asText()).isEqualTo("ok");
                assertThat(health.path("snapshot_version").asLong()).isEqualTo(2);
            }
        }
    }
}
