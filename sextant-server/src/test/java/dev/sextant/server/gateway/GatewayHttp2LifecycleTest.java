package dev.sextant.server.gateway;

import dev.sextant.server.internal.ClientLimits;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.request.DataPlaneOptions;
import dev.sextant.server.engine.Faults;
import dev.sextant.server.internal.Http;
import dev.sextant.server.tls.ClientTls;
import dev.sextant.server.tls.TestPki;
import dev.sextant.server.tls.TlsContexts;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * HTTP/2 clients against gateways set up for one case each: TLS with ALPN, an engine that crashes mid-stream, a
 * graceful shutdown, limits, and HTTP/2 turned off.
 */
class GatewayHttp2LifecycleTest {
    @TempDir
    Path dir;
    LeakWatch leaks;
    Fleet fleet;
    final List<AutoCloseable> open = new ArrayList<>();

    @BeforeEach
    void start() {
        leaks = LeakWatch.paranoid();
        fleet = new Fleet(20);
    }

    @AfterEach
    void stop() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
        fleet.close();
        leaks.assertNoLeakThenClose();
    }

    private Gateway gateway(GatewayConfig config) {
        Gateway gw = Gateway.start(config, SnapshotSource.fixed(fleet.snapshot()), 2);
        open.add(gw);
        return gw;
    }

    private H2Client client(Gateway gw) throws InterruptedException {
        H2Client c = new H2Client(gw.port());
        open.add(c);
        return c;
    }

    @Test
    void tlsWithAlpn_http2ClientsGetH2_http11ClientsGetHttp11() throws Exception {
        TestPki pki = new TestPki(dir, "sextant");
        Gateway gw = gateway(GatewayConfig.defaults("gw").withAccessLog(false)
                .withTls(pki.issue("gateway").server(), null));
        URI uri = URI.create("https://127.0.0.1:" + gw.port() + "/v1/chat/completions");
        for (HttpClient.Version version : HttpClient.Version.values()) {
            HttpClient client = HttpClient.newBuilder().version(version).connectTimeout(Duration.ofSeconds(5))
                    .sslContext(TlsContexts.jdkClient(ClientTls.trusting(pki.caFile))).build();
            for (boolean stream : new boolean[] {true, false}) {
                HttpResponse<String> r = client.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(20))
                        .header("content-type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(Fleet.chat("tls-" + version, stream, 3))).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(r.statusCode()).isEqualTo(200);
                assertThat(r.version()).as("ALPN's choice for a %s client", version).isEqualTo(version);
                assertThat(r.body()).contains(stream ? "data: [DONE]" : "\"completion_tokens\":3");
            }
        }
    }

    @Test
    void engineCrashesMidStream_theStreamGetsAnSseErrorEventThenEndsCleanly() throws Exception {
        fleet.engines.values().forEach(e -> e.setFaults(new Faults(0, 1, false, 3)));
        Gateway gw = gateway(GatewayConfig.defaults("gw").withAccessLog(false));
        H2Client c = client(gw);
        H2Client.Stream s = c.post("/v1/chat/completions", Fleet.chat("crash", true, 20));
        assertThat(s.status()).isEqualTo(200);
        String body = s.body(); // the stream ended with END_STREAM, not a reset
        List<String> events = List.of(body.strip().split("\n\n"));
        assertThat(events.get(0)).startsWith("data: ");
        String last = events.get(events.size() - 1);
        assertThat(last).startsWith("data: {\"error\"");
        JsonNode error = Http.JSON.readTree(last.substring("data: ".length())).path("error");
        assertThat(error.path("code").asText()).isEqualTo("upstream_error");
        assertThat(error.path("message").asText()).contains("mid-response");
        assertThat(body).doesNotContain("[DONE]");
        assertThat(s.reset.isDone()).isFalse();
        assertThat(Fleet.await(() -> gw.inFlight() == 0, Duration.ofSeconds(10))).isTrue();
        assertThat(c.isOpen()).as("one stream's failure leaves the connection up").isTrue();
    }

    /**
     * The "rapid reset" attack (CVE-2023-44487): a client opens streams and resets each at once, so that the server
     * starts work it never finishes while the client's concurrent-stream limit never binds. The frame codec answers
     * more than 200 resets in 30 s with GOAWAY and closes the connection (whether the client reads the GOAWAY before
     * the close resets its socket is chance: resets it has sent are still arriving); each reset stream's engine
     * request is cancelled, and other clients are served.
     */
    @Test
    void aClientResettingStreamsAsFastAsItOpensThem_isCutOff_andLeavesNoWorkBehind() throws Exception {
        Gateway gw = gateway(GatewayConfig.defaults("gw").withAccessLog(false));
        H2Client attacker = client(gw);
        int tries = 2_000;
        int opened = 0;
        for (int i = 0; i < tries && attacker.isOpen(); i++) {
            try {
                attacker.post("/v1/chat/completions", Fleet.chat("reset-" + i, true, 1000)).cancel();
                opened++;
            } catch (Exception e) {
                break; // the connection went away between the check and the open
            }
        }
        assertThat(Fleet.await(() -> !attacker.isOpen(), Duration.ofSeconds(10)))
                .as("the connection closed by the gateway (%d streams opened and reset)", opened).isTrue();
        assertThat(opened).as("streams opened and reset before the gateway closed the connection")
                .isGreaterThan(200).isLessThan(tries);
        assertThat(Fleet.await(() -> gw.inFlight() == 0, Duration.ofSeconds(20)))
                .as("every reset stream's engine request ended").isTrue();
        H2Client other = client(gw);
        H2Client.Stream s = other.post("/v1/chat/completions", Fleet.chat("after", true, 4));
        assertThat(s.status()).isEqualTo(200);
        assertThat(s.body().strip()).endsWith("data: [DONE]");
    }

    /**
     * The CONTINUATION flood (VU#421644, 2024): a HEADERS frame without END_HEADERS followed by CONTINUATION frames
     * that never end it, which a server that buffers the header block until its end keeps in memory without bound.
     * The gateway closes the connection once the block is past what its header limit allows, long before the 64 MiB
     * this client would send (measured: the client's writes failed after 4.2 MB, most of it the sockets' buffers), and
     * serves other clients meanwhile.
     */
    @Test
    void headerBlockContinuedWithoutEnd_closesTheConnection_beforeItGrowsFar() throws Exception {
        Gateway gw = floodedGateway();
        byte[] block = new byte[16_384];
        for (int i = 0; i < block.length; ) { // literal fields without indexing, new names: "x-a: aaa…"
            int value = Math.min(120, block.length - i - 6);
            if (value < 1) {
                block[i++] = (byte) 0x82; // :method: GET, indexed
                continue;
            }
            block[i++] = 0x00;
            block[i++] = 3;
            block[i++] = 'x';
            block[i++] = '-';
            block[i++] = 'a';
            block[i++] = (byte) value;
            for (int j = 0; j < value; j++) {
                block[i++] = 'a';
            }
        }
        // HEADERS on stream 1 with END_STREAM but not END_HEADERS (":method: GET"), then CONTINUATION without it
        long sent = flood(gw, frame(0x1, 0x1, 1, new byte[] {(byte) 0x82}), frame(0x9, 0, 1, block), 64L << 20);
        assertThat(sent).as("bytes sent before the gateway cut the connection (-1: never)").isBetween(0L, 32L << 20);
        assertServesOthers(gw);
    }

    /**
     * Control frames the client never reads the answers of (the ping flood, CVE-2019-9512): each PING asks for a PING
     * ACK, which queues while the client does not read. The codec closes the connection when 10,000 control frames
     * wait, before the 4 million PINGs this client would send.
     */
    @Test
    void pingsWhoseAcksAreNeverRead_closeTheConnection() throws Exception {
        Gateway gw = floodedGateway();
        byte[] ping = frame(0x6, 0, 0, new byte[8]);
        long sent = flood(gw, new byte[0], ping, 4_000_000L * ping.length);
        assertThat(sent).as("bytes sent before the gateway cut the connection (-1: never)")
                .isBetween(0L, 2_000_000L * ping.length);
        assertServesOthers(gw);
    }

    /**
     * Empty DATA frames without end (CVE-2019-9518): each costs the server a frame's work and moves nothing. The codec
     * closes the connection after two in a row.
     */
    @Test
    void emptyDataFramesWithoutEnd_closeTheConnection() throws Exception {
        Gateway gw = floodedGateway();
        // HEADERS of a POST on stream 1, END_HEADERS without END_STREAM: ":method: POST", ":scheme: http", ":path: /"
        byte[] head = frame(0x1, 0x4, 1, new byte[] {(byte) 0x83, (byte) 0x86, (byte) 0x84});
        byte[] empty = frame(0x0, 0, 1, new byte[0]);
        long sent = flood(gw, head, empty, 4_000_000L * empty.length);
        assertThat(sent).as("bytes sent before the gateway cut the connection (-1: never)")
                .isBetween(0L, 2_000_000L * empty.length);
        assertServesOthers(gw);
    }

    /**
     * Sends the connection preface, an empty SETTINGS, {@code head}, then {@code repeated} until {@code limit} bytes of
     * it went out, never reading; returns the bytes of {@code repeated} written before a write failed, or, when all
     * went out, that count if the gateway then ended the connection. Returns -1 when the connection was still open
     * 60 s after the start (a write blocked on a gateway that stopped reading, or all sent and no end): the socket is
     * then closed from here, so that no write waits for good.
     */
    private static long flood(Gateway gw, byte[] head, byte[] repeated, long limit) throws Exception {
        long sent = 0;
        AtomicBoolean timedOut = new AtomicBoolean(); // set by the watchdog's thread
        try (Socket socket = new Socket()) {
            socket.setReceiveBufferSize(4096); // the gateway's answers back up at once, not after megabytes
            socket.connect(new java.net.InetSocketAddress("127.0.0.1", gw.port()), 5_000);
            socket.setSoTimeout(60_000);
            ScheduledExecutorService watchdog = Executors.newSingleThreadScheduledExecutor();
            watchdog.schedule(() -> {
                timedOut.set(true);
                try {
                    socket.close();
                } catch (java.io.IOException e) {
                    // closed already
                }
            }, 60, TimeUnit.SECONDS);
            byte[] batch = new byte[repeated.length * Math.max(1, 16_384 / repeated.length)];
            for (int i = 0; i + repeated.length <= batch.length; i += repeated.length) {
                System.arraycopy(repeated, 0, batch, i, repeated.length);
            }
            try {
                var out = socket.getOutputStream();
                out.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                out.write(frame(0x4, 0, 0, new byte[0]));
                out.write(head);
                while (sent < limit) {
                    out.write(batch);
                    sent += batch.length;
                }
                out.flush();
                InputStream in = socket.getInputStream();
                byte[] buf = new byte[8192];
                while (in.read(buf) >= 0) {
                    // what the gateway sent: read to the end of the connection
                }
            } catch (java.io.IOException e) {
                // the gateway closed the connection while this client was still sending, or the watchdog did
            } finally {
                watchdog.shutdownNow();
            }
        }
        return timedOut.get() ? -1 : sent;
    }

    /**
     * A gateway whose request-head and body timeouts are minutes long, so that only the frame codec's own limits can
     * close a flooding connection within a test's seconds.
     */
    private Gateway floodedGateway() {
        return gateway(GatewayConfig.defaults("gw").withAccessLog(false)
                .withClientLimits(new ClientLimits(Duration.ofMinutes(5), Duration.ofMinutes(5), 16384)));
    }

    private void assertServesOthers(Gateway gw) throws Exception {
        H2Client other = client(gw);
        H2Client.Stream s = other.post("/v1/chat/completions", Fleet.chat("after", true, 4));
        assertThat(s.status()).isEqualTo(200);
        assertThat(Fleet.await(() -> gw.inFlight() == 0, Duration.ofSeconds(10))).isTrue();
    }

    /** An HTTP/2 frame: 24-bit length, type, flags, stream id, payload (RFC 9113 §4.1). */
    private static byte[] frame(int type, int flags, int stream, byte[] payload) {
        byte[] f = new byte[9 + payload.length];
        f[0] = (byte) (payload.length >>> 16);
        f[1] = (byte) (payload.length >>> 8);
        f[2] = (byte) payload.length;
        f[3] = (byte) type;
        f[4] = (byte) flags;
        f[5] = (byte) (stream >>> 24 & 0x7f);
        f[6] = (byte) (stream >>> 16);
        f[7] = (byte) (stream >>> 8);
        f[8] = (byte) stream;
        System.arraycopy(payload, 0, f, 9, payload.length);
        return f;
    }

    @Test
    void gracefulShutdown_sendsGoAway_andAnOpenStreamFinishes() throws Exception {
        Gateway gw = gateway(GatewayConfig.defaults("gw").withAccessLog(false));
        H2Client c = client(gw);
        H2Client.Stream s = c.post("/v1/chat/completions", Fleet.chat("drain", true, 60));
        assertThat(s.firstData.get(20, TimeUnit.SECONDS)).startsWith("data: ");
        Thread closer = new Thread(gw::close);
        closer.start();
        assertThat(c.goAway.get(10, TimeUnit.SECONDS)).as("last stream id the gateway will serve").isGreaterThanOrEqualTo(1);
        assertThat(s.body().strip()).endsWith("data: [DONE]");
        closer.join(TimeUnit.SECONDS.toMillis(20));
        assertThat(closer.isAlive()).isFalse();
    }

    @Test
    void streamTheClientNeverReads_stopsTheGatewayReadingFromTheEngine_andOnlyThatStreamEnds() throws Exception {
        // the exchange's idle timer and the stream's unread-answer timer race; whichever fires first, the stream
        // must be reset (the exchange's end, once queued, would otherwise keep the close from resetting it)
        Duration idle = Duration.ofSeconds(1);
        try (GatewaySlowClientTest.BlastingEngine engine = new GatewaySlowClientTest.BlastingEngine()) {
            Gateway gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false)
                            .withTimeouts(Duration.ofSeconds(2), Duration.ofSeconds(5), idle, Duration.ofSeconds(60)),
                    SnapshotSource.fixed(GatewaySlowClientTest.oneEngineSnapshot(engine.port())), 1);
            open.add(gw);
            H2Client c = client(gw);
            H2Client.Stream stalled = c.postNeverReading("/v1/chat/completions", Fleet.chat(null, true, 1000));
            // the stream's window fills, the gateway's write waits for it, so the gateway stops reading the engine;
            // the engine's writes block until idle_timeout ends the exchange and closes the engine connection
            assertThat(engine.ended.await(30, TimeUnit.SECONDS)).as("the engine's stream ended").isTrue();
            assertThat(engine.written.get()).as("bytes the engine could send before it was stopped")
                    .isLessThan(GatewaySlowClientTest.BlastingEngine.LIMIT);
            assertThat(engine.failure).as("the gateway closed the engine connection").isNotNull();
            assertThat(Fleet.await(() -> gw.inFlight() == 0, Duration.ofSeconds(10))).isTrue();
            // a reset is not flow-controlled: the client sees it while it still reads nothing
            assertThat(stalled.reset.get(10, TimeUnit.SECONDS)).as("RST_STREAM after idle_timeout unread").isPositive();
            stalled.readFromNowOn(); // the frames the client held unread: the answer's head, part of its body
            assertThat(stalled.status()).isEqualTo(200);
            assertThat(stalled.end.isCompletedExceptionally()).as("the stalled stream was reset, not ended").isTrue();
            assertThat(c.isOpen()).as("the connection and its other streams live on").isTrue();
            H2Client.Stream health = c.get("/healthz");
            assertThat(health.status()).isEqualTo(200);
            assertThat(Http.JSON.readTree(health.body()).path("in_flight").asInt()).isZero();
        }
    }

    @Test
    void connectionWithNoOpenStream_isClosedWithGoAway_afterRequestHeaderTimeout() throws Exception {
        Gateway gw = gateway(GatewayConfig.defaults("gw").withAccessLog(false)
                .withClientLimits(new ClientLimits(Duration.ofMillis(500), Duration.ofSeconds(60), 16384)));
        H2Client c = client(gw);
        H2Client.Stream s = c.post("/v1/chat/completions", Fleet.chat("then-idle", false, 1));
        assertThat(s.status()).isEqualTo(200);
        assertThat(s.body()).contains("\"completion_tokens\":1");
        assertThat(c.goAway.get(10, TimeUnit.SECONDS)).as("last stream id: the one served").isEqualTo(s.id());
        assertThat(Fleet.await(() -> !c.isOpen(), Duration.ofSeconds(10))).as("closed by the gateway").isTrue();
        assertThat(Fleet.await(() -> gw.metrics.scrape().contains("sextant_gateway_http2_connections 0.0"),
                Duration.ofSeconds(10))).isTrue();
    }

    @Test
    void engineGoneBeforeTheFirstByte_theStreamIsRetriedOnAnotherEngine() throws Exception {
        Gateway gw = gateway(GatewayConfig.defaults("gw").withAccessLog(false));
        H2Client c = client(gw);
        H2Client.Stream first = c.post("/v1/chat/completions", Fleet.chat("retry-me", false, 1));
        assertThat(first.status()).isEqualTo(200);
        String engine = first.header("x-sextant-engine");
        first.body();
        fleet.engines.get(engine).close();
        H2Client.Stream again = c.post("/v1/chat/completions", Fleet.chat("retry-me", false, 2));
        assertThat(again.status()).isEqualTo(200);
        assertThat(again.header("x-sextant-engine")).isNotEqualTo(engine);
        assertThat(again.header("x-sextant-attempts")).isEqualTo("2");
        assertThat(Http.JSON.readTree(again.body()).path("usage").path("completion_tokens").asInt()).isEqualTo(2);
    }

    @Test
    void everyAllowedEngineAtItsLimit_is429InOpenAiShapeOnThatStream_whileTheOthersStream() throws Exception {
        Gateway gw = gateway(GatewayConfig.defaults("gw").withAccessLog(false)
                .withOptions(DataPlaneOptions.defaults().toBuilder().maxInFlightPerEngine(1).build()));
        H2Client c = client(gw);
        List<H2Client.Stream> streams = new ArrayList<>();
        for (int i = 0; i <= fleet.engines.size(); i++) { // one more long stream than there are engines
            streams.add(c.post("/v1/chat/completions", Fleet.chat("full-" + i, true, 100)));
        }
        int served = 0;
        int refused = 0;
        for (H2Client.Stream s : streams) {
            if (s.status() == 200) {
                served++;
                assertThat(s.body().strip()).endsWith("data: [DONE]");
            } else {
                refused++;
                assertThat(s.status()).isEqualTo(429);
                assertThat(s.header("retry-after")).isNotNull();
                assertThat(s.header("x-sextant-overloaded")).isEqualTo("true");
                JsonNode error = Http.JSON.readTree(s.body()).path("error");
                assertThat(error.path("type").asText()).isEqualTo("rate_limit_error");
                assertThat(error.path("code").asText()).isEqualTo("overloaded");
            }
        }
        assertThat(refused).as("streams beyond one per engine").isPositive();
        assertThat(served).as("streams the engines took").isPositive().isLessThanOrEqualTo(fleet.engines.size());
    }

    @Test
    void headerListOverMaxHeaderBytes_is431OnThatStream() throws Exception {
        Gateway gw = gateway(GatewayConfig.defaults("gw").withAccessLog(false)
                .withClientLimits(new ClientLimits(Duration.ofSeconds(10), Duration.ofSeconds(60), 4096)));
        H2Client c = client(gw);
        H2Client.Stream big = c.post("/v1/chat/completions", Fleet.chat("big-head", false, 1), "x-big", "y".repeat(4200));
        assertThat(big.status()).isEqualTo(431);
        H2Client.Stream ok = c.post("/v1/chat/completions", Fleet.chat("small-head", false, 1));
        assertThat(ok.status()).isEqualTo(200);
    }

    @Test
    void maxConcurrentStreams_isAdvertised_andAStreamBeyondItIsNotServed() throws Exception {
        Gateway gw = gateway(GatewayConfig.defaults("gw").withAccessLog(false).withHttp2(true, 2));
        H2Client c = client(gw);
        H2Client.Stream a = c.post("/v1/chat/completions", Fleet.chat("limit-a", true, 30));
        H2Client.Stream b = c.post("/v1/chat/completions", Fleet.chat("limit-b", true, 30));
        assertThat(a.status()).isEqualTo(200);
        assertThat(b.status()).isEqualTo(200);
        assertThat(c.settings.get(10, TimeUnit.SECONDS).maxConcurrentStreams()).isEqualTo(2L);
        H2Client.Stream third = c.post("/v1/chat/completions", Fleet.chat("limit-c", true, 30));
        assertThat(Fleet.await(third.end::isDone, Duration.ofSeconds(20))).isTrue();
        assertThat(third.end.isCompletedExceptionally()).as("the third stream was refused").isTrue();
        assertThat(a.body().strip()).endsWith("data: [DONE]");
        assertThat(b.body().strip()).endsWith("data: [DONE]");
        assertThat(gw.metrics.scrape()).contains("sextant_gateway_requests_total{class=\"chat\"");
    }

    @Test
    void http2Off_thePrefaceGetsNoHttp2Answer_andHttp11IsServed() throws Exception {
        Gateway gw = gateway(GatewayConfig.defaults("gw").withAccessLog(false).withHttp2(false, 100));
        try (Socket s = new Socket("127.0.0.1", gw.port())) {
            s.setSoTimeout(10_000);
            byte[] preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
            s.getOutputStream().write(preface);
            s.getOutputStream().flush();
            String answer = readToEnd(s.getInputStream());
            // an HTTP/2 server would answer with its SETTINGS frame; this one reads the preface as HTTP/1.1 requests
            // (PRI *, then SM, which is no request line) and answers in HTTP/1.1, then closes
            assertThat(answer).startsWith("HTTP/1.1 4").contains("HTTP/1.1 400");
        }
        HttpResponse<Stream<String>> r = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2)
                .connectTimeout(Duration.ofSeconds(5)).build()
                .send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gw.port() + "/v1/chat/completions"))
                        .timeout(Duration.ofSeconds(20)).header("content-type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(Fleet.chat("h1-only", true, 3))).build(),
                        HttpResponse.BodyHandlers.ofLines());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.version()).as("an h2c upgrade is not taken").isEqualTo(HttpClient.Version.HTTP_1_1);
        String last = null;
        for (Iterator<String> lines = r.body().iterator(); lines.hasNext(); ) {
            String l = lines.next();
            if (!l.isEmpty()) {
                last = l;
            }
        }
        assertThat(last).isEqualTo("data: [DONE]");
    }

    /**
     * Reads until the gateway closes the connection, or resets it (a close with unread bytes); the socket's read
     * timeout fails the test when it does neither.
     */
    private static String readToEnd(InputStream in) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buf = new byte[4096];
        try {
            for (int n; (n = in.read(buf)) >= 0; ) {
                out.write(buf, 0, n);
            }
        } catch (java.net.SocketException reset) {
            assertThat(out.size()).as("bytes read before a reset").isPositive();
        }
        return out.toString(StandardCharsets.ISO_8859_1);
    }
}
