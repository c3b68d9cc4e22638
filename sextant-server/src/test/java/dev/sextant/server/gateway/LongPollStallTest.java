package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.sextant.config.SnapshotJson;
import dev.sextant.server.auth.BearerToken;
import dev.sextant.server.internal.Http;
import dev.sextant.snapshot.Snapshot;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * A control plane whose answer stops after its head (stopped mid-write, a connection gone half-open): the gateway's
 * long-poll gives it up at its deadline, closes the connection, and takes the snapshot of its next poll.
 */
class LongPollStallTest {
    @Test
    void anAnswerThatStopsAfterItsHead_isGivenUp_andTheNextPollTakesTheSnapshot() throws Exception {
        Snapshot s;
        try (Fleet fleet = new Fleet(1)) {
            s = fleet.snapshot();
        }
        byte[] json = SnapshotJson.write(s).getBytes(StandardCharsets.UTF_8);
        AtomicInteger polls = new AtomicInteger();
        CountDownLatch stalledCut = new CountDownLatch(1);
        HttpServer cp = dev.sextant.server.internal.TestHttpServers.loopback();
        cp.createContext("/v1/snapshot", ex -> {
            if (polls.incrementAndGet() == 1) {
                ex.getResponseHeaders().set("content-type", "application/json");
                ex.sendResponseHeaders(200, json.length);
                try (OutputStream out = ex.getResponseBody()) {
                    out.write(json, 0, 10);
                    for (int i = 0; i < 600; i++) { // a minute more, a byte at a time, never the rest
                        Thread.sleep(100);
                        out.write(json, 10, 1);
                        out.flush();
                    }
                } catch (IOException e) {
                    stalledCut.countDown(); // the gateway closed it
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return;
            }
            ex.getResponseHeaders().set("content-type", "application/json");
            ex.getResponseHeaders().set("etag", Http.etag(s));
            ex.sendResponseHeaders(200, json.length);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(json);
            }
        });
        cp.start();
        AtomicReference<Snapshot> got = new AtomicReference<>();
        LongPollSource source = new LongPollSource(URI.create("http://127.0.0.1:" + cp.getAddress().getPort()), "gw",
                BearerToken.of("tok"), Duration.ofMillis(200), null, Duration.ofSeconds(1), Duration.ofSeconds(1));
        try {
            source.start(got::set);
            assertThat(Fleet.await(() -> got.get() != null, Duration.ofSeconds(30))).as("a snapshot, polls %s", polls)
                    .isTrue();
            assertThat(got.get().version()).isEqualTo(s.version());
            assertThat(polls.get()).isGreaterThanOrEqualTo(2);
            assertThat(stalledCut.await(30, TimeUnit.SECONDS)).as("the stalled answer's connection closed").isTrue();
        } finally {
            source.close();
            cp.stop(0);
        }
    }
}
