package dev.sextant.server.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A body read up to a limit: what it announces beyond the limit is refused before it is read, what it sends is cut. */
class BoundedBodyTest {
    private HttpServer server;
    private final HttpClient client = HttpClient.newHttpClient();

    @BeforeEach
    void start() throws IOException {
        server = TestHttpServers.loopback();
        server.createContext("/small", TestHttpServers.answering("hello"));
        server.createContext("/announced", ex -> { // a length beyond the limit, and its body a minute away
            ex.sendResponseHeaders(200, 1000);
            try (OutputStream out = ex.getResponseBody()) {
                Thread.sleep(60_000);
                out.write(new byte[1000]);
            } catch (IOException | InterruptedException e) {
                // the client went away
            }
        });
        server.createContext("/unannounced", ex -> { // chunked, no length: 1000 bytes
            ex.sendResponseHeaders(200, 0);
            try (OutputStream out = ex.getResponseBody()) {
                for (int i = 0; i < 10; i++) {
                    out.write(new byte[100]);
                    out.flush();
                }
            } catch (IOException e) {
                // the client went away
            }
        });
        server.start();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    private HttpResponse<String> get(String path) throws Exception {
        return client.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.getAddress().getPort()
                + path)).timeout(Duration.ofSeconds(10)).build(), BoundedBody.ofString(100)).join();
    }

    @Test
    void aBodyWithinTheLimit_isItsText() throws Exception {
        assertThat(get("/small").body()).isEqualTo("hello");
    }

    @Test
    void aLengthAnnouncedBeyondTheLimit_isRefusedWithoutWaitingForTheBody() {
        // the body would come after a minute: join() returning at all shows it was not waited for
        assertThatThrownBy(() -> get("/announced")).isInstanceOf(CompletionException.class)
                .hasRootCauseInstanceOf(IOException.class)
                .rootCause().hasMessage("a body of 1000 bytes announced (expected: at most 100 bytes)");
    }

    @Test
    void aBodyThatGrowsBeyondTheLimit_isCut() {
        assertThatThrownBy(() -> get("/unannounced")).isInstanceOf(CompletionException.class)
                .rootCause().hasMessage("a body of more than 100 bytes (expected: at most 100 bytes)");
    }
}
