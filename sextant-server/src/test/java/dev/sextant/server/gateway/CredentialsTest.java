package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.auth.BearerToken;
import dev.sextant.server.auth.CredentialsFileTest;
import dev.sextant.server.auth.CredentialsFile;
import dev.sextant.server.control.ControlPlane;
import dev.sextant.server.control.ControlPlaneConfig;
import dev.sextant.server.internal.Http;
import dev.sextant.server.internal.ListenerHardeningTest;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The control plane's credentials file, on real sockets: a token per gateway cluster that reads only its own
 * snapshot view and reports only for its own cluster, an operator's token that does everything, rotation and
 * revocation by rewriting the file while everything runs, and a malformed file that leaves the credentials in force.
 */
class CredentialsTest {
    static final String OPERATOR = "op-token-4d1e";
    static final String GW = "gw-token-91ab";
    static final String GW2 = "gw2-token-c07f";
    static final String REPORT_GW = "{\"gateway\":\"gw\",\"interval_seconds\":5,\"demand_rps\":{\"chat\":1}}";
    static final String REPORT_GW2 = "{\"gateway\":\"gw2\",\"interval_seconds\":5,\"demand_rps\":{\"chat\":1}}";

    @TempDir
    static Path dir;
    static Fleet fleet;
    static Path topology;

    @BeforeAll
    static void start() throws Exception {
        fleet = new Fleet(1);
        topology = dir.resolve("topology.yaml");
        // a second gateway cluster, gw2 in us-east, beside the fleet's gw
        Files.writeString(topology, fleet.yaml(150)
                .replace("gateway_clusters: [{id: gw, region: eu-west}]",
                        "gateway_clusters: [{id: gw, region: eu-west}, {id: gw2, region: us-east}]")
                .replace("network_rtt_ms: {gw: {c-eu: 2, c-us: 10}}",
                        "network_rtt_ms: {gw: {c-eu: 2, c-us: 10}, gw2: {c-eu: 10, c-us: 2}}")
                .replace(", chat-eu: 40}}", ", chat-eu: 40}, gw2: {chat: 50}}"));
    }

    @AfterAll
    static void stop() {
        fleet.close();
    }

    /** A control plane on {@code credentials}, looking at its files every 50 ms, solving only when asked. */
    private static ControlPlane controlPlane(Path credentials) throws Exception {
        return ControlPlane.start(ControlPlaneConfig.defaults(topology, "unused")
                .withCredentials(CredentialsFile.load(credentials))
                .withIntervals(Duration.ofHours(1), Duration.ofMillis(50), Duration.ofHours(1), Duration.ofSeconds(1), 3));
    }

    @Test
    void aGatewayClustersToken_readsAndReportsForItsOwnClusterOnly_andTheOperatorsForAll() throws Exception {
        Path file = dir.resolve("roles.yaml");
        Files.writeString(file, credentials(entry(OPERATOR, "operator", null), entry(GW, "gateway", "gw"),
                entry(GW2, "gateway", "gw2")));
        try (ControlPlane cp = controlPlane(file)) {
            assertThat(call(cp, "GET", "/v1/snapshot?gateway=gw", null, GW).statusCode()).isEqualTo(200);
            assertThat(call(cp, "GET", "/v1/snapshot?gateway=gw2", null, GW2).statusCode()).isEqualTo(200);
            assertThat(call(cp, "POST", "/v1/reports", REPORT_GW, GW).statusCode()).isEqualTo(204);
            double reports = metric(cp, "sextant_control_reports_total");

            HttpResponse<String> other = call(cp, "GET", "/v1/snapshot?gateway=gw2", null, GW);
            assertForbidden(other, "gateway cluster gw's; it may not read the snapshot view of gateway cluster gw2");
            assertForbidden(call(cp, "GET", "/v1/snapshot?gateway=gw", null, GW2), "gateway cluster gw2's");
            assertForbidden(call(cp, "POST", "/v1/reports", REPORT_GW2, GW),
                    "it may not report for gateway cluster gw2");
            assertForbidden(call(cp, "GET", "/v1/explain?gateway=gw&class=chat", null, GW), "operator's token");
            assertThat(metric(cp, "sextant_control_reports_total")).as("a refused report is not taken")
                    .isEqualTo(reports);
            assertThat(refusals(cp, "other_gateway_cluster")).isEqualTo(3);
            assertThat(refusals(cp, "operator_only")).isEqualTo(1);

            for (String path : new String[] {"/v1/snapshot?gateway=gw", "/v1/snapshot?gateway=gw2",
                "/v1/explain?gateway=gw&class=chat", "/v1/explain?gateway=gw2&class=chat"}) {
                assertThat(call(cp, "GET", path, null, OPERATOR).statusCode()).as(path).isEqualTo(200);
            }
            assertThat(call(cp, "POST", "/v1/reports", REPORT_GW2, OPERATOR).statusCode()).isEqualTo(204);

            assertThat(call(cp, "GET", "/v1/snapshot?gateway=gw", null, "wrong").statusCode()).isEqualTo(401);
            assertThat(call(cp, "GET", "/v1/snapshot?gateway=gw", null, null).statusCode()).isEqualTo(401);
            HttpResponse<String> basic = Fleet.send(HttpRequest.newBuilder(URI.create(cp.uri() + "/v1/snapshot?gateway=gw"))
                    .header("authorization", "Basic " + GW).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(basic.statusCode()).isEqualTo(401);
            HttpResponse<String> lower = Fleet.send(HttpRequest.newBuilder(URI.create(cp.uri() + "/v1/snapshot?gateway=gw"))
                    .header("authorization", "bearer " + GW).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(lower.statusCode()).as("the scheme in any case").isEqualTo(200);
            HttpResponse<String> two = Fleet.send(HttpRequest.newBuilder(URI.create(cp.uri() + "/v1/snapshot?gateway=gw"))
                    .header("authorization", "Bearer " + GW).header("authorization", "Bearer " + OPERATOR).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(two.statusCode()).as("two tokens: ambiguous, whichever comes first").isEqualTo(401);
            HttpResponse<String> same = Fleet.send(HttpRequest.newBuilder(URI.create(cp.uri() + "/v1/snapshot?gateway=gw"))
                    .header("authorization", "Basic x").header("authorization", "Bearer " + GW)
                    .header("authorization", "Bearer " + GW).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(same.statusCode()).as("one token, however often").isEqualTo(200);
            assertThat(refusals(cp, "ambiguous")).isEqualTo(1);
            assertThat(refusals(cp, "unknown_token")).isEqualTo(1);
            assertThat(refusals(cp, "missing")).isEqualTo(1);
            assertThat(refusals(cp, "malformed")).isEqualTo(1);
            assertThat(metric(cp, "sextant_control_unauthorized_requests_total")).isEqualTo(4);
            assertThat(Fleet.get(cp.port(), "/metrics").body()).as("no digest is shown")
                    .doesNotContain(sha256(GW)).doesNotContain(GW);
        }
    }

    @Test
    void anUnknownTokenIsRefusedOnTheHead_andAGatewayTokenForAnotherCluster_too() throws Exception {
        Path file = dir.resolve("head.yaml");
        Files.writeString(file, credentials(entry(GW, "gateway", "gw")));
        try (ControlPlane cp = controlPlane(file)) {
            // announces 1 MB and sends 1 KB of it: the answer comes before the rest is sent, and the connection closes
            String answer = raw(cp.port(), "POST /v1/reports HTTP/1.1\r\nhost: x\r\nauthorization: Bearer nope\r\n"
                    + "content-type: application/json\r\ncontent-length: 1000000\r\n\r\n" + "{".repeat(1000));
            assertThat(answer).startsWith("HTTP/1.1 401 ").contains("\"code\":\"unauthorized\"");
            answer = raw(cp.port(), "GET /v1/snapshot?gateway=gw2 HTTP/1.1\r\nhost: x\r\nauthorization: Bearer " + GW
                    + "\r\ncontent-length: 1000000\r\n\r\n" + "{".repeat(1000));
            assertThat(answer).startsWith("HTTP/1.1 403 ").contains("\"code\":\"forbidden\"");
        }
    }

    @Test
    void rotation_byRewritingTheFile_takesEffectWithoutARestart_andTheGatewayIsNeverRefused() throws Exception {
        Path file = dir.resolve("rotation.yaml");
        Path gwToken = dir.resolve("gw-token");
        String old = "gw-old-3a5c";
        String fresh = "gw-new-b8d2";
        Files.writeString(file, credentials(entry(OPERATOR, "operator", null), entry(old, "gateway", "gw")));
        Files.writeString(gwToken, old + "\n");
        try (ControlPlane cp = controlPlane(file)) {
            BearerToken gatewaySide = BearerToken.file(gwToken);
            GatewayConfig config = GatewayConfig.defaults("gw").withAccessLog(false)
                    .withControlPlane(cp.uri(), gatewaySide, Duration.ofMillis(100));
            try (Gateway gw = Gateway.start(config,
                    SnapshotSource.longPoll(cp.uri(), "gw", gatewaySide, Duration.ofMillis(300), null), 1)) {
                assertThat(Fleet.await(() -> gw.plane().snapshot() != null, Duration.ofSeconds(20))).isTrue();
                assertThat(status(cp, fresh)).isEqualTo(401);

                // 1. the new token is added beside the old one
                Fleet.rewrite(file, credentials(entry(OPERATOR, "operator", null), entry(old, "gateway", "gw"),
                        entry(fresh, "gateway", "gw")));
                assertThat(Fleet.await(() -> status(cp, fresh) == 200, Duration.ofSeconds(20))).isTrue();
                assertThat(status(cp, old)).isEqualTo(200);
                // 2. the gateway is given the new token
                Fleet.rewrite(gwToken, fresh + "\n");
                java.nio.file.attribute.FileTime later = java.nio.file.attribute.FileTime.fromMillis(
                        System.currentTimeMillis() + 2000); // a modification time the token file's check cannot miss
                Files.setLastModifiedTime(gwToken, later);
                assertThat(Fleet.await(() -> gatewaySide.current().equals(fresh), Duration.ofSeconds(20))).isTrue();
                double reports = metric(cp, "sextant_control_reports_total");
                assertThat(Fleet.await(() -> metric(cp, "sextant_control_reports_total") >= reports + 2,
                        Duration.ofSeconds(20))).as("reports with the new token").isTrue();
                // 3. the old one is revoked
                Fleet.rewrite(file, credentials(entry(OPERATOR, "operator", null), entry(fresh, "gateway", "gw")));
                assertThat(Fleet.await(() -> status(cp, old) == 401, Duration.ofSeconds(20))).as("revoked").isTrue();

                double after = metric(cp, "sextant_control_reports_total");
                assertThat(Fleet.await(() -> metric(cp, "sextant_control_reports_total") >= after + 3,
                        Duration.ofSeconds(20))).as("reports taken after the old token went").isTrue();
                assertThat(metric(cp, "sextant_control_credentials_reloads_total")).isEqualTo(2);
                assertThat(metric(cp, "sextant_control_unauthorized_requests_total"))
                        .as("only this test's own probes were refused, none of the gateway's polls and reports")
                        .isEqualTo(probesRefused);
            }
        }
    }

    @Test
    void aMalformedFile_isRefusedWithFileLineAndField_andTheCredentialsInForceStay() throws Exception {
        Path file = dir.resolve("malformed.yaml");
        Files.writeString(file, credentials(entry(OPERATOR, "operator", null), entry(GW, "gateway", "gw")));
        try (ControlPlane cp = controlPlane(file)) {
            // the gateway's token revoked, but the new operator's digest is cut short on line 4: nothing changes
            Fleet.rewrite(file, "tokens:\n  - sha256: " + sha256(OPERATOR) + "\n    role: operator\n"
                    + "  - sha256: " + sha256("another").substring(0, 40) + "\n    role: operator\n");
            assertThat(Fleet.await(() -> metric(cp, "sextant_control_credentials_reload_failures_total") == 1,
                    Duration.ofSeconds(20))).isTrue();
            JsonNode health = Http.JSON.readTree(Fleet.get(cp.port(), "/healthz").body());
            assertThat(health.path("credentials_error").asText())
                    .startsWith(file + ":4: tokens[1].sha256: '").contains("(expected: the SHA-256 of the token, 64 "
                            + "hexadecimal digits");
            assertThat(metric(cp, "sextant_control_credentials_invalid")).isEqualTo(1);
            assertThat(status(cp, GW)).as("the credentials in force stay").isEqualTo(200);
            assertThat(status(cp, "another")).isEqualTo(401);

            // mended: the revocation it meant takes effect
            Fleet.rewrite(file, credentials(entry(OPERATOR, "operator", null), entry("another", "operator", null)));
            assertThat(Fleet.await(() -> status(cp, GW) == 401, Duration.ofSeconds(20))).as("revoked").isTrue();
            assertThat(status(cp, "another")).isEqualTo(200);
            assertThat(metric(cp, "sextant_control_credentials_invalid")).isEqualTo(0);
            assertThat(Http.JSON.readTree(Fleet.get(cp.port(), "/healthz").body()).path("credentials_error").isNull())
                    .isTrue();
            assertThat(metric(cp, "sextant_control_credentials_reload_failures_total")).isEqualTo(1);
        }
    }

    @Test
    void aFileThatBecomesUnreadable_keepsTheCredentialsInForce() throws Exception {
        Path file = dir.resolve("vanishing.yaml");
        Files.writeString(file, credentials(entry(GW, "gateway", "gw")));
        try (ControlPlane cp = controlPlane(file)) {
            Files.delete(file);
            assertThat(Fleet.await(() -> metric(cp, "sextant_control_credentials_reload_failures_total") == 1,
                    Duration.ofSeconds(20))).isTrue();
            assertThat(status(cp, GW)).isEqualTo(200);
            Fleet.rewrite(file, credentials(entry(GW, "gateway", "gw")));
            assertThat(Fleet.await(() -> metric(cp, "sextant_control_credentials_invalid") == 0,
                    Duration.ofSeconds(20))).as("readable again, as it was").isTrue();
            assertThat(metric(cp, "sextant_control_credentials_reload_failures_total")).as("said once").isEqualTo(1);
        }
    }

    // ---- helpers

    private long probesRefused;

    /** The status of this test's own poll of gw's snapshot with {@code token}. */
    private int status(ControlPlane cp, String token) {
        try {
            int s = call(cp, "GET", "/v1/snapshot?gateway=gw", null, token).statusCode();
            if (s == 401) {
                probesRefused++;
            }
            return s;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static void assertForbidden(HttpResponse<String> r, String message) throws Exception {
        assertThat(r.statusCode()).isEqualTo(403);
        JsonNode error = Http.JSON.readTree(r.body()).path("error");
        assertThat(error.path("code").asText()).isEqualTo("forbidden");
        assertThat(error.path("type").asText()).isEqualTo("permission_error");
        assertThat(error.path("message").asText()).contains(message);
        assertThat(r.body()).doesNotContain("\"routes\"");
    }

    static String entry(String token, String role, String cluster) {
        return "  - sha256: " + sha256(token) + "\n    role: " + role + "\n"
                + (cluster == null ? "" : "    gateway_cluster: " + cluster + "\n");
    }

    static String credentials(String... entries) {
        return "# digests only: printf %s \"$TOKEN\" | sha256sum\ntokens:\n" + String.join("", entries);
    }

    static String sha256(String token) {
        return CredentialsFileTest.sha256(token);
    }

    private static HttpResponse<String> call(ControlPlane cp, String method, String path, String body, String token)
            throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(cp.uri() + path)).timeout(Duration.ofSeconds(20))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body));
        if (body != null) {
            b.header("content-type", "application/json");
        }
        if (token != null) {
            b.header("authorization", "Bearer " + token);
        }
        return Fleet.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** A sample of the control plane's {@code /metrics}: the line that starts with {@code name} and a space or brace. */
    private static double metric(ControlPlane cp, String name) {
        try {
            String metrics = Fleet.get(cp.port(), "/metrics").body();
            return metrics.lines().filter(l -> l.startsWith(name + " ") || l.startsWith(name + "{"))
                    .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).findFirst()
                    .orElseThrow(() -> new AssertionError("no " + name + " in /metrics"));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static double refusals(ControlPlane cp, String reason) {
        return metric(cp, "sextant_control_auth_refusals_total{reason=\"" + reason + "\"}");
    }

    /** Sends {@code request} on a new connection and reads all the server sends until it closes. */
    private static String raw(int port, String request) throws Exception {
        try (Socket s = ListenerHardeningTest.socket(port)) {
            ListenerHardeningTest.send(s, request);
            return ListenerHardeningTest.readToClose(s);
        }
    }
}
