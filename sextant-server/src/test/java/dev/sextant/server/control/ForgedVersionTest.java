package dev.sextant.server.control;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.config.SnapshotJson;
import dev.sextant.server.gateway.Fleet;
import dev.sextant.server.gateway.Gateway;
import dev.sextant.server.gateway.GatewayConfig;
import dev.sextant.server.gateway.LogCapture;
import dev.sextant.server.gateway.SnapshotSource;
import dev.sextant.server.internal.Http;
import dev.sextant.server.internal.Versions;
import dev.sextant.snapshot.Snapshot;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Versions nobody can forge or overflow (docs/design.md §6, 9): what a poll's {@code If-None-Match}, a state file or
 * a gateway's cache file claims is never adopted above {@link Versions#MAX_ADOPTED}, an ETag that is not the current
 * one is never answered 304, and after each the policy goes on publishing, one version after the other.
 */
class ForgedVersionTest {
    static final String TOKEN = "forged-version-token";
    static final String AUTH = "Bearer " + TOKEN;
    /** What a holder of the gateway token sent to freeze a fleet's policy: the next version overflowed. */
    static final long FORGED = Long.MAX_VALUE - 1;

    @TempDir
    Path dir;
    Fleet fleet;
    Path topology;

    @BeforeEach
    void fleet() throws Exception {
        fleet = new Fleet(1);
        topology = dir.resolve("topology.yaml");
        Files.writeString(topology, fleet.yaml(150));
    }

    @AfterEach
    void stop() {
        fleet.close();
    }

    /** Every step is tickNow(); every gain is published, so each change of demand makes a version. */
    private ControlPlaneConfig config(Path stateFile) {
        return ControlPlaneConfig.defaults(topology, TOKEN).withIntervals(Duration.ofHours(1), Duration.ofHours(1),
                Duration.ofHours(1), Duration.ofSeconds(1), 3).withPublishGain(0, 0).withStateFile(stateFile);
    }

    /** The current version is 1; the held version 1 with other content is a restart's, caught up with as before. */
    @ParameterizedTest(name = "If-None-Match {0}, wait {1}: version {2}")
    @CsvSource(delimiter = '|', value = {
            "\"9223372036854775806-x\" | 0s  | 1",
            "\"9223372036854775806-x\" | 20s | 1",
            "\"9007199254740992-0123\" | 0s  | 1",
            "\"0-0123456789abcdef\"    | 0s  | 1",
            "\"1-0000000000000000\"    | 0s  | 2",
            "\"1-0000000000000000\"    | 20s | 2"})
    void anEtagThatIsNotTheCurrentOne_getsTheSnapshotAtOnce_neverA304_andNothingAboveTheBoundIsAdopted(
            String ifNoneMatch, String wait, long expected) throws Exception {
        try (LogCapture log = new LogCapture(); ControlPlane cp = ControlPlane.start(config(null))) {
            HttpResponse<String> r = poll(cp, ifNoneMatch, wait);

            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(Http.JSON.readTree(r.body()).path("version").asLong()).isEqualTo(expected);
            assertThat(cp.current().version()).isEqualTo(expected);
            if (ControlHandler.heldVersion(ifNoneMatch) > Versions.MAX_ADOPTED) {
                assertThat(get(cp, "/metrics").body()).contains("sextant_control_refused_versions_total 1.0");
                assertThat(log.any("WARNING", "VERSION REFUSED")).isTrue();
            }
            assertPolicyGoesOn(cp, expected);
        }
    }

    @Test
    void aClaimAtTheBound_isAdoptedOnce_andVersionsGoOnAboveItWithoutOverflow() throws Exception {
        try (ControlPlane cp = ControlPlane.start(config(null))) {
            HttpResponse<String> caughtUp = poll(cp, "\"" + Versions.MAX_ADOPTED + "-0123\"", "0s");
            assertThat(Http.JSON.readTree(caughtUp.body()).path("version").asLong()).isEqualTo(Versions.MAX_ADOPTED + 1);

            HttpResponse<String> forged = poll(cp, "\"" + FORGED + "-x\"", "0s");
            assertThat(forged.statusCode()).isEqualTo(200);
            assertThat(cp.current().version()).as("the forged claim above the bound").isEqualTo(Versions.MAX_ADOPTED + 1);
            assertPolicyGoesOn(cp, Versions.MAX_ADOPTED + 1);
        }
    }

    @Test
    void aStateFileWithAHugeVersion_isRefusedLoudly_andThePolicyGoesOnFromOne() throws Exception {
        Path state = dir.resolve("state.json");
        Files.writeString(state, SnapshotJson.write(fleet.snapshot().sealed(FORGED))); // its hash matches its content
        try (LogCapture log = new LogCapture(); ControlPlane cp = ControlPlane.start(config(state))) {
            assertThat(cp.current().version()).isEqualTo(1);
            assertThat(log.any("SEVERE", "STATE FILE " + state + " unusable")).isTrue();
            assertThat(log.any("SEVERE", "its version " + FORGED)).isTrue();
            assertPolicyGoesOn(cp, 1);
            assertThat(Fleet.await(() -> ControlPlaneStateTest.kept(state) == cp.current().version(), Duration.ofSeconds(10)))
                    .as("the state file overwritten with the versions published").isTrue();
        }
    }

    @Test
    void aStateFileWhoseContentDoesNotMatchItsHash_isRefused() throws Exception {
        Path state = dir.resolve("state.json");
        String json = SnapshotJson.write(fleet.snapshot().sealed(5));
        Files.writeString(state, json.replace("\"version\" : 5", "\"version\" : 6").replace("\"version\": 5",
                "\"version\": 6"));
        Snapshot altered = SnapshotJson.read(state);
        assertThat(altered.version()).as("the test altered the version").isEqualTo(6);
        Files.writeString(state, SnapshotJson.write(altered).replace(altered.hash(), "0".repeat(64)));
        try (LogCapture log = new LogCapture(); ControlPlane cp = ControlPlane.start(config(state))) {
            assertThat(cp.current().version()).isEqualTo(1);
            assertThat(log.any("SEVERE", "does not match its hash")).isTrue();
        }
    }

    @Test
    void aGatewayCacheWithAHugeVersion_isNotUsed_andTheGatewayTakesTheControlPlanesVersions() throws Exception {
        Path cache = dir.resolve("snapshot-cache.json");
        Files.writeString(cache, SnapshotJson.write(fleet.snapshot().sealed(FORGED)));
        try (LogCapture log = new LogCapture(); ControlPlane cp = ControlPlane.start(config(null));
             Gateway gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false).withSnapshotCache(cache)
                     .withControlPlane(cp.uri(), TOKEN, Duration.ofHours(1)),
                     SnapshotSource.longPoll(cp.uri(), "gw", TOKEN, Duration.ofSeconds(20)))) {
            assertThat(log.any("WARNING", "SNAPSHOT CACHE " + cache + " not used")).isTrue();
            assertThat(Fleet.await(() -> version(gw) == 1, Duration.ofSeconds(10))).isTrue();
            long last = 1;
            for (double demand : new double[] {40, 170}) {
                Files.writeString(topology, fleet.yaml(demand));
                cp.tickNow();
                long next = cp.current().version();
                assertThat(next).isEqualTo(last + 1);
                assertThat(Fleet.await(() -> version(gw) == next, Duration.ofSeconds(10)))
                        .as("the gateway takes version %d", next).isTrue();
                last = next;
            }
            assertThat(get(cp, "/healthz").body()).contains("\"status\":\"ok\"");
        }
    }

    /** New versions keep being published, each one above the last, and the control plane says it is well. */
    private void assertPolicyGoesOn(ControlPlane cp, long from) throws Exception {
        long last = from;
        for (double demand : new double[] {40, 170, 90}) {
            Files.writeString(topology, fleet.yaml(demand));
            cp.tickNow();
            assertThat(cp.current().version()).isEqualTo(last + 1);
            last = cp.current().version();
        }
        assertThat(get(cp, "/readyz").statusCode()).isEqualTo(200);
        assertThat(Http.JSON.readTree(get(cp, "/healthz").body()).path("status").asText()).isEqualTo("ok");
        assertThat(get(cp, "/metrics").body()).contains("sextant_control_policy_failing 0.0");
    }

    private static long version(Gateway gw) {
        Snapshot s = gw.plane().snapshot();
        return s == null ? -1 : s.version();
    }

    private static HttpResponse<String> poll(ControlPlane cp, String ifNoneMatch, String wait) throws Exception {
        return Fleet.HTTP.send(HttpRequest.newBuilder(URI.create(cp.uri() + "/v1/snapshot?gateway=gw&wait=" + wait))
                .timeout(Duration.ofSeconds(30)).header("authorization", AUTH).header("if-none-match", ifNoneMatch)
                .GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> get(ControlPlane cp, String path) throws Exception {
        return Fleet.HTTP.send(HttpRequest.newBuilder(URI.create(cp.uri() + path)).timeout(Duration.ofSeconds(30))
                .GET().build(), HttpResponse.BodyHandlers.ofString());
    }
}
