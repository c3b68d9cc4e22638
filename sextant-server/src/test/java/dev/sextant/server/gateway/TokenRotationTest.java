package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.auth.BearerToken;
import dev.sextant.server.control.ControlPlane;
import dev.sextant.server.control.ControlPlaneConfig;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A bearer token rotated without a restart: the control plane takes both tokens while its file lists both, the
 * gateway sends the new one once its own file has it, and the old one is refused once the control plane's file
 * drops it; snapshots and reports flow throughout.
 */
class TokenRotationTest {
    @TempDir
    Path dir;

    @Test
    void rotatedTokenFiles_takeEffectWithoutARestart_andNoRequestOfTheGatewayIsRefused() throws Exception {
        try (Fleet fleet = new Fleet(1)) {
            Path topology = dir.resolve("topology.yaml");
            Files.writeString(topology, fleet.yaml(150));
            Path cpTokens = dir.resolve("cp-token");
            Path gwToken = dir.resolve("gw-token");
            write(cpTokens, "old-token\n");
            write(gwToken, "old-token\n");
            ControlPlane cp = ControlPlane.start(ControlPlaneConfig.defaults(topology, "unused")
                    .withToken(BearerToken.file(cpTokens))
                    .withIntervals(Duration.ofHours(1), Duration.ofHours(1), Duration.ofHours(1), Duration.ofSeconds(1), 3)
                    .withDemand("configured")); // a publication follows the change of the file's demand below
            BearerToken gatewaySide = BearerToken.file(gwToken);
            GatewayConfig config = GatewayConfig.defaults("gw").withAccessLog(false)
                    .withControlPlane(cp.uri(), gatewaySide, Duration.ofMillis(200));
            try (cp; Gateway gw = Gateway.start(config,
                    SnapshotSource.longPoll(cp.uri(), "gw", gatewaySide, Duration.ofMillis(500), null), 1)) {
                assertThat(status(cp, "old-token")).isEqualTo(200);
                assertThat(status(cp, "new-token")).isEqualTo(401);

                write(cpTokens, "old-token\nnew-token\n"); // 1. the control plane takes both
                assertThat(Fleet.await(() -> status(cp, "new-token") == 200, Duration.ofSeconds(10))).isTrue();
                assertThat(status(cp, "old-token")).isEqualTo(200);
                write(gwToken, "new-token\n"); // 2. the gateway sends the new one
                assertThat(Fleet.await(() -> gatewaySide.current().equals("new-token"), Duration.ofSeconds(10)))
                        .as("the gateway's token, read again from its file").isTrue();
                double reportsBefore = counter(cp, "sextant_control_reports_total");
                assertThat(Fleet.await(() -> counter(cp, "sextant_control_reports_total") >= reportsBefore + 2,
                        Duration.ofSeconds(10))).as("reports sent with the new token").isTrue();
                write(cpTokens, "new-token\n"); // 3. the old one goes
                assertThat(Fleet.await(() -> status(cp, "old-token") == 401, Duration.ofSeconds(10))).isTrue();

                Files.writeString(topology, fleet.yaml(10));
                cp.tickNow();
                long version = cp.current().version();
                assertThat(version).isGreaterThan(1);
                assertThat(Fleet.await(() -> gw.plane().snapshot().version() == version, Duration.ofSeconds(20)))
                        .as("the gateway polls on with the new token").isTrue();
                double reportsAfter = counter(cp, "sextant_control_reports_total");
                assertThat(Fleet.await(() -> counter(cp, "sextant_control_reports_total") >= reportsAfter + 3,
                        Duration.ofSeconds(10))).as("reports taken after the old token went").isTrue();
                assertThat((long) counter(cp, "sextant_control_unauthorized_requests_total")).as("refusals: only this test's own probes with a token not (or no longer) in"
                        + " force, none of the gateway's polls and reports").isEqualTo(unauthorizedProbes);
            }
        }
    }

    private long unauthorizedProbes;

    private int status(ControlPlane cp, String token) {
        try {
            int s = Fleet.send(HttpRequest.newBuilder(URI.create(cp.uri() + "/v1/snapshot?gateway=gw"))
                    .header("authorization", "Bearer " + token).timeout(Duration.ofSeconds(10)).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode();
            if (s == 401) {
                unauthorizedProbes++;
            }
            return s;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** A counter of the control plane's {@code /metrics}, without labels. */
    private static double counter(ControlPlane cp, String name) {
        try {
            String metrics = Fleet.send(HttpRequest.newBuilder(URI.create(cp.uri() + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            return metrics.lines().filter(l -> l.startsWith(name + " "))
                    .mapToDouble(l -> Double.parseDouble(l.substring(l.indexOf(' ') + 1))).findFirst().orElseThrow();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Writes {@code text} with a modification time a second past the last, so that the change is always seen. */
    private static void write(Path f, String text) throws Exception {
        long before = Files.exists(f) ? Files.getLastModifiedTime(f).toMillis() : System.currentTimeMillis();
        Files.writeString(f, text);
        Files.setLastModifiedTime(f, FileTime.fromMillis(before + 1000));
    }
}
