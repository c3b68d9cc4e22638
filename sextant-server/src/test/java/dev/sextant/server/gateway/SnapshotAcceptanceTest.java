package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.sextant.config.SnapshotJson;
import dev.sextant.snapshot.Snapshot;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A gateway takes a snapshot only when it succeeds the held one: a newer version whose hash matches its content.
 * An older version, the held version with other content, or a hash that does not match are refused, logged
 * {@code SEVERE} and counted in {@code sextant_gateway_snapshot_refusals_total}; the held snapshot stays in force.
 */
class SnapshotAcceptanceTest {
    static Fleet fleet;
    static Snapshot a;
    static Snapshot b;

    @BeforeAll
    static void fleet() {
        fleet = new Fleet(1);
        a = fleet.snapshot(150);
        b = fleet.snapshot(10);
        assertThat(a.contentHash()).isNotEqualTo(b.contentHash());
    }

    @AfterAll
    static void stop() {
        fleet.close();
    }

    /**
     * A stand-in control plane answering each poll with the next scripted snapshot, then "not modified". It is the
     * configured URL, so what it sends is what a misbehaving or compromised control plane could send.
     */
    static final class ScriptedControlPlane implements AutoCloseable {
        final BlockingQueue<String> script = new LinkedBlockingQueue<>();
        final AtomicInteger polls = new AtomicInteger();
        final HttpServer server;

        ScriptedControlPlane() throws Exception {
            server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
            server.createContext("/v1/snapshot", ex -> {
                polls.incrementAndGet();
                String next;
                try {
                    next = script.poll(200, TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    next = null;
                }
                if (next == null) {
                    ex.getResponseHeaders().set("etag", ex.getRequestHeaders().getFirst("if-none-match") == null
                            ? "\"none\"" : ex.getRequestHeaders().getFirst("if-none-match"));
                    ex.sendResponseHeaders(304, -1);
                } else {
                    byte[] body = next.getBytes(StandardCharsets.UTF_8);
                    ex.getResponseHeaders().set("etag", "\"" + polls.get() + "\"");
                    ex.getResponseHeaders().set("content-type", "application/json");
                    ex.sendResponseHeaders(200, body.length);
                    ex.getResponseBody().write(body);
                }
                ex.close();
            });
            server.start();
        }

        URI uri() {
            return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
        }

        @Override
        public void close() {
            server.stop(0);
        }
    }

    private static Snapshot version(Snapshot s, long v) {
        return s.sealed(v);
    }

    @Test
    void longPoll_refusesOlderSameVersionOtherContentAndAlteredSnapshots_andCountsThem() throws Exception {
        Snapshot a2 = version(a, 2);
        Snapshot older = version(b, 1);
        Snapshot sameVersionOtherContent = version(b, 2);
        Snapshot b3 = version(b, 3);
        Snapshot altered = new Snapshot(3, b3.hash(), a2.policy(), a2.fleetUtilization(), a2.retryBudget(),
                a2.routes(), a2.engines(), a2.networkRttMs(), a2.objective(), a2.groups()); // b's hash on a's content
        try (ScriptedControlPlane cp = new ScriptedControlPlane(); LogCapture logs = new LogCapture()) {
            cp.script.add(SnapshotJson.write(a2));
            GatewayConfig config = GatewayConfig.defaults("gw").withAccessLog(false);
            try (Gateway gw = Gateway.start(config, SnapshotSource.longPoll(cp.uri(), "gw", "t", Duration.ofSeconds(1)), 2)) {
                assertThat(gw.plane().snapshot()).isEqualTo(a2);
                for (Snapshot bad : List.of(older, sameVersionOtherContent, altered)) {
                    cp.script.add(SnapshotJson.write(bad));
                }
                cp.script.add(SnapshotJson.write(b3));
                assertThat(Fleet.await(() -> gw.plane().snapshot().version() == 3, Duration.ofSeconds(20))).isTrue();
                assertThat(gw.plane().snapshot()).isEqualTo(b3);
                assertThat(refusals(gw)).isEqualTo(3);
                assertThat(logs.lines().stream().filter(l -> l.startsWith("SEVERE") && l.contains("SNAPSHOT REFUSED")))
                        .hasSize(3)
                        .anySatisfy(l -> assertThat(l).contains("version 1 is older than the held 2"))
                        .anySatisfy(l -> assertThat(l).contains("version 2 (hash " + b.contentHash().substring(0, 16)))
                        .anySatisfy(l -> assertThat(l).contains("altered or corrupted"));
                // requests are answered under the accepted snapshot, never a refused one
                var r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1));
                assertThat(r.statusCode()).isEqualTo(200);
                assertThat(r.headers().firstValue("x-sextant-snapshot-version")).hasValue("3");
            }
        }
    }

    @Test
    void dataPlane_refusesTheHeldVersionWithOtherContent_evenFromAFixedSource() throws Exception {
        StaticSource source = SnapshotSource.fixed(version(a, 5));
        try (LogCapture logs = new LogCapture();
             Gateway gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false), source, 2)) {
            source.publish(version(b, 5));
            assertThat(gw.plane().snapshot()).isEqualTo(version(a, 5));
            assertThat(refusals(gw)).isEqualTo(1);
            assertThat(logs.any("SNAPSHOT REFUSED", "version 5")).isTrue();
            source.publish(version(a, 5)); // the same again: a confirmation, not a refusal
            assertThat(refusals(gw)).isEqualTo(1);
            source.publish(version(b, 6));
            assertThat(gw.plane().snapshot().version()).isEqualTo(6);
        }
    }

    private static double refusals(Gateway gw) throws Exception {
        return AuthTest.counter(Fleet.get(gw.port(), "/metrics").body(), "sextant_gateway_snapshot_refusals_total");
    }
}
