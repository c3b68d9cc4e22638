package dev.sextant.server.gateway;

import dev.sextant.server.internal.ClientLimits;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.internal.Http;
import java.io.IOException;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Slow and stalling clients on real sockets, against a gateway with short limits: a head sent a byte at a time
 * (slowloris), a connection that sends nothing, a body trickled byte by byte, and a client that never reads the
 * stream it asked for. Each is ended by its timeout; the last also shows back-pressure: the gateway stops reading
 * from the engine instead of buffering the stream.
 */
class GatewaySlowClientTest {
    private static final Duration HEAD = Duration.ofMillis(400);
    private static final Duration BODY = Duration.ofMillis(800);
    private static final Duration IDLE = Duration.ofMillis(700);
    /** A safety bound for each wait, far above the configured timeouts. */
    private static final int SAFETY_MILLIS = 10_000;
    @RegisterExtension
    static final GatewayFixture GW = GatewayFixture.of(0.2, 1, config -> config
            .withTimeouts(Duration.ofSeconds(2), Duration.ofSeconds(5), IDLE, Duration.ofSeconds(60))
            .withClientLimits(new ClientLimits(HEAD, BODY, ClientLimits.DEFAULT_MAX_HEADER_BYTES))).watchingLeaks();

    @Test
    void headSentAByteAtATime_getsA408AndTheConnectionClosed() throws Exception {
        byte[] head = ("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
                + "X-Padding: " + "p".repeat(400) + "\r\n").getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
        try (RawHttp c = new RawHttp(GW.port(), SAFETY_MILLIS)) {
            int sent = 0;
            try {
                // 20 ms a byte: the head would take 10 s to arrive; never finished (no empty line)
                for (; sent < head.length && !c.socket.isInputShutdown(); sent++) {
                    c.send(new byte[] {head[sent]});
                    if (c.socket.getInputStream().available() > 0) {
                        break; // the gateway answered
                    }
                    Thread.sleep(20);
                }
            } catch (IOException closed) {
                // the gateway may have closed while we were still sending
            }
            assertThat(sent).as("the gateway gave up before the head was sent").isLessThan(head.length);
            RawHttp.Answer a = c.read();
            assertThat(a).isNotNull();
            assertThat(a.status()).isEqualTo(408);
            JsonNode error = Http.JSON.readTree(a.body()).path("error");
            assertThat(error.path("code").asText()).isEqualTo("request_timeout");
            assertThat(error.path("message").asText()).contains("request_header_timeout");
            assertThat(c.closedByPeer()).isTrue();
        }
    }

    @Test
    void connectionThatSendsNothing_isClosedWithoutAnAnswer() throws Exception {
        try (RawHttp c = new RawHttp(GW.port(), SAFETY_MILLIS)) {
            assertThat(c.read()).as("closed, nothing written").isNull();
        }
    }

    @Test
    void idleKeepAliveConnection_isClosedWithoutAnAnswer_afterServingARequest() throws Exception {
        try (RawHttp c = new RawHttp(GW.port(), SAFETY_MILLIS)) {
            assertThat(c.send("GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n").read().status()).isEqualTo(200);
            assertThat(c.read()).as("closed when idle past request_header_timeout, no 408").isNull();
        }
    }

    @Test
    void bodyTrickledByteByByte_getsA408AndTheConnectionClosed() throws Exception {
        String body = Fleet.chat(null, false, 1) + " ".repeat(400);
        try (RawHttp c = new RawHttp(GW.port(), SAFETY_MILLIS)) {
            c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: "
                    + body.length() + "\r\n\r\n");
            int sent = 0;
            try {
                for (; sent < body.length(); sent++) { // 20 ms a byte: 8 s for the body
                    c.send(body.substring(sent, sent + 1));
                    if (c.socket.getInputStream().available() > 0) {
                        break;
                    }
                    Thread.sleep(20);
                }
            } catch (IOException closed) {
                // closed while sending
            }
            assertThat(sent).isLessThan(body.length());
            RawHttp.Answer a = c.read();
            assertThat(a.status()).isEqualTo(408);
            assertThat(Http.JSON.readTree(a.body()).path("error").path("message").asText())
                    .contains("request_body_timeout");
            assertThat(c.closedByPeer()).isTrue();
        }
        assertThat(Fleet.post(GW.port(), "/v1/chat/completions", Fleet.chat(null, false, 1)).statusCode()).isEqualTo(200);
    }

    @Test
    void clientThatNeverReadsItsStream_stopsTheGatewayReadingFromTheEngine_andBothConnectionsEnd() throws Exception {
        try (BlastingEngine engine = new BlastingEngine();
             Gateway g = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false)
                             .withTimeouts(Duration.ofSeconds(2), Duration.ofSeconds(5), IDLE, Duration.ofSeconds(60)),
                     SnapshotSource.fixed(oneEngineSnapshot(engine.port())), 1)) {
            String body = Fleet.chat(null, true, 1000);
            long maxBuffered = 0;
            try (RawHttp c = new RawHttp(g.port(), SAFETY_MILLIS, 4096)) {
                c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
                        + "Content-Length: " + body.length() + "\r\n\r\n" + body);
                // never read: once the socket buffers are full the gateway must stop reading from the engine, the
                // engine's writes block, the idle timeout ends the exchange and closes the engine connection
                assertThat(engine.ended.await(30, java.util.concurrent.TimeUnit.SECONDS))
                        .as("the engine's stream ended (connection closed by the gateway)").isTrue();
                long deadline = System.nanoTime() + Duration.ofMillis(SAFETY_MILLIS).toNanos();
                while ((g.inFlight() > 0 || g.bufferedForClients() > 0 && !c.socket.isClosed())
                        && System.nanoTime() < deadline) {
                    maxBuffered = Math.max(maxBuffered, g.bufferedForClients());
                    Thread.sleep(10);
                }
                assertThat(g.inFlight()).as("the exchange ended").isZero();
                assertThat(g.bufferedForClients())
                        .as("the connection that read nothing for idle_timeout was closed, its buffer released").isZero();
                assertThat(engine.written.get()).as("bytes the engine could send before it was stopped")
                        .isLessThan(BlastingEngine.LIMIT);
                assertThat(engine.failure).as("the engine's write failed: the gateway closed its connection")
                        .isNotNull();
                assertThat(c.closedByPeerAfterDraining()).as("the client connection is closed").isTrue();
            }
            assertThat(maxBuffered).as("bytes the gateway held for the stalled client").isLessThan(1 << 20);
        }
    }

    /** A snapshot routing model m of gateway cluster gw to one engine on {@code port}. */
    static dev.sextant.snapshot.Snapshot oneEngineSnapshot(int port) throws Exception {
        String yaml = """
                gateway_clusters: [{id: gw, region: eu-west}]
                engine_clusters: [{id: c-eu, region: eu-west}]
                network_rtt_ms: {gw: {c-eu: 2}}
                models: [{id: m, output_tokens: 8}]
                engines:
                  - {id: blaster, cluster: c-eu, endpoint: 'http://127.0.0.1:%d', models: [m], capacity_rps: 100, profile: {ttft_ms: 20, tbt_ms: 5}}
                classes: [{id: chat, model: m}]
                demand_rps: {gw: {chat: 10}}
                """.formatted(port);
        return dev.sextant.policy.Policies.optimal().solve(dev.sextant.config.TopologyLoader.load(yaml, "one.yaml"),
                dev.sextant.policy.SolveOptions.defaults());
    }

    /**
     * An engine that answers one request with an endless event stream of 64 KiB chunks, as fast as its socket takes
     * them; it stops when a write fails (the gateway closed the connection) or after {@link #LIMIT} bytes (the gateway
     * kept reading: no back-pressure).
     */
    static final class BlastingEngine implements AutoCloseable {
        static final long LIMIT = 1L << 30;
        final java.net.ServerSocket server = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
        final java.util.concurrent.atomic.AtomicLong written = new java.util.concurrent.atomic.AtomicLong();
        final java.util.concurrent.CountDownLatch ended = new java.util.concurrent.CountDownLatch(1);
        volatile IOException failure;
        private final Thread thread = new Thread(this::serve, "blasting-engine");

        BlastingEngine() throws IOException {
            thread.setDaemon(true);
            thread.start();
        }

        int port() {
            return server.getLocalPort();
        }

        private void serve() {
            try (java.net.Socket s = server.accept()) {
                java.io.InputStream in = s.getInputStream();
                StringBuilder head = new StringBuilder();
                while (!head.toString().endsWith("\r\n\r\n")) {
                    head.append((char) in.read());
                }
                java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?i)content-length: *(\\d+)").matcher(head);
                in.readNBytes(m.find() ? Integer.parseInt(m.group(1)) : 0);
                java.io.OutputStream out = s.getOutputStream();
                out.write(("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                        .getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
                byte[] event = ("data: " + "x".repeat(64 * 1024 - 8) + "\n\n").getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
                byte[] size = (Integer.toHexString(event.length) + "\r\n").getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
                byte[] crlf = "\r\n".getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
                while (written.get() < LIMIT) {
                    out.write(size);
                    out.write(event);
                    out.write(crlf);
                    written.addAndGet(event.length);
                }
            } catch (IOException e) {
                failure = e;
            } finally {
                ended.countDown();
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
        }
    }

}
