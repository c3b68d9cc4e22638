package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.internal.Http;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The official OpenAI Node SDK ({@code openai} from the npm registry, the version pinned in
 * {@code src/test/node/openai-sdk/package-lock.json}) as the gateway's client, unchanged but for its base URL: the
 * script {@code check.mjs} makes the calls and prints what came back; this test asserts on it. The SDK is installed
 * with {@code npm ci} the first time (Node.js and npm must be on the machine).
 */
class OpenAiNodeSdkTest {
    static final Path DIR = Path.of("src", "test", "node", "openai-sdk");
    @RegisterExtension
    static final GatewayFixture GW = GatewayFixture.of(3, 1);

    @BeforeAll
    static void start() throws Exception {
        if (!Files.isDirectory(DIR.resolve("node_modules").resolve("openai"))) {
            Result install = run(180, "npm", "ci", "--no-audit", "--no-fund");
            assertThat(install.exit).as("npm ci of the OpenAI Node SDK:%n%s", install.output).isZero();
        }
    }

    @Test
    void everyCallOfTheSdk_getsWhatOpenAiWouldAnswer() throws Exception {
        Result r = run(60, "node", "check.mjs", "http://127.0.0.1:" + GW.port(), "m");
        assertThat(r.exit).as("node check.mjs:%n%s", r.output).isZero();
        String last = r.output.strip().lines().reduce((a, b) -> b).orElseThrow();
        JsonNode out = Http.JSON.readTree(last);

        JsonNode chat = out.path("chat");
        assertThat(chat.path("content").asText()).isNotBlank();
        assertThat(chat.path("finish_reason").asText()).isEqualTo("length");
        assertThat(chat.path("completion_tokens").asInt()).isEqualTo(4);
        assertThat(GW.fleet().engines).containsKey(chat.path("engine").asText());

        assertThat(out.path("stream").path("pieces").asInt()).as("one chunk per token").isEqualTo(5);
        assertThat(out.path("stream").path("finish_reason").asText()).isEqualTo("length");
        JsonNode response = out.path("response");
        assertThat(response.path("status").asText()).as("max_output_tokens ended it").isEqualTo("incomplete");
        assertThat(response.path("output_text").asText().split(" ")).hasSize(4);
        assertThat(response.path("output_tokens").asInt()).isEqualTo(4);
        assertThat(GW.fleet().engines).containsKey(response.path("engine").asText());
        JsonNode responseStream = out.path("response_stream");
        assertThat(responseStream.path("deltas").asInt()).as("one delta event per token").isEqualTo(5);
        assertThat(responseStream.path("last").asText()).isEqualTo("response.incomplete");
        assertThat(responseStream.path("text_matches").asBoolean()).as("%s", responseStream).isTrue();

        assertThat(out.path("completion").path("text").asText()).isNotBlank();
        assertThat(out.path("completion").path("choices").toString()).as("n: 2").isEqualTo("[0,1]");
        JsonNode values = out.path("embedding").path("values");
        JsonNode floats = out.path("embedding").path("floats");
        assertThat(values).hasSize(8).hasSameSizeAs(floats);
        double norm = 0;
        for (int i = 0; i < values.size(); i++) {
            assertThat((float) values.get(i).asDouble()).as("value %d as float32", i)
                    .isEqualTo((float) floats.get(i).asDouble());
            norm += values.get(i).asDouble() * values.get(i).asDouble();
        }
        assertThat(norm).as("a unit vector").isCloseTo(1.0, org.assertj.core.api.Assertions.within(1e-6));
        assertThat(out.path("models").toString()).isEqualTo("[\"m\"]");
        assertThat(out.path("retrieved").asText()).isEqualTo("m");

        JsonNode unknown = out.path("unknown_model");
        assertThat(unknown.path("not_found").asBoolean()).as("the SDK's own NotFoundError: %s", unknown).isTrue();
        assertThat(unknown.path("status").asInt()).isEqualTo(404);
        assertThat(unknown.path("message").asText()).contains("no-such-model");
    }

    record Result(int exit, String output) {
    }

    /** Runs a command in {@link #DIR}, stdout and stderr together; fails the test when it does not end in time. */
    static Result run(int seconds, String... command) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(command));
        Process p = new ProcessBuilder(cmd).directory(DIR.toFile()).redirectErrorStream(true).start();
        p.getOutputStream().close();
        byte[][] out = new byte[1][];
        Thread reader = new Thread(() -> {
            try {
                out[0] = p.getInputStream().readAllBytes();
            } catch (IOException e) {
                out[0] = ("(output unreadable: " + e + ")").getBytes(StandardCharsets.UTF_8);
            }
        });
        reader.start();
        boolean ended = p.waitFor(seconds, TimeUnit.SECONDS);
        if (!ended) {
            p.destroyForcibly();
        }
        reader.join(5000);
        String text = out[0] == null ? "" : new String(out[0], StandardCharsets.UTF_8);
        assertThat(ended).as("%s ended within %d s; output so far:%n%s", cmd, seconds, text).isTrue();
        return new Result(p.exitValue(), text);
    }
}
