package dev.sextant.server.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.auth.BearerToken;
import dev.sextant.server.control.ControlPlane;
import dev.sextant.server.control.ControlPlaneConfig;
import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.server.engine.Faults;
import dev.sextant.server.gateway.Fleet;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.IntFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every listener hardened alike: the control plane's and the engine emulator's, as the gateway's. Real servers on
 * ephemeral loopback ports and raw sockets, so that a test can be the client no library would be: one that stops
 * half-way through its head or its body, or opens connections and sends nothing.
 */
public class ListenerHardeningTest {
    static final String TOKEN = "listener-test-token";
    /** A short head timeout, so that a slow head is seen within the test; the rest as by default. */
    static final Duration HEAD = Duration.ofMillis(300);

    @TempDir
    Path dir;
    Fleet fleet;
    final List<AutoCloseable> servers = new ArrayList<>();

    @BeforeEach
    void fleet() {
        fleet = new Fleet(1);
    }

    @AfterEach
    void stop() throws Exception {
        Collections.reverse(servers);
        for (AutoCloseable s : servers) {
            s.close();
        }
        fleet.close();
    }

    private ControlPlane controlPlane(ListenerLimits limits) throws Exception {
        Path topology = dir.resolve("topology.yaml");
        Files.writeString(topology, fleet.yaml(150));
        ControlPlane cp = ControlPlane.start(ControlPlaneConfig.defaults(topology, TOKEN).withIntervals(Duration.ofHours(1),
                Duration.ofHours(1), Duration.ofHours(1), Duration.ofSeconds(1), 3).withLimits(limits));
        servers.add(cp);
        return cp;
    }

    private EngineEmulator engine(String host, BearerToken admin, ListenerLimits limits) {
        EngineEmulator e = EngineEmulator.start(EngineConfig.defaults("e1", "m").withAddress(host, 0), null, admin,
                limits);
        servers.add(e);
        return e;
    }

    /** The control plane's port, or an engine's, with the given limits. */
    private int listener(String which, ListenerLimits limits) throws Exception {
        return which.equals("control plane") ? controlPlane(limits).port()
                : engine("127.0.0.1", BearerToken.of(TOKEN), limits).port();
    }

    @ParameterizedTest
    @ValueSource(strings = {"POST /v1/reports", "POST /admin/faults"})
    void aBodyWithoutTheToken_is401WhileTheClientIsStillSending_andTheConnectionCloses(String request) throws Exception {
        boolean control = request.endsWith("reports");
        int port = listener(control ? "control plane" : "engine",
                control ? ListenerLimits.controlPlane() : ListenerLimits.engine());
        try (Socket s = socket(port)) {
            // announces 1 MB, sends 1 KB of it: the answer must come before the rest is sent
            send(s, request + " HTTP/1.1\r\nhost: x\r\nauthorization: Bearer wrong\r\ncontent-type: application/json\r\n"
                    + "content-length: 1000000\r\n\r\n" + "{".repeat(1000));
            String answer = readToClose(s);
            assertThat(answer).startsWith("HTTP/1.1 401 ").contains("www-authenticate: Bearer")
                    .contains("\"code\":\"unauthorized\"");
        }
        if (!control) {
            assertThat(((EngineEmulator) servers.get(0)).faults()).isEqualTo(Faults.NONE);
        }
    }

    @Test
    void theEmulatorAcceptsTheBearerSchemeInAnyCase_asTheControlPlaneDoes() throws Exception {
        int engine = engine("127.0.0.1", BearerToken.of(TOKEN), ListenerLimits.engine()).port();
        int cp = controlPlane(ListenerLimits.controlPlane()).port();
        for (String scheme : new String[] {"Bearer", "bearer", "BEARER"}) {
            assertThat(status(engine, "GET /admin/faults", scheme + " " + TOKEN)).as(scheme).isEqualTo(200);
            assertThat(status(cp, "GET /v1/snapshot?gateway=gw", scheme + " " + TOKEN)).as(scheme).isEqualTo(200);
        }
    }

    @Test
    void theEmulatorsAdminEndpointWithoutAToken_answersLoopbackOnly() throws Exception {
        InetAddress outside = nonLoopbackAddress();
        Assumptions.assumeTrue(outside != null, "this host has no address but loopback");
        EngineEmulator e = engine("0.0.0.0", null, ListenerLimits.engine());
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(outside, e.port()), 5000);
            s.setSoTimeout(10_000);
            send(s, "POST /admin/faults HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 16\r\n"
                    + "\r\n{\"error_rate\":1}");
            assertThat(readToClose(s)).startsWith("HTTP/1.1 403 ").contains("--admin-token-file");
        }
        assertThat(e.faults()).isEqualTo(Faults.NONE);
        assertThat(status(e.port(), "GET /admin/faults", null)).as("from this host").isEqualTo(200);
    }

    @ParameterizedTest
    @ValueSource(strings = {"control plane", "engine"})
    void connectionsOverTheCap_areClosedAtOnce_andAPlaceFreedIsTakenAgain(String which) throws Exception {
        int port = listener(which, (which.equals("engine") ? ListenerLimits.engine() : ListenerLimits.controlPlane())
                .withMaxConnections(3));
        List<Socket> open = new ArrayList<>();
        int refused = 0;
        try {
            for (int i = 0; i < 4; i++) {
                Socket s = socket(port);
                if (answersHealth(s)) {
                    open.add(s);
                } else {
                    refused++;
                    s.close();
                }
            }
            assertThat(open).hasSize(3);
            assertThat(refused).isEqualTo(1);
            open.remove(0).close();
            assertThat(Fleet.await(() -> {
                try (Socket again = socket(port)) {
                    return answersHealth(again);
                } catch (IOException e) {
                    return false;
                }
            }, Duration.ofSeconds(10))).as("the place freed is taken").isTrue();
        } finally {
            for (Socket s : open) {
                s.close();
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"control plane", "engine"})
    void aHeadThatStopsHalfWay_gets408AndTheConnectionCloses_andAnIdleOneIsClosed(String which) throws Exception {
        ListenerLimits d = which.equals("engine") ? ListenerLimits.engine() : ListenerLimits.controlPlane();
        int port = listener(which, d.withRequestHeaderTimeout(HEAD));
        try (Socket slow = socket(port); Socket idle = socket(port)) {
            send(slow, "GET /healthz HTTP/1.1\r\nhost: x\r\nx-more: ");
            assertThat(readToClose(slow)).startsWith("HTTP/1.1 408 ").contains("request_header_timeout");
            assertThat(readToClose(idle)).as("closed without an answer").isEmpty();
        }
    }

    /**
     * The head clock waits for the next request, not for the answer: an engine keeps a read pending while it
     * generates (to see a client that goes away), and when that read started the clock every answer that took longer
     * than the head timeout was cut, a non-streaming one before it was sent, a stream in the middle.
     */
    @ParameterizedTest(name = "stream: {0}")
    @ValueSource(booleans = {false, true})
    void anAnswerLongerThanTheHeadTimeout_isWrittenWhole(boolean stream) throws Exception {
        int port = listener("engine", ListenerLimits.engine().withRequestHeaderTimeout(HEAD));
        // 100 tokens of 8 ms steps: about 0.8 s, over twice the head timeout
        String body = "{\"model\":\"m\",\"max_tokens\":100,\"stream\":" + stream
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
        try (Socket s = socket(port)) {
            send(s, "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: "
                    + "application/json\r\ncontent-length: " + body.length() + "\r\n\r\n" + body);
            String answer = readToClose(s);
            assertThat(answer).startsWith("HTTP/1.1 200 ");
            assertThat(answer).contains(stream ? "data: [DONE]" : "\"completion_tokens\":100");
        }
        try (Socket idle = socket(port)) {
            assertThat(readToClose(idle)).as("an idle connection is still closed").isEmpty();
        }
    }

    @Test
    void aHeadOverTheLimit_is431AndTheConnectionCloses() throws Exception {
        int port = controlPlane(ListenerLimits.controlPlane()).port();
        try (Socket s = socket(port)) {
            send(s, "GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: " + "a".repeat(ClientLimits.DEFAULT_MAX_HEADER_BYTES)
                    + "\r\n\r\n");
            assertThat(readToClose(s)).startsWith("HTTP/1.1 431 ");
        }
    }

    @Test
    void bodiesOverTheBudget_are503BeforeTheyAreRead_andThePlaceIsFreedWhenTheHolderLeaves() throws Exception {
        ControlPlane cp = controlPlane(ListenerLimits.controlPlane()
                .withMaxBufferedBodyBytes(ListenerLimits.MIN_BUFFERED_BODY_BYTES));
        int port = cp.port();
        // connection: close, so that a kept-alive answer (the 400) ends the read; else only the idle timeout would
        IntFunction<String> report = length -> "POST /v1/reports HTTP/1.1\r\nhost: x\r\nauthorization: Bearer " + TOKEN
                + "\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: " + length + "\r\n\r\n";
        try (Socket holder = socket(port)) {
            send(holder, report.apply(ControlPlane.MAX_BODY_BYTES) + "{\"gateway\":");
            assertThat(Fleet.await(() -> metric(port, "sextant_control_buffered_body_bytes")
                    == ControlPlane.MAX_BODY_BYTES, Duration.ofSeconds(10))).isTrue();
            try (Socket other = socket(port)) {
                send(other, report.apply(2) + "{}");
                assertThat(readToClose(other)).startsWith("HTTP/1.1 503 ").contains("retry-after: 1")
                        .contains("max_buffered_body_bytes");
            }
        }
        assertThat(Fleet.await(() -> metric(port, "sextant_control_buffered_body_bytes") == 0, Duration.ofSeconds(10)))
                .as("given back when the holder left").isTrue();
        try (Socket s = socket(port)) {
            send(s, report.apply(2) + "{}");
            assertThat(readToClose(s)).as("checked, not refused for room").startsWith("HTTP/1.1 400 ");
        }
        assertThat(metric(port, "sextant_control_refused_bodies_total")).isEqualTo(1);
    }

    // ---- raw HTTP/1.1 on a socket

    public static Socket socket(int port) throws IOException {
        Socket s = new Socket();
        s.connect(new InetSocketAddress("127.0.0.1", port), 5000);
        s.setSoTimeout(10_000);
        return s;
    }

    public static void send(Socket s, String text) throws IOException {
        s.getOutputStream().write(text.getBytes(StandardCharsets.ISO_8859_1));
        s.getOutputStream().flush();
    }

    /** Everything the server sends until it closes (a reset after its answer counts as the close). */
    public static String readToClose(Socket s) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        InputStream in = s.getInputStream();
        byte[] buf = new byte[8192];
        try {
            for (int n; (n = in.read(buf)) >= 0; ) {
                out.write(buf, 0, n);
            }
        } catch (java.net.SocketException e) {
            if (out.size() == 0 && !String.valueOf(e.getMessage()).contains("reset")) {
                throw e;
            }
        }
        return out.toString(StandardCharsets.ISO_8859_1);
    }

    /** Whether {@code GET /healthz} on this connection gets 200 (false: the server closed it instead). */
    private static boolean answersHealth(Socket s) {
        try {
            send(s, "GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n");
            byte[] head = new byte[12];
            int n = s.getInputStream().readNBytes(head, 0, head.length);
            return n == head.length && new String(head, StandardCharsets.ISO_8859_1).equals("HTTP/1.1 200");
        } catch (IOException e) {
            return false;
        }
    }

    /** The status of one request on a fresh connection, with {@code authorization} unless null. */
    private static int status(int port, String requestLine, String authorization) throws IOException {
        try (Socket s = socket(port)) {
            send(s, requestLine + " HTTP/1.1\r\nhost: x\r\nconnection: close\r\n"
                    + (authorization == null ? "" : "authorization: " + authorization + "\r\n") + "\r\n");
            return Integer.parseInt(readToClose(s).substring(9, 12));
        }
    }

    private static double metric(int port, String name) {
        try {
            for (var sample : dev.sextant.signal.PrometheusText.parse(Fleet.get(port, "/metrics").body())
                    .samples(name)) {
                return sample.value();
            }
            return Double.NaN;
        } catch (Exception e) {
            return Double.NaN;
        }
    }

    private static InetAddress nonLoopbackAddress() throws IOException {
        for (NetworkInterface n : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            if (n.isUp() && !n.isLoopback()) {
                for (InetAddress a : Collections.list(n.getInetAddresses())) {
                    if (a instanceof java.net.Inet4Address) {
                        return a;
                    }
                }
            }
        }
        return null;
    }
}
