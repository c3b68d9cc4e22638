package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sextant.server.control.ControlPlane;
import dev.sextant.server.control.ControlPlaneConfig;
import dev.sextant.server.tls.ServerTls;
import dev.sextant.server.tls.TlsContexts;
import dev.sextant.snapshot.Snapshot;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The bearer token never shows: not in any log record (every level), not in {@code /metrics} or {@code /healthz} of
 * the gateway and the control plane, not in error answers, not in a printed config, during normal running and
 * during authentication failures.
 */
class SecretsTest {
    @TempDir
    Path dir;

    @Test
    void token_isAbsentFromLogsMetricsHealthErrorsAndConfigs() throws Exception {
        byte[] random = new byte[12];
        new SecureRandom().nextBytes(random);
        String token = "sx-secret-" + HexFormat.of().formatHex(random);
        String wrongToken = "sx-wrong-" + HexFormat.of().formatHex(random);
        List<String> seen = new ArrayList<>(); // every text a user or operator could read
        try (LogCapture logs = new LogCapture(); Fleet fleet = new Fleet(1)) {
            Path file = Files.writeString(dir.resolve("topology.yaml"), fleet.yaml(150));
            ControlPlaneConfig cpConfig = ControlPlaneConfig.defaults(file, token).withIntervals(Duration.ofHours(1),
                    Duration.ofMillis(50), Duration.ofMillis(200), Duration.ofSeconds(5), 3);
            seen.add(cpConfig.toString());
            try (ControlPlane cp = ControlPlane.start(cpConfig)) {
                GatewayConfig config = GatewayConfig.defaults("gw").withControlPlane(cp.uri(), token, Duration.ofMillis(100));
                seen.add(config.toString());
                try (Gateway gw = Gateway.start(config, SnapshotSource.longPoll(cp.uri(), "gw", token, Duration.ofSeconds(5)), 2);
                     SnapshotSource wrong = SnapshotSource.longPoll(cp.uri(), "gw", wrongToken, Duration.ofSeconds(5));
                     Gateway wrongReports = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(true)
                             .withControlPlane(cp.uri(), wrongToken, Duration.ofMillis(100)),
                             SnapshotSource.fixed(cp.current()), 2)) {
                    // normal running: requests, reports, scrapes
                    for (int i = 0; i < 20; i++) {
                        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions",
                                Fleet.chat("k" + i, i % 2 == 0, 2), "authorization", "Bearer " + token);
                        assertThat(r.statusCode()).isEqualTo(200);
                        seen.add(r.headers().map().toString());
                        seen.add(Fleet.post(wrongReports.port(), "/v1/chat/completions", Fleet.chat("w" + i, false, 1))
                                .body());
                    }
                    // authentication failures: a gateway polling and reporting with the wrong token, and by hand
                    List<Snapshot> received = new ArrayList<>();
                    wrong.start(received::add);
                    for (String path : List.of("/v1/snapshot?gateway=gw", "/v1/explain?gateway=gw&class=chat")) {
                        for (String auth : List.of("Bearer " + wrongToken, "Bearer " + token + "x", "Basic " + token)) {
                            HttpResponse<String> r = Fleet.send(HttpRequest.newBuilder(URI.create(cp.uri() + path))
                                    .header("authorization", auth).timeout(Duration.ofSeconds(10)).GET().build(),
                                    HttpResponse.BodyHandlers.ofString());
                            assertThat(r.statusCode()).isEqualTo(401);
                            seen.add(r.body());
                            seen.add(r.headers().map().toString());
                        }
                    }
                    assertThat(Fleet.await(() -> logs.any("unreachable", "HTTP 401")
                            && logs.any("cannot send reports", "HTTP 401")
                            && logs.any("published snapshot"), Duration.ofSeconds(20))).isTrue();
                    assertThat(received).isEmpty();
                    // a bad TLS file's error does not quote the file
                    Path keyLike = Files.writeString(dir.resolve("key.pem"), token);
                    assertThatThrownBy(() -> TlsContexts.server(new ServerTls(keyLike, keyLike, null)))
                            .satisfies(e -> seen.add(String.valueOf(e.getMessage())));
                    for (int port : List.of(gw.port(), wrongReports.port(), cp.port())) {
                        seen.add(Fleet.get(port, "/metrics").body());
                        seen.add(Fleet.get(port, "/healthz").body());
                    }
                }
            }
            seen.addAll(logs.lines());
            assertThat(logs.lines()).as("the capture saw the servers' logs").anyMatch(l -> l.contains("/v1/chat/completions"));
        }
        assertThat(seen).hasSizeGreaterThan(50);
        for (String text : seen) {
            assertThat(text).doesNotContain(token).doesNotContain(wrongToken);
        }
    }
}
