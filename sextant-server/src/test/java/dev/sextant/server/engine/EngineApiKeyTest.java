package dev.sextant.server.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.auth.BearerToken;
import dev.sextant.server.internal.ListenerLimits;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The emulator started with an API key answers {@code /v1/…} as vLLM with {@code --api-key} does. */
class EngineApiKeyTest {
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private EngineEmulator engine;

    @AfterEach
    void stop() {
        if (engine != null) {
            engine.close();
        }
    }

    private HttpResponse<String> send(String method, String path, String authorization) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + engine.port() + path))
                .timeout(Duration.ofSeconds(10));
        if (authorization != null) {
            b.header("authorization", authorization);
        }
        b = method.equals("POST") ? b.header("content-type", "application/json").POST(HttpRequest.BodyPublishers
                .ofString("{\"model\":\"m\",\"prompt\":\"hi\",\"max_tokens\":2}")) : b.GET();
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void withAnApiKey_v1WantsIt_andHealthAndMetricsDoNot() throws Exception {
        engine = EngineEmulator.start(EngineConfig.defaults("e1", "m").withLatency(64, 0.0, 1, 0.0), null, null,
                BearerToken.of("engine-key"), ListenerLimits.engine());
        for (String authorization : new String[] {null, "Bearer wrong", "engine-key", "Basic ZW5naW5lLWtleQ=="}) {
            HttpResponse<String> r = send("POST", "/v1/completions", authorization);
            assertThat(r.statusCode()).as(String.valueOf(authorization)).isEqualTo(401);
            assertThat(r.body()).isEqualTo("{\"error\":\"Unauthorized\"}");
            assertThat(r.headers().firstValue(EngineEmulator.ENGINE_ID_HEADER)).hasValue("e1");
        }
        assertThat(send("GET", "/v1/models", null).statusCode()).isEqualTo(401);
        assertThat(engine.generatedTokens()).as("nothing refused was generated").isZero();

        HttpResponse<String> ok = send("POST", "/v1/completions", "Bearer engine-key");
        assertThat(ok.statusCode()).isEqualTo(200);
        assertThat(engine.generatedTokens()).isEqualTo(2);
        assertThat(send("GET", "/v1/models", "Bearer engine-key").statusCode()).isEqualTo(200);
        assertThat(send("GET", "/metrics", null).statusCode()).isEqualTo(200);
        assertThat(send("GET", "/health", null).statusCode()).isEqualTo(200);
    }

    @Test
    void withoutOne_v1IsOpen() throws Exception {
        engine = EngineEmulator.start(EngineConfig.defaults("e1", "m").withLatency(64, 0.0, 1, 0.0));
        assertThat(send("POST", "/v1/completions", null).statusCode()).isEqualTo(200);
    }

    @Test
    void apiKeyFile_isAnOptionOfTheListener_readLikeTheAdminToken(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("key"), "engine-key\n");
        EngineOptions.Parsed p = EngineOptions.parse(new String[] {"--id", "e1", "--api-key-file", file.toString()});
        assertThat(p.apiKey().accepts("Bearer engine-key")).isTrue();
        assertThat(p.adminToken()).isNull();
        List<String> rest = new ArrayList<>();
        assertThat(EngineOptions.securityOptions(new String[] {"--api-key-file=" + file, "--id", "e1"}, rest))
                .containsEntry("--api-key-file", file.toString());
        assertThat(rest).containsExactly("--id", "e1");
        Path missing = dir.resolve("missing");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> EngineOptions.parse(new String[] {"--api-key-file",
                missing.toString()})).hasMessageStartingWith("--api-key-file: cannot read " + missing);
    }
}
