package dev.sextant.server.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Flow control between a streaming sequence and its client, over a real loopback socket. */
class EngineBackPressureTest {
    /**
     * Steps as short as the timer allows, so output outruns a client that does not read; the engine's send buffer
     * and the client's receive buffer are a few KiB, so the channel turns unwritable after a few hundred tokens.
     */
    private static final EngineConfig FLOOD = EngineConfig.defaults("engine-b", "m").withLatency(8, 0, 0, 0);

    private static Socket streamingRequest(EngineEmulator engine, int maxTokens) throws IOException {
        return request(engine, maxTokens, true);
    }

    private static Socket request(EngineEmulator engine, int maxTokens, boolean stream) throws IOException {
        Socket socket = new Socket();
        socket.setReceiveBufferSize(4096);
        socket.connect(new InetSocketAddress("127.0.0.1", engine.port()));
        socket.setSoTimeout(20_000);
        byte[] body = ("{\"model\":\"m\",\"max_tokens\":" + maxTokens + ",\"stream\":" + stream + ","
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}").getBytes(StandardCharsets.UTF_8);
        String head = "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                + "content-length: " + body.length + "\r\n\r\n";
        socket.getOutputStream().write(head.getBytes(StandardCharsets.US_ASCII));
        socket.getOutputStream().write(body);
        socket.getOutputStream().flush();
        return socket;
    }

    @Test
    void clientNotReading_pausesItsSequenceThenResumesWhenItReads() throws IOException {
        int maxTokens = 1_500;
        try (EngineEmulator engine = EngineEmulator.start(FLOOD, 4096); Socket socket = streamingRequest(engine, maxTokens)) {

            Client.await("the stream to pause on an unwritable channel", () -> engine.scheduler.pausedTokens() > 0);
            long producedWhilePaused = engine.generatedTokens();

            assertThat(producedWhilePaused).isLessThan(maxTokens);
            socket.setReceiveBufferSize(1 << 20); // read the rest quickly
            int tokens = 0;
            boolean done = false;
            BufferedReader reader = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            String line;
            while (!done && (line = reader.readLine()) != null) {
                if (line.startsWith("data: {") && line.contains("\"content\":\"") && !line.contains("\"content\":\"\"")) {
                    tokens++;
                }
                done = line.equals("data: [DONE]");
            }
            assertThat(done).isTrue();
            assertThat(tokens).isEqualTo(maxTokens);
            assertThat(engine.generatedTokens()).isEqualTo(maxTokens);
        }
    }

    /** A non-streaming generation writes nothing until its end: only a read pending on the connection sees the close. */
    @ParameterizedTest(name = "stream: {0}")
    @ValueSource(booleans = {true, false})
    void clientGone_midGeneration_cancelsItsSequence(boolean stream) throws IOException {
        int maxTokens = 1_000_000;
        try (EngineEmulator engine = EngineEmulator.start(FLOOD)) {
            Client client = new Client(engine);
            Socket socket = request(engine, maxTokens, stream);
            Client.await("tokens to flow", () -> engine.generatedTokens() > 0);
            socket.close();

            Client.await("the sequence to be aborted", () -> client.get("/metrics").body()
                    .contains("vllm:request_success_total{engine=\"0\",finished_reason=\"abort\",model_name=\"m\"} 1.0"));
            assertThat(engine.generatedTokens()).isLessThan(maxTokens);
            assertThat(client.get("/metrics").body()).contains("vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 0.0");
        }
    }
}
