package dev.sextant.server.gateway;

import dev.sextant.config.SnapshotJson;
import dev.sextant.snapshot.Snapshot;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * An engine written by hand for what the emulator does not do: it answers every request with the same bytes, given
 * whole (status line, headers and body, framed or not), then closes the connection or waits for the next request on
 * it. A daemon thread per connection; for tests only.
 */
final class RawEngine implements AutoCloseable {
    private final ServerSocket server;
    private final byte[] answer;
    private final boolean closeAfter;

    RawEngine(String answer, boolean closeAfter) {
        this.answer = answer.getBytes(StandardCharsets.ISO_8859_1);
        this.closeAfter = closeAfter;
        try {
            server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Thread t = new Thread(this::serve, "raw-engine");
        t.setDaemon(true);
        t.start();
    }

    /** {@code s} with every engine's endpoint pointing at this one. */
    Snapshot behindEveryEngine(Snapshot s) throws dev.sextant.config.SnapshotException {
        String json = SnapshotJson.write(s).replaceAll("\"http://127\\.0\\.0\\.1:\\d+\"",
                "\"http://127.0.0.1:" + server.getLocalPort() + "\"");
        return SnapshotJson.read(json, "raw-engine.json");
    }

    private void serve() {
        while (!server.isClosed()) {
            try {
                Socket s = server.accept();
                Thread t = new Thread(() -> answer(s), "raw-engine-connection");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    private void answer(Socket connection) {
        try (Socket s = connection) {
            BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.ISO_8859_1));
            do {
                int length = -1;
                for (String line; (line = in.readLine()) != null && !line.isEmpty(); ) {
                    length = Math.max(length, 0);
                    if (line.regionMatches(true, 0, "content-length:", 0, 15)) {
                        length = Integer.parseInt(line.substring(15).trim());
                    }
                }
                if (length < 0) {
                    return; // the gateway closed the connection
                }
                in.skip(length);
                s.getOutputStream().write(answer);
                s.getOutputStream().flush();
            } while (!closeAfter);
        } catch (IOException e) {
            // the gateway went away
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
    }
}
