package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import dev.sextant.config.SnapshotJson;
import dev.sextant.server.internal.Http;
import dev.sextant.server.internal.StartException;
import dev.sextant.snapshot.Snapshot;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code snapshot_cache_file}: a gateway restarted while the control plane is down still routes. */
class SnapshotCacheTest {
    @TempDir
    Path dir;
    private Fleet fleet;
    private Path cache;

    @BeforeEach
    void start() {
        fleet = new Fleet(1);
        cache = dir.resolve("snapshot-cache.json");
    }

    @AfterEach
    void stop() {
        fleet.close();
    }

    private GatewayConfig config() {
        return GatewayConfig.defaults("gw").withAccessLog(false).withSnapshotCache(cache);
    }

    /** A control plane nobody answers at. */
    private static SnapshotSource unreachable() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        return SnapshotSource.longPoll(URI.create("http://127.0.0.1:" + port), "gw", "tok", Duration.ofSeconds(1));
    }

    /**
     * A control plane on loopback that holds what the gateway holds: every snapshot request is shown to {@code asked}
     * (which may hold it, as a long-poll would) and then answered 304. Started; the caller stops it.
     */
    private static HttpServer agreeingControlPlane(java.util.function.Consumer<com.sun.net.httpserver.HttpExchange> asked)
            throws java.io.IOException {
        HttpServer cp = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        cp.setExecutor(java.util.concurrent.Executors.newCachedThreadPool()); // a held request blocks no other
        cp.createContext("/v1/snapshot", ex -> {
            asked.accept(ex);
            String held = ex.getRequestHeaders().getFirst("if-none-match");
            if (held != null) {
                ex.getResponseHeaders().add("etag", held); // a 304 names what it confirms (RFC 9110 §15.4.5)
            }
            ex.sendResponseHeaders(304, -1); // "what you hold is current"
            ex.close();
        });
        cp.start();
        return cp;
    }

    private static SnapshotSource longPoll(HttpServer cp, Duration wait) {
        return SnapshotSource.longPoll(URI.create("http://127.0.0.1:" + cp.getAddress().getPort()), "gw", "tok", wait);
    }

    /** Runs a gateway from a fixed snapshot with the cache configured, so that it writes the cache, and stops it. */
    private Snapshot cacheWritten() {
        Snapshot s = fleet.snapshot();
        Gateway.start(config(), SnapshotSource.fixed(s), 1).close();
        return s;
    }

    @Test
    void everySnapshotTakenIsWritten_andARestartWithoutTheControlPlaneServesFromIt() throws Exception {
        Snapshot s = cacheWritten();
        assertThat(SnapshotJson.read(cache)).isEqualTo(s);

        Gateway gw = Gateway.start(config(), unreachable(), 1, Duration.ofMillis(500));
        try {
            assertThat(gw.plane().snapshot().version()).isEqualTo(s.version());
            assertThat(gw.plane().status().fallback()).isFalse();
            var r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1));
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("x-sextant-snapshot-version")).hasValue(Long.toString(s.version()));
        } finally {
            gw.close();
        }
    }

    @Test
    void aCacheLastConfirmedLongAgo_startsInFallbackMode_andStillServes() throws Exception {
        cacheWritten();
        Files.setLastModifiedTime(cache, FileTime.fromMillis(System.currentTimeMillis() - Duration.ofHours(1).toMillis()));
        try (LogCapture log = new LogCapture()) {
            Gateway gw = Gateway.start(config(), unreachable(), 1, Duration.ofMillis(500));
            try {
                assertThat(gw.plane().status().fallback()).isTrue();
                assertThat(Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1)).statusCode())
                        .isEqualTo(200);
                assertThat(log.any("serving from the cached snapshot", "fallback mode")).isTrue();
            } finally {
                gw.close();
            }
        }
    }

    @Test
    void aCorruptOrForeignCache_isNotUsed_andWithoutASourceTheStartFailsAsBefore() throws Exception {
        Snapshot s = fleet.snapshot();
        for (String text : new String[] {"{\"version\": 3", SnapshotJson.write(s).replace("\"gw\"", "\"other\"")}) {
            Files.writeString(cache, text);
            try (LogCapture log = new LogCapture()) {
                SnapshotSource source = unreachable();
                assertThatThrownBy(() -> Gateway.start(config(), source, 1, Duration.ofMillis(500)))
                        .isInstanceOf(StartException.class);
                assertThat(log.any("SNAPSHOT CACHE", "not used")).as(text).isTrue();
            }
        }
    }

    @Test
    void aCacheThatCannotBeWritten_isLoggedOnce_andTheGatewayServesOn() throws Exception {
        cache = dir.resolve("no-such-dir").resolve("cache.json");
        StaticSource source = SnapshotSource.fixed(fleet.snapshot());
        try (LogCapture log = new LogCapture()) {
            Gateway gw = Gateway.start(config(), source, 1);
            try {
                source.publish(fleet.snapshot().sealed(fleet.snapshot().version() + 1)); // a second write that fails
                assertThat(Fleet.await(() -> gw.plane().snapshot().version() == fleet.snapshot().version() + 1,
                        Duration.ofSeconds(5))).isTrue();
                assertThat(Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1)).statusCode())
                        .isEqualTo(200);
                assertThat(log.lines().stream().filter(l -> l.contains("SNAPSHOT CACHE") && l.contains("not written")))
                        .hasSize(1);
            } finally {
                gw.close();
            }
        }
    }

    @Test
    void theControlPlaneIsAskedForAVersionAfterTheCachedOne() throws Exception {
        Snapshot s = cacheWritten();
        List<String> asked = new CopyOnWriteArrayList<>();
        HttpServer cp = agreeingControlPlane(ex -> asked.add(String.valueOf(ex.getRequestHeaders()
                .getFirst("if-none-match"))));
        try {
            SnapshotSource source = longPoll(cp, Duration.ofSeconds(1));
            Gateway gw = Gateway.start(config(), source, 1, Duration.ofSeconds(30));
            try {
                assertThat(asked.get(0)).isEqualTo(Http.etag(s));
                assertThat(gw.plane().snapshot()).isEqualTo(s);
                assertThat(gw.plane().status().ageNanos()).isLessThan(Duration.ofSeconds(5).toNanos()); // confirmed
            } finally {
                gw.close();
            }
        } finally {
            cp.stop(0);
        }
    }

    @Test
    void aCacheConfirmedLongAgo_isConfirmedAtOnce_notAfterALongPoll() throws Exception {
        Snapshot s = cacheWritten();
        Files.setLastModifiedTime(cache, FileTime.fromMillis(System.currentTimeMillis() - Duration.ofHours(1).toMillis()));
        List<String> asked = new CopyOnWriteArrayList<>();
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        HttpServer cp = agreeingControlPlane(ex -> {
            String query = ex.getRequestURI().getQuery();
            asked.add(query);
            if (query.contains("wait=")) { // a long-poll: nothing new to say before the test ends
                try {
                    release.await(20, java.util.concurrent.TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        try {
            SnapshotSource source = longPoll(cp, Duration.ofSeconds(30));
            Gateway gw = Gateway.start(config(), source, 1, Duration.ofSeconds(30));
            try {
                assertThat(asked.get(0)).isEqualTo("gateway=gw"); // no wait: an answer at once
                assertThat(gw.plane().snapshot()).isEqualTo(s);
                assertThat(gw.plane().status().fallback()).as("confirmed, so not too old").isFalse();
                assertThat(Fleet.await(() -> asked.size() >= 2, Duration.ofSeconds(5))).isTrue();
                assertThat(asked.get(1)).as("then long-polls as usual").isEqualTo("gateway=gw&wait=30000ms");
            } finally {
                gw.close();
            }
        } finally {
            release.countDown();
            cp.stop(0);
        }
    }

    @Test
    void a304ForAnotherEtag_confirmsNothing_andTheOldCacheStaysInFallback() throws Exception {
        cacheWritten();
        Files.setLastModifiedTime(cache, FileTime.fromMillis(System.currentTimeMillis() - Duration.ofHours(1).toMillis()));
        List<String> asked = new CopyOnWriteArrayList<>();
        HttpServer cp = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        cp.createContext("/v1/snapshot", ex -> { // a control plane gone astray: "not modified", about something else
            asked.add(ex.getRequestURI().getQuery());
            ex.getResponseHeaders().add("etag", "\"1-0000000000000000\"");
            ex.sendResponseHeaders(304, -1);
            ex.close();
        });
        cp.start();
        try (LogCapture log = new LogCapture()) {
            Gateway gw = Gateway.start(config(), longPoll(cp, Duration.ofSeconds(30)), 1, Duration.ofSeconds(30));
            try {
                assertThat(Fleet.await(() -> asked.size() >= 3, Duration.ofSeconds(10))).isTrue();
                assertThat(gw.plane().status().fallback()).as("still as old as the cache").isTrue();
                assertThat(log.any("WARNING", "HTTP 304 for ETag \"1-0000000000000000\", not the held")).isTrue();
            } finally {
                gw.close();
            }
        } finally {
            cp.stop(0);
        }
    }
}
