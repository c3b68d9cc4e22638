package dev.sextant.server.gateway;

import dev.sextant.server.internal.ClientLimits;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code Upgrade: h2c} with an answer larger than a few frames: the gateway answers the upgraded request only after
 * the client's connection preface, so clients that mishandle data arriving with the {@code 101} (curl 7.88, the JDK
 * 17 client now and then) get it whole.
 */
class GatewayH2cUpgradeTest {
    static final Duration PATIENCE = Duration.ofMillis(1500);
    @RegisterExtension
    static final GatewayFixture GW = GatewayFixture.of(20, 2, config -> config.withClientLimits(
            new ClientLimits(PATIENCE, Duration.ofSeconds(60), ClientLimits.defaults().maxHeaderBytes())));

    @BeforeAll
    static void start() throws Exception {
        // traffic to many engines makes /metrics large: tens of KB, several DATA frames after the 101
        HttpClient h1 = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        for (int i = 0; i < 80; i++) {
            HttpResponse<String> r = h1.send(HttpRequest.newBuilder(uri("/v1/chat/completions"))
                    .timeout(Duration.ofSeconds(20)).header("content-type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(Fleet.chat("warm-" + i, false, 1))).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).isEqualTo(200);
        }
    }

    static URI uri(String path) {
        return URI.create("http://127.0.0.1:" + GW.port() + path);
    }

    @Test
    void upgradedRequest_isAnsweredOnlyAfterTheClientsPreface() throws Exception {
        try (Socket s = new Socket("127.0.0.1", GW.port())) {
            s.setSoTimeout(300);
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            out.write(upgradeRequest("/metrics"));
            out.flush();
            // the 101 and the server's SETTINGS, however slow the machine; then a while longer for anything else
            ByteArrayOutputStream received = new ByteArrayOutputStream();
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (System.nanoTime() < deadline && !headAndOneFrame(received.toByteArray())) {
                received.write(readFor(in, Duration.ofMillis(50)));
            }
            received.write(readFor(in, Duration.ofMillis(400)));
            byte[] before = received.toByteArray();
            String text = new String(before, StandardCharsets.ISO_8859_1);
            assertThat(text).startsWith("HTTP/1.1 101 ");
            List<int[]> early = frames(before, text.indexOf("\r\n\r\n") + 4);
            assertThat(early).as("frames before the client's preface (type, flags, stream)")
                    .allSatisfy(f -> assertThat(f[2]).as("stream").isZero());
            assertThat(early).extracting(f -> f[0]).containsExactly(4); // the server's SETTINGS only

            out.write(clientPreface());
            out.flush();
            s.setSoTimeout(10_000);
            List<int[]> after = new ArrayList<>();
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            byte[] buf = new byte[65536];
            while (after.stream().noneMatch(f -> f[2] == 1 && f[0] == 0 && (f[1] & 1) != 0)) {
                int n = in.read(buf);
                assertThat(n).as("bytes before stream 1 ended").isPositive();
                got.write(buf, 0, n);
                after = frames(got.toByteArray(), 0);
            }
            assertThat(after).filteredOn(f -> f[2] == 1).extracting(f -> f[0]).first().isEqualTo(1); // HEADERS
            long dataBytes = after.stream().filter(f -> f[2] == 1 && f[0] == 0).mapToLong(f -> f[3]).sum();
            assertThat(dataBytes).as("the metrics text, over several DATA frames").isGreaterThan(32 * 1024);
        }
    }

    @Test
    void clientThatNeverSendsItsPreface_isClosed_afterRequestHeaderTimeout() throws Exception {
        try (LogCapture log = new LogCapture(); Socket s = new Socket("127.0.0.1", GW.port())) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write(upgradeRequest("/v1/models"));
            s.getOutputStream().flush();
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            byte[] buf = new byte[65536];
            for (int n; (n = s.getInputStream().read(buf)) >= 0; ) { // to the close (a read timeout fails the test)
                got.write(buf, 0, n);
            }
            assertThat(Fleet.await(() -> log.any("no HTTP/2 preface within " + PATIENCE.toMillis() + " ms"),
                    Duration.ofSeconds(5))).as("closed by the wait for the preface, not by anything else").isTrue();
            byte[] b = got.toByteArray();
            String text = new String(b, StandardCharsets.ISO_8859_1);
            assertThat(text).startsWith("HTTP/1.1 101 ");
            assertThat(frames(b, text.indexOf("\r\n\r\n") + 4)).as("frames (type, flags, stream, length)")
                    .noneMatch(f -> f[2] == 1 && f[0] != 3); // no answer it could not read; a reset at most
        }
    }

    @Test
    void jdkClient_upgradingForALargeAnswer_getsItWholeEveryTime() throws Exception {
        List<String> failures = new ArrayList<>();
        for (int i = 0; i < 150; i++) {
            HttpClient c = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2).build(); // a new connection each
            try {
                HttpResponse<String> r = c.send(HttpRequest.newBuilder(uri("/metrics")).timeout(Duration.ofSeconds(5))
                        .build(), HttpResponse.BodyHandlers.ofString());
                assertThat(r.version()).isEqualTo(HttpClient.Version.HTTP_2);
                assertThat(r.statusCode()).isEqualTo(200);
                assertThat(r.body()).hasSizeGreaterThan(32 * 1024).contains("sextant_gateway_requests_total");
            } catch (IOException e) {
                failures.add(i + ": " + e);
            }
        }
        assertThat(failures).as("upgrades that failed").isEmpty();
    }

    private static byte[] upgradeRequest(String path) {
        return ("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                + "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * The connection preface, an empty SETTINGS frame and a WINDOW_UPDATE that opens the connection's window to 1 GiB
     * (the upgrade's settings opened each stream's; the connection's starts at 64 KiB, less than /metrics can be).
     */
    private static byte[] clientPreface() {
        byte[] magic = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
        byte[] all = new byte[magic.length + 9 + 13];
        System.arraycopy(magic, 0, all, 0, magic.length);
        int at = magic.length;
        all[at + 3] = 4; // SETTINGS: length 0, flags 0, stream 0
        at += 9;
        all[at + 2] = 4; // WINDOW_UPDATE: length 4, stream 0, increment 2^30 − 65,535
        all[at + 3] = 8;
        int increment = (1 << 30) - 65_535;
        for (int i = 0; i < 4; i++) {
            all[at + 9 + i] = (byte) (increment >>> (24 - 8 * i));
        }
        return all;
    }

    /** Whether {@code b} holds a whole HTTP head and at least one whole HTTP/2 frame after it. */
    private static boolean headAndOneFrame(byte[] b) {
        int head = new String(b, StandardCharsets.ISO_8859_1).indexOf("\r\n\r\n");
        return head >= 0 && !frames(b, head + 4).isEmpty();
    }

    /** What arrives within {@code d} (the socket's timeout bounds each read). */
    private static byte[] readFor(InputStream in, Duration d) throws IOException {
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        byte[] buf = new byte[65536];
        long end = System.nanoTime() + d.toNanos();
        while (System.nanoTime() < end) {
            try {
                int n = in.read(buf);
                if (n < 0) {
                    break;
                }
                got.write(buf, 0, n);
            } catch (SocketTimeoutException e) {
                // nothing more yet
            }
        }
        return got.toByteArray();
    }

    /** Whole HTTP/2 frames in {@code b} from {@code from}: {type, flags, stream, length} each. */
    private static List<int[]> frames(byte[] b, int from) {
        List<int[]> out = new ArrayList<>();
        int at = from;
        while (at + 9 <= b.length) {
            int length = ((b[at] & 0xff) << 16) | ((b[at + 1] & 0xff) << 8) | (b[at + 2] & 0xff);
            if (at + 9 + length > b.length) {
                break;
            }
            int stream = ((b[at + 5] & 0x7f) << 24) | ((b[at + 6] & 0xff) << 16) | ((b[at + 7] & 0xff) << 8)
                    | (b[at + 8] & 0xff);
            out.add(new int[] {b[at + 3] & 0xff, b[at + 4] & 0xff, stream, length});
            at += 9 + length;
        }
        return out;
    }
}
