package dev.sextant.server.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The demo's load driver counts every request once: answered, failed, shed or still in flight. */
class LoadDriverTest {

    @Test
    void aStreamCutAfterItsFirstChunk_isOneErrorPerRequest() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            Thread cutter = new Thread(() -> cutEveryStream(server), "stream-cutter");
            cutter.setDaemon(true);
            cutter.start();
            ByteArrayOutputStream lines = new ByteArrayOutputStream();
            LoadDriver load = new LoadDriver(List.of(URI.create("http://127.0.0.1:" + server.getLocalPort())), 50,
                    Duration.ofMillis(200), new PrintStream(lines, true, StandardCharsets.UTF_8));
            Thread.sleep(600);
            load.close();
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (load.errors() < load.sent() && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(load.sent()).isPositive();
            assertThat(load.ok()).isZero();
            assertThat(load.errors()).as("errors, one per request sent").isEqualTo(load.sent());
            assertThat(lines.toString(StandardCharsets.UTF_8)).contains("in flight ");
        }
    }

    /** Answers each request with 200 and one SSE chunk, then closes the connection in the middle of the body. */
    private static void cutEveryStream(ServerSocket server) {
        while (!server.isClosed()) {
            try (Socket s = server.accept()) {
                InputStream in = s.getInputStream();
                byte[] buf = new byte[8192];
                int n = in.read(buf); // the request (small: one read holds it)
                if (n < 0) {
                    continue;
                }
                String chunk = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n";
                OutputStream out = s.getOutputStream();
                out.write(("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                        + Integer.toHexString(chunk.length()) + "\r\n" + chunk + "\r\n").getBytes(StandardCharsets.UTF_8));
                out.flush();
            } catch (Exception e) {
                // the server socket closed, or the client went: next one
            }
        }
    }
}
