package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.sextant.server.internal.Http;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The gateway names its gateway cluster to engines in {@code x-sextant-gateway-cluster}; a client cannot. */
class GatewayClusterHeaderTest {
    private HttpServer engine;
    /** Every value of the header each request reached the engine with, as one string per request. */
    private final List<String> seen = new CopyOnWriteArrayList<>();
    private Gateway gw;

    @BeforeEach
    void start() throws Exception {
        engine = Fleet.recordingEngine(
                ex -> seen.add(String.valueOf(ex.getRequestHeaders().get(Http.GATEWAY_CLUSTER_HEADER))));
        gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false),
                SnapshotSource.fixed(Fleet.standIns(engine.getAddress().getPort())), 1);
    }

    @AfterEach
    void stop() {
        if (gw != null) {
            gw.close();
        }
        engine.stop(0);
    }

    @Test
    void everyRequestUpstream_namesTheGatewayCluster_andAClientsCopyIsDropped() throws Exception {
        assertThat(Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1)).statusCode()).isEqualTo(200);
        assertThat(Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1),
                Http.GATEWAY_CLUSTER_HEADER, "spoofed").statusCode()).isEqualTo(200);
        assertThat(seen).as("one value each, the gateway's own").containsExactly("[gw]", "[gw]");
    }
}
