package dev.sextant.server.reliability;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An engine that closes idle keep-alive connections the way a server with a short keep-alive timeout does at the
 * worst moment: it answers the first request of each connection (an OpenAI chat completion, streamed or not) and
 * keeps the connection open, then closes it as the next request arrives, unanswered — with a FIN, or with a reset
 * ({@code SO_LINGER 0}). A thread per connection; for tests only.
 */
final class OneShotEngine implements AutoCloseable {
    private final String id;
    private final boolean reset;
    private final ServerSocket server;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    final AtomicInteger answered = new AtomicInteger();
    final AtomicInteger dropped = new AtomicInteger();

    OneShotEngine(String id, boolean reset) {
        this.id = id;
        this.reset = reset;
        try {
            server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Thread t = new Thread(this::accept, "one-shot-engine");
        t.setDaemon(true);
        t.start();
    }

    String endpoint() {
        return "http://127.0.0.1:" + server.getLocalPort();
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket s = server.accept();
                sockets.add(s);
                Thread t = new Thread(() -> serve(s), "one-shot-connection");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                return;
            }
        }
    }

    private void serve(Socket s) {
        try (s) {
            InputStream in = s.getInputStream();
            String body = readRequest(in);
            if (body == null) {
                return;
            }
            answer(s.getOutputStream(), body.contains("\"stream\":true"));
            answered.incrementAndGet();
            if (readRequest(in) == null) { // the next request, read whole (so that a close is a FIN): dropped
                return;
            }
            dropped.incrementAndGet();
            if (reset) {
                s.setSoLinger(true, 0);
            }
        } catch (IOException e) {
            // the gateway went away: nothing to do
        }
    }

    /** Reads one request (head and content-length body); null at the end of the stream. */
    private static String readRequest(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        int state = 0;
        while (state < 4) {
            int b = in.read();
            if (b < 0) {
                return null;
            }
            head.write(b);
            state = (b == '\r' && (state == 0 || state == 2)) || (b == '\n' && (state == 1 || state == 3)) ? state + 1 : 0;
        }
        int length = 0;
        for (String line : head.toString(StandardCharsets.US_ASCII).split("\r\n")) {
            if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
                length = Integer.parseInt(line.substring(15).strip());
            }
        }
        return new String(in.readNBytes(length), StandardCharsets.UTF_8);
    }

    private void answer(OutputStream out, boolean stream) throws IOException {
        String response;
        if (stream) {
            StringBuilder chunks = new StringBuilder();
            for (String event : List.of(
                    "{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":null}]}",
                    "{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}",
                    "[DONE]")) {
                String e = "data: " + event + "\n\n";
                chunks.append(Integer.toHexString(e.getBytes(StandardCharsets.UTF_8).length)).append("\r\n").append(e)
                        .append("\r\n");
            }
            response = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
                    + "x-engine-id: " + id + "\r\n\r\n" + chunks + "0\r\n\r\n";
        } else {
            String json = "{\"id\":\"c\",\"object\":\"chat.completion\",\"model\":\"m\",\"choices\":[{\"index\":0,"
                    + "\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}";
            response = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                    + json.getBytes(StandardCharsets.UTF_8).length + "\r\nx-engine-id: " + id + "\r\n\r\n" + json;
        }
        out.write(response.getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    @Override
    public void close() throws IOException {
        server.close();
        for (Socket s : sockets) {
            s.close();
        }
    }
}
