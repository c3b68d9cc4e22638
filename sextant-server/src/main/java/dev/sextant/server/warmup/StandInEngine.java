package dev.sextant.server.warmup;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The warm-up's engine: OpenAI-shaped answers at once, a JSON completion or, when the request asks to stream, four
 * server-sent chunks and {@code [DONE]}. It runs on the JDK's own HTTP server, not on Netty, on purpose: the JIT
 * compiles Netty's code for the types and branches it has seen, and an engine of Netty in the same JVM would show it
 * an engine's pipelines beside the gateway's, uses a gateway process does not have once it serves. (A first form
 * with the engine emulator here left the gateway slower for the minute after its start: BENCHMARKS.md.)
 */
final class StandInEngine implements AutoCloseable {
    private static final byte[] ANSWER = ("{\"id\":\"warm-up\",\"object\":\"chat.completion\",\"model\":\"warm-up\","
            + "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"ok\"},"
            + "\"finish_reason\":\"stop\"}],"
            + "\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":1,\"total_tokens\":9}}")
            .getBytes(StandardCharsets.UTF_8);
    private static final byte[] CHUNK = ("data: {\"id\":\"warm-up\",\"object\":\"chat.completion.chunk\","
            + "\"model\":\"warm-up\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n")
            .getBytes(StandardCharsets.UTF_8);
    private static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8);
    private static final int CHUNKS = 4;

    private final HttpServer server;
    private final ExecutorService threads;

    private StandInEngine(HttpServer server, ExecutorService threads) {
        this.server = server;
        this.threads = threads;
    }

    /** Listens on a loopback ephemeral port. */
    static StandInEngine start() throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
        ExecutorService threads = Executors.newFixedThreadPool(4, r -> {
            Thread t = new Thread(r, "sextant-warm-up-engine");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(threads);
        server.createContext("/", StandInEngine::answer);
        server.start();
        return new StandInEngine(server, threads);
    }

    int port() {
        return server.getAddress().getPort();
    }

    private static void answer(HttpExchange x) throws IOException {
        try (x) {
            byte[] body;
            try (InputStream in = x.getRequestBody()) {
                body = in.readAllBytes();
            }
            // the warm-up's own requests: "stream":true is written without spaces
            boolean stream = new String(body, StandardCharsets.UTF_8).contains("\"stream\":true");
            if (!stream) {
                x.getResponseHeaders().set("content-type", "application/json");
                x.sendResponseHeaders(200, ANSWER.length);
                x.getResponseBody().write(ANSWER);
                return;
            }
            x.getResponseHeaders().set("content-type", "text/event-stream");
            x.sendResponseHeaders(200, 0); // chunked, as an engine's stream
            OutputStream out = x.getResponseBody();
            for (int i = 0; i < CHUNKS; i++) {
                out.write(CHUNK);
                out.flush();
            }
            out.write(DONE);
        }
    }

    @Override
    public void close() {
        server.stop(0);
        threads.shutdownNow();
        try {
            threads.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
