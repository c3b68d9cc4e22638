package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.internal.Http;
import dev.sextant.snapshot.Snapshot;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A snapshot that gives the gateway's own cluster no routes (a {@code gateway_cluster} the topology does not have):
 * said once in the log, in {@code /healthz} and in {@code /metrics}, and cleared when a snapshot routes it again.
 */
class GatewayWithoutRoutesTest {

    @Test
    void snapshotWithoutTheGatewaysCluster_isReported_untilOneRoutesIt() throws Exception {
        try (LogCapture logged = new LogCapture(); Fleet fleet = new Fleet(3)) {
            Snapshot routed = fleet.snapshot();
            assertThat(routed.routes()).containsKey("gw");
            Snapshot elsewhere = new Snapshot(routed.version(), "", routed.policy(), routed.fleetUtilization(),
                    routed.retryBudget(), Map.of("other", routed.routes().get("gw")), routed.engines(),
                    routed.networkRttMs(), routed.objective(), routed.groups()).sealed(routed.version());
            StaticSource source = SnapshotSource.fixed(elsewhere);
            try (Gateway gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false), source, 1)) {
                JsonNode health = Http.JSON.readTree(get(gw, "/healthz").body());
                assertThat(health.path("status").asText()).isEqualTo("no_routes");
                assertThat(health.path("classes").asInt()).isZero();
                assertThat(get(gw, "/metrics").body()).contains("sextant_gateway_classes 0.0");
                assertThat(Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1)).statusCode())
                        .isEqualTo(404);
                assertThat(severe(logged)).singleElement().asString()
                        .contains("snapshot " + elsewhere.version() + " has no routes for gateway cluster gw")
                        .contains("gateway clusters other").contains("gateway_cluster");

                // a second snapshot without them is not said again
                assertThat(source.publish(elsewhere.sealed(elsewhere.version() + 1))).isTrue();
                assertThat(severe(logged)).hasSize(1);

                assertThat(source.publish(routed.sealed(elsewhere.version() + 2))).isTrue();
                health = Http.JSON.readTree(get(gw, "/healthz").body());
                assertThat(health.path("status").asText()).isEqualTo("ok");
                assertThat(health.path("classes").asInt()).isEqualTo(routed.routes().get("gw").size()).isPositive();
                assertThat(get(gw, "/metrics").body())
                        .contains("sextant_gateway_classes " + routed.routes().get("gw").size() + ".0");
                assertThat(Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1)).statusCode())
                        .isEqualTo(200);
                assertThat(logged.any("INFO", "routes " + routed.routes().get("gw").size()
                        + " classes at gateway cluster gw again")).isTrue();
            }
        }
    }

    private static List<String> severe(LogCapture logged) {
        return logged.lines().stream().filter(l -> l.startsWith("SEVERE ") && l.contains(": NO ROUTES: ")).toList();
    }

    private static HttpResponse<String> get(Gateway gw, String path) throws Exception {
        return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build().send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gw.port() + path)).build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
