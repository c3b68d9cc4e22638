package dev.sextant.server.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import dev.sextant.config.SnapshotJson;
import dev.sextant.server.control.ControlPlane;
import dev.sextant.server.control.ControlPlaneConfig;
import dev.sextant.server.gateway.Fleet;
import dev.sextant.server.gateway.SnapshotSource;
import dev.sextant.server.internal.Http;
import dev.sextant.snapshot.Snapshot;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The control plane killed and restarted, a control plane answering garbage or older versions, and a topology file
 * replaced with an invalid one: gateways keep serving from the snapshot they hold and take new ones when there are.
 * And the control plane at work on a fault: an engine that answers errors is taken out of service on its gateway's
 * reports, and brought back by its canaries once it is mended.
 */
class ControlPlaneFaultsTest extends FaultCase {
    private static final int N = 80;
    private static final int CONCURRENCY = 8;
    private static final String TOKEN = "tok";

    @TempDir
    Path dir;

    /** Planning for the topology's demand: each case changes it in the file, while the gateway reports its own. */
    private static ControlPlane startControlPlane(Path topology, int port) throws Exception {
        return ControlPlane.start(ControlPlaneConfig.defaults(topology, TOKEN).withAddress("127.0.0.1", port)
                .withIntervals(Duration.ofHours(1), Duration.ofHours(1), Duration.ofHours(1), Duration.ofSeconds(1), 3)
                .withDemand("configured"));
    }

    private static void startGateway(Rig rig, URI controlPlane) {
        rig.startGateway(Rig.gatewayConfig(Rig.options()).withControlPlane(controlPlane, TOKEN, Duration.ofMillis(500)),
                SnapshotSource.longPoll(controlPlane, "gw", TOKEN, Duration.ofSeconds(2)));
    }

    private static boolean holds(Rig rig, Snapshot s) throws InterruptedException {
        return Fleet.await(() -> rig.gateway.plane().snapshot().hash().equals(s.hash())
                && rig.gateway.plane().snapshot().version() == s.version(), Duration.ofSeconds(20));
    }

    @Test
    void controlPlaneKilledAndRestarted_gatewayServesFromItsSnapshot_thenTakesTheNewControlPlanesSnapshots()
            throws Exception {
        Path file = dir.resolve("topology.yaml");
        try (Rig rig = new Rig(2)) {
            Files.writeString(file, rig.yaml(150));
            ControlPlane cp = startControlPlane(file, 0);
            int port = cp.port();
            try {
                startGateway(rig, cp.uri());
                Files.writeString(file, rig.yaml(10));
                cp.tickNow();
                Files.writeString(file, rig.yaml(150));
                cp.tickNow();
                assertThat(cp.current().version()).as("two publications after the first").isEqualTo(3);
                assertThat(holds(rig, cp.current())).isTrue();
            } finally {
                cp.close();
            }
            try (Traffic traffic = new Traffic(rig.gateway.port(), Rig.CLIENT_DEADLINE)) {
                Tally down = new Tally("control plane down (gateway on its last snapshot)");
                traffic.run(down, N, CONCURRENCY, i -> { });
                assertSound(rig, down, 0, N);
                assertThat(down.completedCount()).as("engines are healthy").isGreaterThanOrEqualTo(N * 9 / 10);
                assertThat(rig.gateway.plane().snapshot().version()).isEqualTo(3);
                assertThat(rig.gateway.plane().status().fallback()).isFalse();

                ControlPlane again = startControlPlane(file, port); // versions start again from 1
                try {
                    assertThat(again.current().version()).isEqualTo(1);
                    assertThat(Fleet.await(() -> rig.gateway.plane().snapshot().version() > 3
                            && again.current().version() > 3, Duration.ofSeconds(20)))
                            .as("the restarted control plane caught up with the version the gateway holds").isTrue();
                    assertThat(holds(rig, again.current())).isTrue();
                    long before = rig.resentTotal();
                    Tally back = new Tally("control plane restarted (new snapshots taken)");
                    traffic.run(back, N, CONCURRENCY, i -> {
                        if (i == N / 2) {
                            try {
                                Files.writeString(file, rig.yaml(10));
                                again.tickNow();
                            } catch (Exception e) {
                                throw new IllegalStateException(e);
                            }
                        }
                    });
                    assertThat(holds(rig, again.current())).as("a change published after the restart reaches the gateway")
                            .isTrue();
                    assertSound(rig, back, before, 2L * N);
                    assertThat(back.completedCount()).as("engines are healthy").isGreaterThanOrEqualTo(N * 9 / 10);
                } finally {
                    again.close();
                }
            }
        }
    }

    @Test
    void controlPlaneAnsweringGarbageOrOlderVersions_gatewayKeepsItsSnapshotLogsAndDoesNotHammerIt() throws Exception {
        List<String> warnings = new CopyOnWriteArrayList<>();
        Logger log = Logger.getLogger("dev.sextant.server.gateway.LongPollSource");
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord r) {
                if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
                    warnings.add(r.getMessage());
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        log.addHandler(handler);
        HttpServer fake = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
        AtomicReference<String> answer = new AtomicReference<>();
        AtomicInteger polls = new AtomicInteger();
        try (Rig rig = new Rig(2)) {
            Snapshot held = rig.snapshot().sealed(5);
            answer.set(SnapshotJson.write(held));
            fake.createContext("/v1/snapshot", ex -> {
                polls.incrementAndGet();
                byte[] body = answer.get().getBytes(StandardCharsets.UTF_8);
                ex.getResponseHeaders().set("content-type", "application/json");
                ex.getResponseHeaders().set("etag", "\"" + polls.get() + "-x\""); // never the same: never a 304
                ex.sendResponseHeaders(200, body.length);
                ex.getResponseBody().write(body);
                ex.close();
            });
            fake.start();
            startGateway(rig, URI.create("http://127.0.0.1:" + fake.getAddress().getPort()));
            assertThat(rig.gateway.plane().snapshot().version()).isEqualTo(5);
            try (Traffic traffic = new Traffic(rig.gateway.port(), Rig.CLIENT_DEADLINE)) {
                rig.warmUp(traffic);
                for (String[] c : new String[][] {
                        {"control plane answers an older version", SnapshotJson.write(rig.snapshot().sealed(2))},
                        {"control plane answers invalid JSON", "{\"version\": 6, \"routes\": "},
                        {"control plane answers JSON that is not a snapshot", "{\"hello\": \"world\"}"}}) {
                    answer.set(SnapshotJson.write(held)); // a good answer first, which ends any back-off
                    int good = polls.get();
                    assertThat(Fleet.await(() -> polls.get() > good, Duration.ofSeconds(15))).isTrue();
                    answer.set(c[1]);
                    int pollsBefore = polls.get();
                    long before = rig.resentTotal();
                    Tally tally = new Tally(c[0]);
                    long start = System.nanoTime();
                    traffic.run(tally, N, CONCURRENCY, i -> { });
                    assertThat(Fleet.await(() -> polls.get() >= pollsBefore + 3, Duration.ofSeconds(15)))
                            .as(c[0] + ": the gateway keeps polling").isTrue();
                    double seconds = (System.nanoTime() - start) / 1e9;
                    assertSound(rig, tally, before, Rig.WARM_UP + (long) N * 3);
                    assertThat(tally.completedCount()).as("engines are healthy").isGreaterThanOrEqualTo(N * 9 / 10);
                    assertThat(rig.gateway.plane().snapshot().version()).as(c[0] + ": the held snapshot stays").isEqualTo(5);
                    assertThat(polls.get() - pollsBefore).as(c[0] + ": polls in %.1f s (backing off, not a busy loop)",
                            seconds).isLessThanOrEqualTo(10 + (int) (2 * seconds));
                }
            }
            assertThat(warnings).anyMatch(w -> w.contains("sent an invalid snapshot"))
                    .anyMatch(w -> w.contains("SNAPSHOT REFUSED") && w.contains("older than the held 5"));
        } finally {
            fake.stop(0);
            log.removeHandler(handler);
        }
    }

    @Test
    void topologyReplacedWithAnInvalidOne_controlPlaneKeepsTheOldOneAndServes_gatewayKeepsServing() throws Exception {
        Path file = dir.resolve("topology.yaml");
        try (Rig rig = new Rig(2)) {
            Files.writeString(file, rig.yaml(150));
            try (ControlPlane cp = startControlPlane(file, 0);
                 Traffic traffic = new Traffic(startGatewayAndPort(rig, cp.uri()), Rig.CLIENT_DEADLINE)) {
                Snapshot before = cp.current();
                Files.writeString(file, rig.yaml(150).replace("capacity_rps: 100", "capacity_rps: -3")
                        + "engines: [unclosed\n");
                cp.tickNow();
                JsonNode health = Http.JSON.readTree(Fleet.get(cp.port(), "/healthz").body());
                assertThat(health.path("status").asText()).isEqualTo("topology_invalid");
                assertThat(health.path("topology_error").asText()).as("a loud error naming the problem").isNotEmpty();
                assertThat(cp.current()).as("the old topology's snapshot stays in force").isEqualTo(before);
                HttpResponse<String> served = Fleet.HTTP.send(java.net.http.HttpRequest.newBuilder(
                                URI.create(cp.uri() + "/v1/snapshot?gateway=gw")).header("authorization", "Bearer " + TOKEN)
                        .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
                assertThat(served.statusCode()).as("snapshots are still served").isEqualTo(200);
                assertThat(SnapshotJson.read(served.body()).version()).isEqualTo(before.version());

                Tally tally = new Tally("topology file replaced with an invalid one");
                traffic.run(tally, N, CONCURRENCY, i -> { });
                assertSound(rig, tally, 0, N);
                assertThat(tally.completedCount()).as("engines are healthy").isGreaterThanOrEqualTo(N * 9 / 10);
                assertThat(rig.gateway.plane().snapshot().version()).isEqualTo(before.version());

                Files.writeString(file, rig.yaml(10)); // fixed, and changed
                cp.tickNow();
                assertThat(cp.current().version()).isEqualTo(before.version() + 1);
                assertThat(holds(rig, cp.current())).as("the fixed topology's snapshot reaches the gateway").isTrue();
            }
        }
    }

    @Test
    void engineAnsweringErrors_isTakenOutOnTheGatewaysReports_andBroughtBackByItsCanariesOnceMended() throws Exception {
        Path file = dir.resolve("topology.yaml");
        try (Rig rig = new Rig(2)) {
            Files.writeString(file, rig.yaml(150));
            try (ControlPlane cp = ControlPlane.start(ControlPlaneConfig.defaults(file, TOKEN)
                    .withIntervals(Duration.ofHours(1), Duration.ofHours(1), Duration.ofMillis(1), Duration.ofSeconds(1), 3)
                    .withDemand("configured").withCanaryInterval(Duration.ofMillis(100)))) {
                // no local ejection: every attempt the data plane makes on the failing engine is in its reports
                rig.startGateway(Rig.gatewayConfig(Rig.options().toBuilder().consecutiveFailures(1_000_000).build())
                                .withControlPlane(cp.uri(), TOKEN, Duration.ofMillis(200)),
                        SnapshotSource.longPoll(cp.uri(), "gw", TOKEN, Duration.ofSeconds(2)));
                try (Traffic traffic = new Traffic(rig.gateway.port(), Rig.CLIENT_DEADLINE)) {
                    rig.warmUp(traffic);
                    cp.tickNow(); // every engine scraped
                    assertThat(weightAtGateway(rig, "chat-eu", "eu-1")).isPositive();

                    rig.engines.get("eu-1").setFaults(new dev.sextant.server.engine.Faults(1.0, 1, false, -1));
                    Tally failing = new Tally("eu-1 answers 500 until the control plane takes it out");
                    assertThat(Fleet.await(() -> {
                        run(traffic, failing, 40);
                        cp.tickNow();
                        return weightAtGateway(rig, "chat", "eu-1") == 0 && weightAtGateway(rig, "chat-eu", "eu-1") == 0;
                    }, Duration.ofSeconds(60))).as("the snapshot without eu-1 reaches the gateway").isTrue();
                    assertSound(rig, failing, 0, Rig.WARM_UP + failing.sentCount());
                    assertThat(failing.retriesReported()).as("requests retried off eu-1 meanwhile").isPositive();
                    JsonNode eu1 = Http.JSON.readTree(Fleet.get(cp.port(), "/healthz").body()).path("engines").path("eu-1");
                    assertThat(eu1.path("condition").asText()).isEqualTo("failing");
                    assertThat(eu1.path("why").asText()).contains("recent attempts failed");

                    long before = rig.resentTotal();
                    Tally out = new Tally("eu-1 out of service (its canaries still fail)");
                    traffic.run(out, N, CONCURRENCY, i -> { });
                    assertSound(rig, out, before, Rig.WARM_UP + failing.sentCount() + N);
                    assertThat(out.completedCount()).as("the other engines serve everything").isEqualTo(N);
                    assertThat(out.retriesReported()).as("no request meets the failing engine").isZero();

                    assertThat(capacityAtGateway(rig, "eu-1")).isZero();
                    rig.engines.get("eu-1").setFaults(dev.sextant.server.engine.Faults.NONE);
                    assertThat(Fleet.await(() -> {
                        cp.tickNow();
                        return capacityAtGateway(rig, "eu-1") > 0;
                    }, Duration.ofSeconds(60))).as("mended, its canaries succeed and it is back in the snapshot").isTrue();
                    assertThat(Http.JSON.readTree(Fleet.get(cp.port(), "/healthz").body()).path("last_step")
                            .path("reason").asText()).isEqualTo("engine eu-1 back in service");
                    Tally back = new Tally("eu-1 mended and back");
                    traffic.run(back, N, CONCURRENCY, i -> { });
                    assertThat(back.completedCount()).isEqualTo(N);
                    assertThat(capacityAtGateway(rig, "eu-1")).as("in service again: how much it gets is the optimizer's")
                            .isPositive();
                }
            }
        }
    }

    /** {@code n} requests of the traffic (for a wait that sends traffic until a condition holds). */
    private static void run(Traffic traffic, Tally tally, int n) {
        try {
            traffic.run(tally, n, CONCURRENCY, i -> { });
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The effective capacity of {@code engine} in the snapshot the gateway holds, req/s (0: out of service). */
    private static double capacityAtGateway(Rig rig, String engine) {
        return rig.gateway.plane().snapshot().engines().get(engine).effectiveCapacityRps();
    }

    /** The weight of {@code engine} in class {@code cls}'s route in the snapshot the gateway holds. */
    private static double weightAtGateway(Rig rig, String cls, String engine) {
        return rig.gateway.plane().snapshot().route("gw", cls).weights().getOrDefault(engine, 0.0);
    }

    private static int startGatewayAndPort(Rig rig, URI controlPlane) {
        startGateway(rig, controlPlane);
        return rig.gateway.port();
    }
}
