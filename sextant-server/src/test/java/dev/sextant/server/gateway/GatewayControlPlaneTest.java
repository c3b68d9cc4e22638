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
