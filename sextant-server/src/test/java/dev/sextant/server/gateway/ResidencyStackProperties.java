package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.request.DataPlaneOptions;
import dev.sextant.server.control.ControlPlane;
import dev.sextant.server.control.ControlPlaneConfig;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.server.engine.Faults;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * The residency invariant (docs/design.md §6.1) across the whole stack under random faults: engine emulators, a
 * control plane that scrapes them and publishes snapshots, and a gateway that long-polls it, on loopback. In every
 * round the engines get random faults (500s, hanging, crashing before or during the stream, slow), one EU engine is
 * stopped for good half-way, and the control plane is stopped so that the gateway ends in fallback mode. Every
 * request is of the EU-only class; every answer that names an engine names an EU one, and the US engines never
 * receive a single request, counted on the engines themselves (failed and hung requests included).
 *
 * <p>A seeded loop rather than a jqwik property: each try costs seconds of real servers. Seed and size from
 * {@code -Dsextant.residency.seed=N} (default 6) and {@code -Dsextant.residency.rounds=N} (default 6: a
 * failover in the first round, the control plane gone from the fourth, an EU engine gone for good from the fifth; 15-25 s
 * a case on an idle 2-core machine, three cases).
 */
class ResidencyStackProperties {
    private static final String[] EU = {"x-sextant-residency", "eu-west"};
    private static final int REQUESTS_PER_ROUND = 24;
    private static final String KEY = "sk-test-residency";

    @TempDir
    Path dir;

    /**
     * Where the EU-only restriction comes from: the request's header ({@code header}); its tenant's residency, the
     * request's headers naming nothing or more ({@code tenant}); the gateway cluster's residency, on an open gateway,
     * likewise ({@code gateway}). Headers may only narrow, so in every case nothing may leave the EU.
     */
    @ParameterizedTest
    @ValueSource(strings = {"header", "tenant", "gateway"})
    void euOnlyRequests_areNeverAnsweredOrSeenOutsideEu_underRandomFaultsFailoverAndFallback(String from)
            throws Exception {
        long seed = Long.getLong("sextant.residency.seed", 6);
        int rounds = Integer.getInteger("sextant.residency.rounds", 6);
        SplittableRandom rnd = new SplittableRandom(seed);
        LeakWatch leaks = LeakWatch.paranoid();
        Map<String, Integer> statuses = new TreeMap<>();
        Map<String, Integer> engines = new TreeMap<>();
        int retried = 0;
        int sent = 0;
        try (Fleet fleet = new Fleet(1)) {
            Path file = Files.writeString(dir.resolve("topology.yaml"), fleet.yaml(150));
            ControlPlane cp = ControlPlane.start(ControlPlaneConfig.defaults(file, "tok").withIntervals(
                    Duration.ofSeconds(1), Duration.ofMillis(100), Duration.ofMillis(200), Duration.ofSeconds(1), 2));
            GatewayConfig.Builder restricted = GatewayConfig.defaults("gw").toBuilder();
            if (from.equals("tenant")) {
                restricted.tenantsFile(Files.writeString(dir.resolve("tenants.yaml"), "tenants:\n  eu: {keys: ["
                        + dev.sextant.server.tenants.ApiKeys.hash(KEY) + "], residency: [eu-west]}\n"));
            } else if (from.equals("gateway")) {
                restricted.residency(List.of("eu-west"));
            }
            GatewayConfig config = restricted.build().withAccessLog(false)
                    .withTimeouts(Duration.ofMillis(500), Duration.ofMillis(600), Duration.ofSeconds(1), Duration.ofSeconds(4))
                    .withControlPlane(cp.uri(), "tok", Duration.ofMillis(200))
                    .withOptions(DataPlaneOptions.builder().maxSnapshotAge(Duration.ofSeconds(2)).seed(seed).build());
            ExecutorService clients = Executors.newFixedThreadPool(8);
            boolean cpUp = true;
            try (Gateway gw = Gateway.start(config, SnapshotSource.longPoll(cp.uri(), "gw", "tok", Duration.ofMillis(500)), 2)) {
                for (int round = 0; round < rounds; round++) {
                    if (cpUp && round == rounds / 2) {
                        cp.close(); // from now on static stability, then the fallback policy
                        cpUp = false;
                        assertThat(Fleet.await(() -> gw.plane().status().fallback(), Duration.ofSeconds(20)))
                                .as("fallback mode once the snapshot is older than 2 s").isTrue();
                    }
                    if (round == (3 * rounds) / 4 && fleet.engines.get("eu-2") != null) {
                        fleet.engines.get("eu-2").close(); // crashed for good: connection refused
                    }
                    boolean euDown = rnd.nextInt(5) == 0; // now and then no EU engine can answer at all
                    for (Map.Entry<String, EngineEmulator> e : fleet.engines.entrySet()) {
                        boolean eu = e.getKey().startsWith("eu-");
                        e.getValue().setFaults(eu && euDown ? fatal(rnd) : randomFaults(rnd));
                    }
                    if (round == 0) { // one failover for certain, whatever the random faults: eu-1 answers 500s
                        fleet.engines.get("eu-1").setFaults(new Faults(1, 1, false, -1));
                        fleet.engines.get("eu-2").setFaults(Faults.NONE);
                    }
                    List<Future<HttpResponse<String>>> answers = new ArrayList<>();
                    for (int i = 0; i < REQUESTS_PER_ROUND; i++) {
                        String body = Fleet.chat(rnd.nextInt(4) == 0 ? null : "conv-" + rnd.nextInt(40), rnd.nextBoolean(),
                                1 + rnd.nextInt(6));
                        answers.add(clients.submit(() -> Fleet.send(HttpRequest.newBuilder(
                                        URI.create("http://127.0.0.1:" + gw.port() + "/v1/chat/completions"))
                                        .timeout(Duration.ofSeconds(20)).header("content-type", "application/json")
                                        .headers(headers(from, rnd)).POST(HttpRequest.BodyPublishers.ofString(body))
                                        .build(),
                                HttpResponse.BodyHandlers.ofString())));
                        sent++;
                    }
                    for (Future<HttpResponse<String>> f : answers) {
                        HttpResponse<String> r = f.get(30, TimeUnit.SECONDS); // every request ends, none hangs
                        String engine = r.headers().firstValue("x-sextant-engine").orElse(null);
                        statuses.merge(Integer.toString(r.statusCode()), 1, Integer::sum);
                        if (engine != null) {
                            engines.merge(engine, 1, Integer::sum);
                            assertThat(engine).as("round %d, status %d", round, r.statusCode()).isIn("eu-1", "eu-2");
                        }
                        if (r.statusCode() == 200) {
                            assertThat(engine).isNotNull();
                        } else {
                            assertThat(r.statusCode()).isIn(429, 502, 503, 504);
                            assertThat(r.body()).contains("\"error\"");
                        }
                        if (Integer.parseInt(r.headers().firstValue("x-sextant-attempts").orElse("1")) > 1) {
                            retried++;
                        }
                    }
                }
                assertThat(gw.plane().status().fallback()).as("ended in fallback mode").isTrue();
            } finally {
                clients.shutdownNow();
                if (cpUp) {
                    cp.close();
                }
            }
            for (String us : List.of("us-1", "us-2")) {
                assertThat(fleet.engines.get(us).requestsReceived()).as("requests that reached %s", us).isZero();
            }
            long euReceived = fleet.engines.get("eu-1").requestsReceived() + fleet.engines.get("eu-2").requestsReceived();
            assertThat(euReceived).as("the EU engines did receive the requests").isGreaterThanOrEqualTo(statuses.getOrDefault("200", 0));
        } finally {
            leaks.close();
        }
        System.out.printf("residency under faults (restricted by the " + from + "): seed %d, %d rounds, %d requests, statuses %s, engines %s, retried %d%n",
                seed, rounds, sent, statuses, engines, retried);
        assertThat(statuses.getOrDefault("200", 0)).as("some requests were served").isPositive();
        assertThat(retried).as("failover happened (answers after more than one attempt)").isPositive();
        leaks.assertNoLeakReported();
    }

    /**
     * The headers of one request: the EU header when the restriction comes from it; otherwise (and the tenant's key for
     * {@code tenant}) none, a wider set, a blank one or the EU itself, at random: none of them may widen anything.
     */
    private static String[] headers(String from, SplittableRandom rnd) {
        if (from.equals("header")) {
            return EU;
        }
        String[] residency = {"x-sextant-residency", List.of("us-east, eu-west", " ", "eu-west").get(rnd.nextInt(3))};
        boolean none = rnd.nextInt(3) == 0;
        String[] auth = {"authorization", "Bearer " + KEY};
        if (from.equals("tenant")) {
            return none ? auth : concat(auth, residency);
        }
        return none ? new String[] {"accept", "application/json"} : residency; // no residency header at all
    }

    private static String[] concat(String[] a, String[] b) {
        String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    /** A random fault or none: 500s, hanging, crashing before the first token or mid-stream, slow. */
    private static Faults randomFaults(SplittableRandom rnd) {
        return switch (rnd.nextInt(6)) {
            case 0 -> Faults.NONE;
            case 1 -> new Faults(0.3 + 0.7 * rnd.nextDouble(), 1, false, -1);
            case 2 -> new Faults(0, 1, true, -1);
            case 3 -> new Faults(0, 1, false, rnd.nextInt(3));
            case 4 -> new Faults(0, 10, false, -1);
            default -> new Faults(0.3, 1, false, 1);
        };
    }

    /** A fault that answers no request properly. */
    private static Faults fatal(SplittableRandom rnd) {
        return switch (rnd.nextInt(3)) {
            case 0 -> new Faults(1, 1, false, -1);
            case 1 -> new Faults(0, 1, true, -1);
            default -> new Faults(0, 1, false, 0);
        };
    }
}
