package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.request.DataPlaneOptions;
import dev.sextant.server.internal.Http;
import dev.sextant.server.internal.Transport;
import dev.sextant.snapshot.Snapshot;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.util.concurrent.EventExecutor;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The probes in Kubernetes' convention on real sockets: {@code /livez} while the event loops run, {@code /readyz} only
 * when the gateway can route and is not draining, the mode in both {@code /readyz} and {@code /healthz}; and the drain
 * window of a stop (docs/servers.md, "Probes" and "Stopping").
 */
class GatewayProbesTest {
    private static final Duration DEADLINE = Duration.ofSeconds(20);

    @Test
    void beforeItsFirstSnapshot_theGatewayListens_liveButNotReady_thenReadyInPolicyModeOnceOneArrives() throws Exception {
        try (Fleet fleet = new Fleet(1)) {
            HandFedSource source = new HandFedSource();
            try (Gateway gw = Gateway.open(GatewayConfig.defaults("gw").withAccessLog(false), source, 1)) {
                assertThat(source.started()).as("bound first, then the source asked").isTrue();
                HttpResponse<String> ready = Fleet.get(gw.port(), "/readyz");
                assertThat(ready.statusCode()).isEqualTo(503);
                assertThat(ready.body()).isEqualTo("no snapshot\n");
                assertThat(ready.headers().firstValue(Probes.MODE_HEADER)).as("no mode without a snapshot").isEmpty();
                assertThat(Fleet.get(gw.port(), "/livez").statusCode()).isEqualTo(200);

                HttpResponse<String> chat = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1));
                assertThat(chat.statusCode()).isEqualTo(503);
                assertThat(Http.JSON.readTree(chat.body()).path("error").path("code").asText()).isEqualTo("no_snapshot");
                assertThat(chat.headers().firstValue("retry-after")).hasValue("1");
                assertThat(Fleet.get(gw.port(), "/v1/models").statusCode()).isEqualTo(503);
                assertThat(Http.JSON.readTree(Fleet.get(gw.port(), "/healthz").body()).path("status").asText())
                        .isEqualTo("no_snapshot");
                assertThat(Fleet.get(gw.port(), "/metrics").body()).contains("sextant_gateway_snapshot_version NaN")
                        .contains("sextant_gateway_classes 0.0");

                source.deliver(fleet.snapshot());
                ready = Fleet.get(gw.port(), "/readyz");
                assertThat(ready.statusCode()).isEqualTo(200);
                assertThat(ready.body()).isEqualTo("ready\nmode: policy\n");
                assertThat(ready.headers().firstValue(Probes.MODE_HEADER)).hasValue("policy");
                assertThat(Http.JSON.readTree(Fleet.get(gw.port(), "/healthz").body()).path("mode").asText())
                        .isEqualTo("policy");
                assertThat(Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1)).statusCode())
                        .isEqualTo(200);
            }
        }
    }

    @Test
    void readyz_withoutRoutesForItsCluster_isNotReady_whileHealthzStillAnswers200() throws Exception {
        try (Fleet fleet = new Fleet(1);
             Gateway gw = Gateway.start(GatewayConfig.defaults("elsewhere").withAccessLog(false),
                     SnapshotSource.fixed(fleet.snapshot()), 1)) {
            HttpResponse<String> ready = Fleet.get(gw.port(), "/readyz");
            assertThat(ready.statusCode()).isEqualTo(503);
            assertThat(ready.body()).isEqualTo("no routes\nmode: policy\n");
            HttpResponse<String> health = Fleet.get(gw.port(), "/healthz");
            assertThat(health.statusCode()).isEqualTo(200);
            assertThat(Http.JSON.readTree(health.body()).path("status").asText()).isEqualTo("no_routes");
        }
    }

    @Test
    void readyz_inFallbackMode_isReadyAndSaysSo_andEachChangeOfModeIsLoggedOnce() throws Exception {
        Duration maxAge = Duration.ofSeconds(1);
        try (LogCapture log = new LogCapture(); Fleet fleet = new Fleet(1)) {
            Snapshot first = fleet.snapshot();
            StaticSource source = SnapshotSource.fixed(first);
            try (Gateway gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false)
                    .withOptions(DataPlaneOptions.builder().maxSnapshotAge(maxAge).build()), source, 1)) {
                assertThat(Fleet.await(() -> gw.plane().status().fallback(), DEADLINE)).isTrue();
                for (int i = 0; i < 5; i++) {
                    assertThat(Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k" + i, false, 1))
                            .statusCode()).isEqualTo(200);
                    HttpResponse<String> ready = Fleet.get(gw.port(), "/readyz");
                    assertThat(ready.statusCode()).as("a gateway in fallback serves: it is ready").isEqualTo(200);
                    assertThat(ready.body()).isEqualTo("ready\nmode: fallback\n");
                    assertThat(ready.headers().firstValue(Probes.MODE_HEADER)).hasValue("fallback");
                }
                JsonNode health = Http.JSON.readTree(Fleet.get(gw.port(), "/healthz").body());
                assertThat(health.path("status").asText()).isEqualTo("fallback");
                assertThat(health.path("mode").asText()).isEqualTo("fallback");
                assertThat(Fleet.get(gw.port(), "/metrics").body()).contains("sextant_gateway_fallback 1.0");
                assertThat(modeLines(log)).as("five requests and five probes, one line").singleElement().asString()
                        .contains("FALLBACK MODE: snapshot " + first.version() + " is ")
                        .contains("(max_snapshot_age 1 s)").contains("keeping its weights and keys");

                // a fresh snapshot ends it (and, a second later, it begins again: each change once, in turn)
                assertThat(source.publish(first.sealed(first.version() + 1))).isTrue();
                assertThat(Fleet.await(() -> log.any("fallback mode ended: snapshot " + (first.version() + 1)),
                        DEADLINE)).isTrue();
                List<String> changes = modeLines(log);
                for (int i = 0; i < changes.size(); i++) {
                    assertThat(changes.get(i)).as("change %d of %s", i, changes)
                            .contains(i % 2 == 0 ? "FALLBACK MODE" : "fallback mode ended");
                }
            }
        }
    }

    private static List<String> modeLines(LogCapture log) {
        return log.lines().stream().filter(l -> l.contains("FALLBACK MODE") || l.contains("fallback mode ended"))
                .toList();
    }

    @Test
    void close_failsReadinessAtOnce_servesThroughTheDrainWindow_thenStopsAccepting_andEveryStreamFinishes()
            throws Exception {
        int streams = 4;
        int tokens = 50;
        // 80 ms a token: each stream lasts about 4 s, past the 2 s window, so it is in flight when accepting stops
        try (Fleet fleet = new Fleet(80)) {
            Gateway gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false)
                    .withDrain(new Drain(Duration.ofSeconds(2), Duration.ofSeconds(30))),
                    SnapshotSource.fixed(fleet.snapshot()), 1);
            Thread closer = new Thread(gw::close);
            try (H2Client c = new H2Client(gw.port())) {
                List<H2Client.Stream> open = new ArrayList<>();
                for (int i = 0; i < streams; i++) {
                    open.add(c.post("/v1/chat/completions", Fleet.chat("drain-" + i, true, tokens)));
                }
                for (H2Client.Stream s : open) {
                    assertThat(s.firstData.get(DEADLINE.toSeconds(), TimeUnit.SECONDS)).startsWith("data: ");
                }

                closer.start();
                assertThat(Fleet.await(() -> draining(gw.port()), DEADLINE)).as("not ready at once").isTrue();
                assertThat(c.goAway.get(DEADLINE.toSeconds(), TimeUnit.SECONDS)).as("HTTP/2 clients told at once")
                        .isGreaterThanOrEqualTo(1);
                HttpResponse<String> during = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("new", false, 1));
                assertThat(during.statusCode()).as("a new request within the window is served").isEqualTo(200);
                assertThat(Fleet.await(() -> refused(gw.port()), DEADLINE)).as("then no longer accepting").isTrue();

                for (H2Client.Stream s : open) {
                    String body = s.end.get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
                    assertThat(body.strip()).as("a whole stream").endsWith("data: [DONE]").doesNotContain("\"error\"");
                    assertThat(body.split("\n\n")).hasSizeGreaterThan(tokens);
                }
                closer.join(DEADLINE.toMillis());
                assertThat(closer.isAlive()).isFalse();
            } finally {
                gw.close();
            }
        }
    }

    private static boolean draining(int port) {
        try {
            HttpResponse<String> r = Fleet.get(port, "/readyz");
            return r.statusCode() == 503 && r.body().equals("draining\nmode: policy\n");
        } catch (Exception e) {
            return false;
        }
    }

    private static boolean refused(int port) {
        try {
            new java.net.Socket("127.0.0.1", port).close();
            return false;
        } catch (java.io.IOException e) {
            return true;
        }
    }

    @Test
    void livez_withAnEventLoopStuck_fails_namingTheLoop_andRecoversWhenItRunsAgain() throws Exception {
        EventLoopGroup loops = Transport.current().group(2, false);
        CountDownLatch release = new CountDownLatch(1);
        try {
            Probes probes = new Probes();
            probes.watch(loops);
            assertThat(body(probes.liveness(System.nanoTime()))).isEqualTo("200 live\n");
            List<EventExecutor> each = new ArrayList<>();
            loops.forEach(each::add);
            each.get(1).execute(() -> {
                try {
                    release.await(); // a task that never returns: the loop answers nothing
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            assertThat(Fleet.await(() -> body(probes.liveness(System.nanoTime())).startsWith("503 "), DEADLINE))
                    .isTrue();
            assertThat(body(probes.liveness(System.nanoTime()))).startsWith("503 event loop 1 stuck: no beat for ");
            release.countDown();
            assertThat(Fleet.await(() -> body(probes.liveness(System.nanoTime())).startsWith("200 "), DEADLINE))
                    .isTrue();
        } finally {
            release.countDown();
            loops.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
    }

    /** Status and body of an answer, which it releases. */
    private static String body(FullHttpResponse r) {
        try {
            return r.status().code() + " " + r.content().toString(StandardCharsets.UTF_8);
        } finally {
            r.release();
        }
    }
}
