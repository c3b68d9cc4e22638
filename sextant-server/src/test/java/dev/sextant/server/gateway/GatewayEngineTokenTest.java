package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.sextant.server.auth.BearerToken;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an engine sees in {@code Authorization}: the gateway's engine token when it has one, else the client's header;
 * and the client's {@code api-key} only when the client's {@code Authorization} is passed on.
 */
class GatewayEngineTokenTest {
    @TempDir
    Path dir;
    private HttpServer engine;
    private final List<String> seen = new CopyOnWriteArrayList<>();
    private final List<String> apiKeys = new CopyOnWriteArrayList<>();
    private Gateway gw;

    @BeforeEach
    void startEngine() throws Exception {
        engine = Fleet.recordingEngine(ex -> {
            seen.add(String.valueOf(ex.getRequestHeaders().getFirst("authorization")));
            apiKeys.add(String.valueOf(ex.getRequestHeaders().getFirst("api-key")));
        });
    }

    @AfterEach
    void stop() {
        if (gw != null) {
            gw.close();
        }
        engine.stop(0);
    }

    private void startGateway(BearerToken engineToken) throws Exception {
        var snapshot = Fleet.standIns(engine.getAddress().getPort());
        gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false).withEngineToken(engineToken),
                SnapshotSource.fixed(snapshot), 1);
    }

    private int chat(String... headers) throws Exception {
        return Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1), headers).statusCode();
    }

    @Test
    void withAnEngineToken_theEngineSeesIt_neverTheClientsKey_andARotatedFileIsFollowed() throws Exception {
        Path file = dir.resolve("engine-token");
        Files.writeString(file, "engine-key-1\n");
        startGateway(BearerToken.file(file));
        assertThat(chat("authorization", "Bearer client-key")).isEqualTo(200);
        assertThat(chat("api-key", "client-key")).isEqualTo(200);
        assertThat(seen).containsExactly("Bearer engine-key-1", "Bearer engine-key-1");
        assertThat(apiKeys).containsExactly("null", "null");

        Files.writeString(file, "engine-key-two\n"); // rotated: the file is looked at again within a second
        assertThat(Fleet.await(() -> {
            try {
                chat();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            return seen.get(seen.size() - 1).equals("Bearer engine-key-two");
        }, Duration.ofSeconds(10))).isTrue();
        assertThat(seen).noneMatch(a -> a.contains("client-key"));
    }

    @Test
    void withoutOne_theClientsAuthorizationAndApiKeyArePassedOn() throws Exception {
        startGateway(null);
        assertThat(chat("authorization", "Bearer client-key")).isEqualTo(200);
        assertThat(chat()).isEqualTo(200);
        assertThat(chat("api-key", "azure-client-key")).isEqualTo(200);
        assertThat(seen).containsExactly("Bearer client-key", "null", "null");
        assertThat(apiKeys).containsExactly("null", "null", "azure-client-key");
    }
}
