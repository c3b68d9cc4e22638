package dev.sextant.server.gateway;

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
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An engine that closes idle keep-alive connections the way a server with a short keep-alive timeout does at the
 * worst moment: it answers the first request of each connection (an OpenAI chat completion, streamed or not) and
 * keeps the connection open, then closes it as the next request arrives, unanswered ({@link Drop}). A thread per
 * connection; for tests only.
 */
public final class OneShotEngine implements AutoCloseable {
    /** How the second request of a connection is dropped. */
    public enum Drop {
        /** Read whole, then a FIN: the engine had the request and could have started it. */
        FIN_AFTER_READING,
        /** Read whole, then a reset ({@code SO_LINGER 0}). */
        RST_AFTER_READING,
        /** A reset as soon as the request's head arrived, its body unread: the engine cannot have started it. */
        RST_BEFORE_READING
    }

    private final String id;
    private final Drop drop;
    private final ServerSocket server;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    public final AtomicInteger answered = new AtomicInteger();
    public final AtomicInteger dropped = new AtomicInteger();
    /** Requests answered, by {@code x-request-id}. */
    private final Map<String, AtomicInteger> answeredById = new ConcurrentHashMap<>();

    public OneShotEngine(String id, Drop drop) {
        this.id = id;
        this.drop = drop;
        try {
            server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Thread t = new Thread(this::accept, "one-shot-engine");
        t.setDaemon(true);
        t.start();
    }

    public String endpoint() {
        return "http://127.0.0.1:" + server.getLocalPort();
    }

    int port() {
        return server.getLocalPort();
    }

    /** How many times it answered a request of this {@code x-request-id}. */
    public int answered(String requestId) {
        AtomicInteger n = answeredById.get(requestId);
        return n == null ? 0 : n.get();
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

    private record Request(String requestId, int length) {
    }

    private void serve(Socket s) {
        try (s) {
            InputStream in = s.getInputStream();
            Request first = readHead(in);
            if (first == null) {
                return;
            }
            String body = new String(in.readNBytes(first.length()), StandardCharsets.UTF_8);
            // counted before the answer goes out: a client that has it must find it counted
            answered.incrementAndGet();
            if (first.requestId() != null) {
                answeredById.computeIfAbsent(first.requestId(), k -> new AtomicInteger()).incrementAndGet();
            }
            answer(s.getOutputStream(), body.contains("\"stream\":true"));
            Request next = readHead(in);
            if (next == null) {
                return;
            }
            if (drop != Drop.RST_BEFORE_READING) {
                in.readNBytes(next.length()); // read whole, so that a close is a FIN
            }
            dropped.incrementAndGet();
            if (drop != Drop.FIN_AFTER_READING) {
                s.setSoLinger(true, 0);
            }
        } catch (IOException e) {
            // the gateway went away: nothing to do
        }
    }

    /** Reads one request's head; null at the end of the stream. */
    private static Request readHead(InputStream in) throws IOException {
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
        String requestId = null;
        for (String line : head.toString(StandardCharsets.US_ASCII).split("\r\n")) {
            String lower = line.toLowerCase(Locale.ROOT);
            if (lower.startsWith("content-length:")) {
                length = Integer.parseInt(line.substring(15).strip());
            } else if (lower.startsWith("x-request-id:")) {
                requestId = line.substring(13).strip();
            }
        }
        return new Request(requestId, length);
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
