package dev.sextant.server.gateway;

import dev.sextant.server.auth.BearerToken;
import dev.sextant.server.control.ControlPlaneConfig;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The config builders: what a wither did, and a bad value refused naming its field. */
class GatewayConfigBuilderTest {

    @Test
    void builder_untouched_isTheDefaults() {
        assertThat(GatewayConfig.builder("east").build()).isEqualTo(GatewayConfig.defaults("east"));
        Path topology = Path.of("topology.yaml");
        assertThat(ControlPlaneConfig.builder(topology, BearerToken.of("t")).build().toString())
                .isEqualTo(ControlPlaneConfig.defaults(topology, "t").toString());
    }

    @Test
    void withers_changeOnlyTheirFields() {
        GatewayConfig d = GatewayConfig.defaults("east");
        GatewayConfig c = d.withAddress("0.0.0.0", 8080).withHttp2(false, 7)
                .withControlPlane(URI.create("http://cp:7070"), (BearerToken) null, Duration.ofSeconds(9));

        assertThat(c).isEqualTo(d.toBuilder().host("0.0.0.0").port(8080).http2(false).maxConcurrentStreams(7)
                .controlPlane(URI.create("http://cp:7070")).reportInterval(Duration.ofSeconds(9)).build());
        assertThat(c.toBuilder().build()).isEqualTo(c);
        assertThat(c.idleTimeout()).isEqualTo(d.idleTimeout());
    }

    static Stream<Arguments> badGatewayValues() {
        return Stream.of(
                Arguments.of((UnaryOperator<GatewayConfig.Builder>) b -> b.port(70_000), "port: 70000 (expected: 0..65535)"),
                Arguments.of((UnaryOperator<GatewayConfig.Builder>) b -> b.host(" "), "host: ' ' (expected: an address"),
                Arguments.of((UnaryOperator<GatewayConfig.Builder>) b -> b.maxBodyBytes(0), "max_body_bytes: 0 (expected: > 0)"),
                Arguments.of((UnaryOperator<GatewayConfig.Builder>) b -> b.maxConcurrentStreams(0),
                        "max_concurrent_streams: 0 (expected: >= 1)"),
                Arguments.of((UnaryOperator<GatewayConfig.Builder>) b -> b.probeInterval(Duration.ofSeconds(-1)),
                        "probe_interval: -1000ms (expected: >= 0"),
                Arguments.of((UnaryOperator<GatewayConfig.Builder>) b -> b.drain(null), "drain: missing"),
                Arguments.of((UnaryOperator<GatewayConfig.Builder>) b -> b.idleTimeout(Duration.ZERO), "idle_timeout"),
                Arguments.of((UnaryOperator<GatewayConfig.Builder>) b -> b.gatewayCluster(""), "gateway_cluster: missing"));
    }

    @ParameterizedTest
    @MethodSource("badGatewayValues")
    void build_badValue_isRefusedNamingTheField(UnaryOperator<GatewayConfig.Builder> change, String message) {
        assertThatThrownBy(() -> change.apply(GatewayConfig.builder("east")).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith(message);
    }

    @Test
    void controlPlaneBuild_badValue_isRefusedNamingTheField() {
        ControlPlaneConfig.Builder b = ControlPlaneConfig.builder(Path.of("topology.yaml"), BearerToken.of("t"));
        assertThatThrownBy(() -> b.port(-1).build()).hasMessageStartingWith("port: -1");
        assertThatThrownBy(() -> b.port(0).token(null).build()).hasMessageStartingWith("token: missing");
        assertThatThrownBy(() -> b.token(BearerToken.of("t")).topologyFile(null).build())
                .hasMessageStartingWith("topology: missing");
    }
}
