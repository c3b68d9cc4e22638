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
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** An exchange bounded as a whole: an answer that stops after its head is given up at the deadline, its connection closed. */
class WholeAnswerTest {
    private final CountDownLatch cut = new CountDownLatch(1);
    private HttpServer server;
    private final HttpClient client = HttpClient.newHttpClient();

    @BeforeEach
    void start() throws IOException {
        server = TestHttpServers.loopback();
        server.createContext("/whole", TestHttpServers.answering("ok"));
        server.createContext("/stops", ex -> {
            ex.sendResponseHeaders(200, 1000);
            try (OutputStream out = ex.getResponseBody()) {
                for (int i = 0; i < 600; i++) { // a byte every 100 ms: never the thousand announced in time
                    out.write('x');
                    out.flush();
                    Thread.sleep(100);
                }
            } catch (IOException e) {
                cut.countDown();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        server.start();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    private HttpRequest get(String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.getAddress().getPort() + path))
                .timeout(Duration.ofSeconds(1)).GET().build();
    }

    @Test
    void aWholeAnswer_isReturned() throws Exception {
        HttpResponse<String> r = WholeAnswer.send(client, get("/whole"), HttpResponse.BodyHandlers.ofString(),
                Duration.ofSeconds(10));
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).isEqualTo("ok");
    }

    @Test
    void anAnswerThatStopsAfterItsHead_isGivenUpAtTheDeadline_andItsConnectionClosed() throws Exception {
        assertThatThrownBy(() -> WholeAnswer.send(client, get("/stops"), HttpResponse.BodyHandlers.discarding(),
                Duration.ofMillis(500))).isInstanceOf(IOException.class).hasMessage("no whole answer within 500 ms");
        assertThat(cut.await(30, TimeUnit.SECONDS)).as("the connection closed").isTrue();
    }
}
