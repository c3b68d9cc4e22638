package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.auth.BearerToken;
import dev.sextant.server.control.ControlPlane;
import dev.sextant.server.control.ControlPlaneConfig;
import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.server.engine.Faults;
import dev.sextant.server.internal.Http;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Bearer tokens on every control-plane endpoint but {@code /healthz} and {@code /metrics}, and on the engine
 * emulator's {@code /admin/faults} when it has one: missing, wrong and right token per endpoint.
 */
class AuthTest {
    static final String TOKEN = "auth-test-token-7f3a";

    @TempDir
    static Path dir;
    static Fleet fleet;
    static ControlPlane cp;

    @BeforeAll
    static void start() throws Exception {
        fleet = new Fleet(1);
        Path file = dir.resolve("topology.yaml");
        Files.writeString(file, fleet.yaml(150));
        cp = ControlPlane.start(ControlPlaneConfig.defaults(file, TOKEN).withIntervals(Duration.ofHours(1),
                Duration.ofHours(1), Duration.ofHours(1), Duration.ofSeconds(1), 3));
    }

    @AfterAll
    static void stop() {
        cp.close();
        fleet.close();
    }

    /** (method, path, body of a valid request, status with the right token). */
    static Stream<Arguments> protectedEndpoints() {
        return Stream.of(
                Arguments.of("GET", "/v1/snapshot?gateway=gw", null, 200),
                Arguments.of("GET", "/v1/explain?gateway=gw&class=chat", null, 200),
                Arguments.of("POST", "/v1/reports", "{\"gateway\":\"gw\",\"interval_seconds\":5,\"demand_rps\":{\"chat\":1}}",
                        204));
    }

    /** Authorization headers that must be refused: none, wrong, a prefix, longer, another scheme, empty. */
    static final String[] WRONG = {null, "Bearer wrong", "Bearer " + TOKEN.substring(0, TOKEN.length() - 1),
        "Bearer " + TOKEN + "0", "Basic " + TOKEN, "Bearer ", TOKEN};

    private static HttpResponse<String> call(URI base, String method, String path, String body, String authorization)
            throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(20))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body));
        if (body != null) {
            b.header("content-type", "application/json");
        }
        if (authorization != null) {
            b.header("authorization", authorization);
        }
        return Fleet.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("protectedEndpoints")
    void controlPlaneEndpoint_refusesMissingOrWrongToken_andServesTheRightOne(String method, String path, String body,
                                                                            int ok) throws Exception {
        double before = counter(Fleet.get(cp.port(), "/metrics").body(), "sextant_control_unauthorized_requests_total");
        for (String wrong : WRONG) {
            HttpResponse<String> r = call(cp.uri(), method, path, body, wrong);
            assertThat(r.statusCode()).as("%s %s with %s", method, path, wrong).isEqualTo(401);
            assertThat(r.headers().firstValue("www-authenticate")).hasValue("Bearer");
            JsonNode error = Http.JSON.readTree(r.body()).path("error");
            assertThat(error.path("code").asText()).isEqualTo("unauthorized");
            assertThat(r.body()).doesNotContain(TOKEN.substring(0, 8)).doesNotContain("snapshot\":");
        }
        double after = counter(Fleet.get(cp.port(), "/metrics").body(), "sextant_control_unauthorized_requests_total");
        assertThat(after - before).isEqualTo(WRONG.length);

        HttpResponse<String> right = call(cp.uri(), method, path, body, "Bearer " + TOKEN);
        assertThat(right.statusCode()).isEqualTo(ok);
    }

    @Test
    void healthzAndMetrics_needNoToken() throws Exception {
        assertThat(Fleet.get(cp.port(), "/healthz").statusCode()).isEqualTo(200);
        assertThat(Fleet.get(cp.port(), "/metrics").statusCode()).isEqualTo(200);
    }

    @Test
    void wrongTokenReports_changeNothing() throws Exception {
        String flood = "{\"gateway\":\"gw\",\"interval_seconds\":5,\"demand_rps\":{\"chat\":100000}}";
        assertThat(call(cp.uri(), "POST", "/v1/reports", flood, "Bearer nope").statusCode()).isEqualTo(401);
        long version = cp.current().version();
        cp.tickNow();
        assertThat(cp.current().version()).as("no solve was moved by a refused report").isEqualTo(version);
    }

    @Test
    void emulatorAdminFaults_withAToken_refusesMissingOrWrongOnes() throws Exception {
        try (EngineEmulator engine = EngineEmulator.start(EngineConfig.defaults("e", "m"), null, BearerToken.of(TOKEN))) {
            URI base = URI.create("http://127.0.0.1:" + engine.port());
            String body = "{\"error_rate\": 1.0}";
            for (String wrong : WRONG) {
                assertThat(call(base, "POST", "/admin/faults", body, wrong).statusCode()).isEqualTo(401);
                assertThat(call(base, "GET", "/admin/faults", null, wrong).statusCode()).isEqualTo(401);
            }
            assertThat(engine.faults()).isEqualTo(Faults.NONE);
            assertThat(call(base, "POST", "/admin/faults", body, "Bearer " + TOKEN).statusCode()).isEqualTo(200);
            assertThat(engine.faults().errorRate()).isEqualTo(1.0);
            assertThat(call(base, "GET", "/admin/faults", null, "Bearer " + TOKEN).statusCode()).isEqualTo(200);
            // the rest of the engine's API stays open, as vLLM's does
            assertThat(call(base, "GET", "/metrics", null, null).statusCode()).isEqualTo(200);
        }
    }

    @Test
    void emulatorAdminFaults_withoutAToken_staysOpen() throws Exception {
        try (EngineEmulator engine = EngineEmulator.start(EngineConfig.defaults("e", "m"))) {
            URI base = URI.create("http://127.0.0.1:" + engine.port());
            assertThat(call(base, "POST", "/admin/faults", "{\"error_rate\": 0.5}", null).statusCode()).isEqualTo(200);
            assertThat(engine.faults().errorRate()).isEqualTo(0.5);
        }
    }

    static double counter(String metrics, String name) {
        return metrics.lines().filter(l -> l.startsWith(name + " ") || l.startsWith(name + "{"))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
    }
}
