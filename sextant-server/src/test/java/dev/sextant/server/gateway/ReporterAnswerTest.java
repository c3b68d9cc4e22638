package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.sextant.server.internal.TestHttpServers;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Whatever answers at the control plane's address, a gateway reads no more of its answer than a report needs. */
class ReporterAnswerTest {

    /** Without the limit the report waits out its 10 s and the log says it timed out, not what came. */
    @Test
    void anAnswerThatNeverEnds_isCutAtTheLimit_andTheFailureSaysSo() throws Exception {
        HttpServer endless = TestHttpServers.loopback();
        endless.createContext("/v1/reports", ex -> {
            ex.getRequestBody().readAllBytes();
            ex.sendResponseHeaders(200, 0); // chunked, no length announced
            byte[] chunk = new byte[16 * 1024];
            try (OutputStream out = ex.getResponseBody()) {
                while (true) { // until the gateway stops reading
                    out.write(chunk);
                }
            } catch (IOException stopped) {
                // the gateway cancelled the exchange
            }
        });
        endless.start();
        try (LogCapture logged = new LogCapture();
             Reporter reporter = new Reporter("east", URI.create("http://127.0.0.1:" + endless.getAddress().getPort()),
                     null, Duration.ofMillis(100), null)) {
            Fleet.await(() -> logged.any("cannot send reports"), Duration.ofSeconds(30));
            assertThat(logged.lines()).as("the gateway's log").anySatisfy(l -> assertThat(l)
                    .contains("cannot send reports")
                    .contains("at most " + Reporter.MAX_ANSWER_BYTES + " bytes"));
        } finally {
            endless.stop(0);
        }
    }
}
