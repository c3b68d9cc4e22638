package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import dev.sextant.config.TopologyLoader;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.server.internal.Http;
import dev.sextant.signal.PrometheusText;
import dev.sextant.signal.Sample;
import dev.sextant.snapshot.Snapshot;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The gateway's round-trip probes ({@code docs/servers.md}, "Round-trip probes") against real engines on loopback:
 * the round trip an emulated network puts between them, failures of each kind, never a request, and the bounds on
 * what is in flight.
 */
class GatewayProbeTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);
    private final List<AutoCloseable> open = new ArrayList<>();
    private Gateway gw;

    @AfterEach
    void stop() throws Exception {
        if (gw != null) {
            gw.close();
        }
        for (AutoCloseable c : open) {
            c.close();
        }
    }

    /**
     * A gateway of cluster {@code gw} probing every 50 ms. It needs a control plane to probe for; this one is never
     * contacted (no snapshot from it, and its first report would be due in an hour).
     */
    private void gateway(Snapshot s) {
        gw = Gateway.start(GatewayConfig.defaults("gw")
                        .withControlPlane(URI.create("http://127.0.0.1:9"), (String) null, Duration.ofHours(1))
                        .withProbeInterval(Duration.ofMillis(50)),
                SnapshotSource.fixed(s), 1);
    }

    /** A snapshot of gateway cluster {@code gw} and engines at these ports, by engine cluster; engine ids e0, e1, … */
    private static Snapshot snapshot(Map<String, List<Integer>> portsByCluster) throws Exception {
        StringBuilder y = new StringBuilder("gateway_clusters: [{id: gw, region: r}]\nengine_clusters:\n");
        portsByCluster.keySet().forEach(c -> y.append("  - {id: ").append(c).append(", region: r}\n"));
        y.append("network_rtt_ms:\n  gw: {");
        y.append(String.join(", ", portsByCluster.keySet().stream().map(c -> c + ": 1").toList())).append("}\n");
        y.append("models: [{id: m, output_tokens: 8}]\nclasses: [{id: chat, model: m}]\n"
                + "demand_rps: {gw: {chat: 10}}\nengines:\n");
        int n = 0;
        for (Map.Entry<String, List<Integer>> e : portsByCluster.entrySet()) {
            for (int port : e.getValue()) {
                y.append("  - {id: e").append(n++).append(", cluster: ").append(e.getKey())
                        .append(", endpoint: 'http://127.0.0.1:").append(port)
                        .append("', models: [m], capacity_rps: 100, profile: {ttft_ms: 20, tbt_ms: 5}}\n");
            }
        }
        return Policies.optimal().solve(TopologyLoader.load(y.toString(), "probes.yaml"), SolveOptions.defaults());
    }

    private int emulator(String id, Map<String, Double> rtts) {
        EngineEmulator e = EngineEmulator.start(EngineConfig.defaults(id, "m").withNetworkRttMs(rtts));
        open.add(e);
        return e.port();
    }

    /** What the reports said, summed over every report drained so far. */
    private final class Totals {
        final Map<String, Long> probes = new HashMap<>();
        final Map<String, Long> failures = new HashMap<>();
        final Map<String, Long> requests = new HashMap<>();
        /** Engine cluster → every round trip's report entry (min, mean, count). */
        final Map<String, List<JsonNode>> rtts = new HashMap<>();

        Totals drain() {
            try {
                JsonNode r = Http.JSON.readTree(gw.reporter.drain());
                for (Iterator<Map.Entry<String, JsonNode>> it = r.path("engines").fields(); it.hasNext(); ) {
                    Map.Entry<String, JsonNode> e = it.next();
                    probes.merge(e.getKey(), e.getValue().path("probes").asLong(), Long::sum);
                    failures.merge(e.getKey(), e.getValue().path("probe_failures").asLong(), Long::sum);
                    requests.merge(e.getKey(), e.getValue().path("requests").asLong(), Long::sum);
                }
                for (Iterator<Map.Entry<String, JsonNode>> it = r.path("rtt_ms").fields(); it.hasNext(); ) {
                    Map.Entry<String, JsonNode> e = it.next();
                    rtts.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).add(e.getValue());
                }
                return this;
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }

        long probes(String engine) {
            return probes.getOrDefault(engine, 0L);
        }

        long failures(String engine) {
            return failures.getOrDefault(engine, 0L);
        }
    }

    /** {@code sextant_gateway_probes_total} by outcome, from the gateway's /metrics. */
    private Map<String, Double> probeMetrics() throws Exception {
        Map<String, Double> out = new LinkedHashMap<>();
        for (Sample s : PrometheusText.parse(Fleet.get(gw.port(), "/metrics").body())
                .samples("sextant_gateway_probes_total")) {
            out.put(s.labels().get("outcome"), s.value());
        }
        return out;
    }

    private long probesEnded() throws Exception {
        return Math.round(probeMetrics().values().stream().mapToDouble(Double::doubleValue).sum());
    }

    @Test
    void probes_measureTheEmulatedRoundTrip_takeTheClustersEnginesInTurn_andAreNoRequests() throws Exception {
        // the engines delay a request naming gateway cluster gw by 100 ms: a probe that names it takes at least that
        Snapshot s = snapshot(Map.of("far", List.of(emulator("far-1", Map.of("gw", 100.0)),
                emulator("far-2", Map.of("gw", 100.0)))));
        Totals t = new Totals();
        try (LogCapture log = new LogCapture()) {
            gateway(s);
            assertThat(Fleet.await(() -> t.drain().probes("e0") >= 1 && t.probes("e1") >= 1, DEADLINE))
                    .as("both engines of the cluster probed").isTrue();
            assertThat(log.any("dev.sextant.gateway.access")).as("no access-log line for a probe").isFalse();
        }
        assertThat(t.failures("e0") + t.failures("e1")).isZero();
        assertThat(t.rtts.get("far")).isNotEmpty().allSatisfy(r -> {
            assertThat(r.path("min").asDouble()).as("min round trip, ms").isGreaterThanOrEqualTo(100);
            assertThat(r.path("mean").asDouble()).isGreaterThanOrEqualTo(r.path("min").asDouble());
            assertThat(r.path("count").asLong()).isPositive();
        });
        assertThat(t.requests.values()).as("a probe is no request").containsOnly(0L);
        String metrics = Fleet.get(gw.port(), "/metrics").body();
        assertThat(PrometheusText.parse(metrics).samples("sextant_gateway_requests_total"))
                .as("nor in the request metrics").isEmpty();
        assertThat(probeMetrics().get("success")).isGreaterThanOrEqualTo(2);

        // a request is counted as one, whatever the probes do meanwhile
        assertThat(Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 1)).statusCode()).isEqualTo(200);
        Totals after = new Totals().drain();
        assertThat(after.requests.values().stream().mapToLong(Long::longValue).sum()).isEqualTo(1);
    }

    @Test
    void aRefusedConnection_aBadStatus_andATimeout_areProbeFailures_withNoRoundTrip() throws Exception {
        int refused;
        try (ServerSocket gone = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            refused = gone.getLocalPort();
        }
        HttpServer down = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        down.createContext("/", ex -> {
            ex.sendResponseHeaders(503, -1);
            ex.close();
        });
        down.start();
        open.add(() -> down.stop(0));
        Silent hung = new Silent();
        open.add(hung);
        Map<String, List<Integer>> clusters = new LinkedHashMap<>();
        clusters.put("refused", List.of(refused));
        clusters.put("down", List.of(down.getAddress().getPort()));
        clusters.put("hung", List.of(hung.port()));
        clusters.put("ok", List.of(emulator("ok-1", Map.of())));
        gateway(snapshot(clusters));

        Totals t = new Totals();
        assertThat(Fleet.await(() -> t.drain().failures("e0") >= 1 && t.failures("e1") >= 1 && t.failures("e2") >= 1
                && t.probes("e3") >= 1, DEADLINE)).as("a failure of each, and a success").isTrue();
        for (String failing : List.of("e0", "e1", "e2")) {
            assertThat(t.failures(failing)).as(failing + ": every probe failed").isEqualTo(t.probes(failing));
        }
        assertThat(t.failures("e3")).isZero();
        assertThat(t.rtts).as("a round trip only from a 2xx").containsOnlyKeys("ok");
        Map<String, Double> byOutcome = probeMetrics();
        assertThat(byOutcome).containsKeys("success", "status", "timeout", "connect_error", "closed");
        assertThat(byOutcome.get("connect_error")).isPositive();
        assertThat(byOutcome.get("status")).isPositive();
        assertThat(byOutcome.get("timeout")).isPositive();
        assertThat(byOutcome.get("success")).isPositive();
        assertThat(t.requests.values()).containsOnly(0L);
    }

    /** An interim answer before the probe's (103 Early Hints) is skipped, as the gateway skips it on a request. */
    @Test
    void anInterimAnswerBeforeTheProbesAnswer_isNoFailure() throws Exception {
        RawEngine hints = new RawEngine("HTTP/1.1 103 Early Hints\r\nlink: </a.css>; rel=preload\r\n\r\n"
                + "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", true);
        open.add(hints);
        gateway(hints.behindEveryEngine(snapshot(Map.of("hints", List.of(1)))));

        Totals t = new Totals();
        assertThat(Fleet.await(() -> t.drain().probes("e0") >= 3, DEADLINE)).as("probed").isTrue();
        assertThat(t.failures("e0")).isZero();
        assertThat(t.rtts).containsOnlyKeys("hints");
    }

    @Test
    void anEngineClusterIsProbedOnceAtATime_andAtMost32AtOnceOverAFleet() throws Exception {
        Silent hung = new Silent(); // every probe of it waits its whole timeout
        open.add(hung);
        Map<String, List<Integer>> clusters = new LinkedHashMap<>();
        for (int i = 0; i < 100; i++) {
            clusters.put("c" + i, List.of(hung.port()));
        }
        gateway(snapshot(clusters));

        assertThat(Fleet.await(() -> gw.prober.rounds() >= 10 && hung.accepted() >= Prober.MAX_IN_FLIGHT, DEADLINE))
                .isTrue();
        // accepted first, ended after: what was accepted and has not ended is in flight, never more than the bound
        long accepted = hung.accepted();
        assertThat(accepted - probesEnded()).as("probes in flight, of 100 clusters").isLessThanOrEqualTo(Prober.MAX_IN_FLIGHT);
        assertThat(gw.prober.maxInFlight()).isEqualTo(Prober.MAX_IN_FLIGHT);

        // the first ones time out, the clusters waiting their turn follow: still never more at once
        assertThat(Fleet.await(() -> hung.accepted() >= 2L * Prober.MAX_IN_FLIGHT, DEADLINE)).isTrue();
        accepted = hung.accepted();
        assertThat(accepted - probesEnded()).isLessThanOrEqualTo(Prober.MAX_IN_FLIGHT);
        assertThat(gw.prober.maxInFlight()).isEqualTo(Prober.MAX_IN_FLIGHT);
    }

    @Test
    void aClusterWhoseProbeHangs_isNotProbedAgainMeanwhile() throws Exception {
        Silent hung = new Silent();
        open.add(hung);
        gateway(snapshot(Map.of("hung", List.of(hung.port()))));

        assertThat(Fleet.await(() -> gw.prober.rounds() >= 10 && hung.accepted() >= 1, DEADLINE)).isTrue();
        long accepted = hung.accepted();
        assertThat(accepted - probesEnded()).as("of one cluster, one probe in flight at most").isLessThanOrEqualTo(1);
    }

    @Test
    void aZeroInterval_orNoControlPlane_probesNothing() throws Exception {
        int port = emulator("e", Map.of());
        gw = Gateway.start(GatewayConfig.defaults("gw")
                        .withControlPlane(URI.create("http://127.0.0.1:9"), (String) null, Duration.ofHours(1))
                        .withProbeInterval(Duration.ZERO),
                SnapshotSource.fixed(Fleet.standIns(port)), 1);
        assertThat(gw.prober).isNull();
        gw.close();
        gw = Gateway.start(GatewayConfig.defaults("gw"), SnapshotSource.fixed(Fleet.standIns(port)), 1);
        assertThat(gw.prober).as("nothing to report them to").isNull();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> GatewayConfig.defaults("gw")
                        .withProbeInterval(Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("probe_interval: -1000ms (expected: >= 0, 0s for no probes)");
    }

    /** An engine that takes connections and never answers; it counts the connections it took. */
    private static final class Silent implements AutoCloseable {
        private final ServerSocket server;
        private final List<Socket> held = new CopyOnWriteArrayList<>();
        private final AtomicInteger accepted = new AtomicInteger();

        Silent() throws IOException {
            server = new ServerSocket(0, 500, InetAddress.getLoopbackAddress());
            Thread t = new Thread(() -> {
                while (!server.isClosed()) {
                    try {
                        held.add(server.accept());
                        accepted.incrementAndGet();
                    } catch (IOException e) {
                        return; // closed
                    }
                }
            }, "silent-engine");
            t.setDaemon(true);
            t.start();
        }

        int port() {
            return server.getLocalPort();
        }

        long accepted() {
            return accepted.get();
        }

        @Override
        public void close() throws IOException {
            server.close();
            for (Socket s : held) {
                s.close();
            }
        }
    }
}
