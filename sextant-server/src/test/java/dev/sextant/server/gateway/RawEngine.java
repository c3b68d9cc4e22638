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
 * whole (status line, headers and body, framed or not) in two writes, then closes the connection, waits for the next
 * request on it, or holds it silent for a while ({@link #answer(String, boolean, boolean)} changes all three between
 * requests). A daemon thread per connection; for tests only.
 */
final class RawEngine implements AutoCloseable {
    private final ServerSocket server;
    private volatile byte[] answer;
    private volatile boolean closeAfter;
    private volatile boolean holdAfter;

    RawEngine(String answer, boolean closeAfter) {
        answer(answer, closeAfter, false);
        try {
            server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Thread t = new Thread(this::serve, "raw-engine");
        t.setDaemon(true);
        t.start();
    }

    /**
     * From the next request on, answers with {@code bytes}, then closes the connection ({@code closeAfter}), or holds
     * it silent for 4 s and closes it ({@code holdAfter}), or waits for the next request on it.
     */
    void answer(String bytes, boolean closeAfter, boolean holdAfter) {
        this.answer = bytes.getBytes(StandardCharsets.ISO_8859_1);
        this.closeAfter = closeAfter;
        this.holdAfter = holdAfter;
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
            while (true) {
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
                byte[] a = answer;
                boolean close = closeAfter;
                boolean hold = holdAfter;
                s.getOutputStream().write(a, 0, a.length / 2);
                s.getOutputStream().flush();
                s.getOutputStream().write(a, a.length / 2, a.length - a.length / 2);
                s.getOutputStream().flush();
                if (hold) {
                    Thread.sleep(4000);
                    return;
                }
                if (close) {
                    return;
                }
            }
        } catch (IOException e) {
            // the gateway went away
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
    }
}
