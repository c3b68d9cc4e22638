package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sextant.server.control.ControlPlane;
import dev.sextant.server.control.ControlPlaneConfig;
import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.server.internal.ListenException;
import dev.sextant.server.internal.StartException;
import java.net.URI;
import java.time.Duration;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A server that cannot start says why in one line: a port taken, no first snapshot. */
class PortInUseTest {
    @Test
    void everyServer_onAPortInUse_failsNamingTheAddress(@TempDir Path dir) throws Exception {
        try (Fleet fleet = new Fleet(1);
             ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            int port = taken.getLocalPort();
            String says = "cannot listen on 127.0.0.1:" + port + ": Address already in use";
            assertThatThrownBy(() -> Gateway.start(GatewayConfig.defaults("gw").withAddress("127.0.0.1", port),
                    SnapshotSource.fixed(fleet.snapshot()), 1))
                    .isInstanceOf(ListenException.class).hasMessage(says);
            assertThatThrownBy(() -> EngineEmulator.start(EngineConfig.defaults("e", "m").withPort(port)))
                    .isInstanceOf(ListenException.class).hasMessage(says);
            Path topology = Files.writeString(dir.resolve("topology.yaml"), fleet.yaml(10));
            assertThatThrownBy(() -> ControlPlane.start(ControlPlaneConfig.defaults(topology, "secret")
                    .withAddress("127.0.0.1", port)))
                    .isInstanceOf(ListenException.class).hasMessage(says);
        }
    }

    @Test
    void aGatewayOnAPortInUse_failsBeforeItAsksItsSourceForASnapshot() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            int port = taken.getLocalPort();
            // a source that never answers: had the gateway waited for a snapshot first, it would wait out the minute
            HandFedSource source = new HandFedSource();
            assertThatThrownBy(() -> Gateway.start(GatewayConfig.defaults("gw").withAddress("127.0.0.1", port), source, 1))
                    .isInstanceOf(ListenException.class)
                    .hasMessage("cannot listen on 127.0.0.1:" + port + ": Address already in use");
            assertThat(source.started()).as("the port comes first").isFalse();
            assertThat(source.closed()).isTrue();
        }
    }

    @Test
    void aHostThatIsNoAddress_failsSayingSo_inWords() throws Exception {
        try (Fleet fleet = new Fleet(1)) {
            assertThatThrownBy(() -> Gateway.start(GatewayConfig.defaults("gw").withAddress("999.1.1.1", 0),
                    SnapshotSource.fixed(fleet.snapshot()), 1))
                    .isInstanceOf(ListenException.class)
                    .hasMessage("cannot listen on 999.1.1.1:0: no such host or address");
        }
    }

    @Test
    void aGatewayWhoseControlPlaneSendsNoSnapshot_failsToStartSayingSo() throws Exception {
        try (ServerSocket closed = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            URI nowhere = URI.create("http://127.0.0.1:" + closed.getLocalPort());
            closed.close(); // nothing listens there now
            SnapshotSource source = SnapshotSource.longPoll(nowhere, "gw", "secret", Duration.ofSeconds(1));
            assertThatThrownBy(() -> Gateway.start(GatewayConfig.defaults("gw"), source, 1, Duration.ofMillis(700)))
                    .isInstanceOf(StartException.class)
                    .hasMessageStartingWith("no snapshot within 700 ms, and a gateway cannot route without one");
        }
    }
}
