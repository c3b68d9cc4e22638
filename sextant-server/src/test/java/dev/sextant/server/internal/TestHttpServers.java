package dev.sextant.server.internal;

import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

/** The JDK's HTTP server as a test's peer. */
public final class TestHttpServers {
    private TestHttpServers() {
    }

    /**
     * A server on a loopback port of its own, not started (add its contexts, then start it), whose handlers run on
     * daemon threads of their own: a handler that trickles or waits does not hold the others, nor outlive the test.
     */
    public static HttpServer loopback() throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.setExecutor(Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        }));
        return server;
    }

    /** A handler that answers 200 with {@code body}, its length announced. */
    public static HttpHandler answering(String body) {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        return ex -> {
            ex.sendResponseHeaders(200, bytes.length);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(bytes);
            }
        };
    }
}
