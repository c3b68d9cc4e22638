package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.control.ControlPlane;
import dev.sextant.server.control.ControlPlaneConfig;
import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Twice the fleet's capacity with three priorities, with the gateway's and the control plane's shipped settings
 * (docs/request-path.md, "Spill under load" and §3; docs/reliability-load.md has the measured run): the highest
 * priority is never refused, the lower ones are refused with 429 and {@code Retry-After}, and no engine is ejected.
 * Only what does not depend on timing is asserted; the latencies are measured by
 * {@code sextant-server/bench/run.sh overload-defaults}.
 */
class GatewayOverloadTest {
    /** An emulated engine: batches of 2, a step of 100 ms, one token an answer: 20 req/s, as its topology says. */
    private static final int ENGINE_RPS = 20;
    private static final List<String> CLASSES = List.of("high", "normal", "low");
    /** Requests per second per class: a third of twice the fleet's 40 req/s. */
    private static final int RATE_PER_CLASS = 2 * 2 * ENGINE_RPS / 3;
    private static final int SECONDS = 15;

    @TempDir
    Path dir;

    @Test
    void twiceTheCapacity_withShippedDefaults_shedsLowerPrioritiesWith429_neverTheHighest_ejectsNoEngine()
            throws Exception {
        EngineEmulator e1 = EngineEmulator.start(engine("e1"));
        EngineEmulator e2 = EngineEmulator.start(engine("e2"));
        Path topology = dir.resolve("topology.yaml");
        Files.writeString(topology, "gateway_clusters: [{id: gw, region: r}]\n"
                + "engine_clusters: [{id: c, region: r}]\nnetwork_rtt_ms: {gw: {c: 1}}\n"
                + "models: [{id: m, output_tokens: 1}]\nengines:\n"
                + "  - {id: e1, cluster: c, endpoint: 'http://127.0.0.1:" + e1.port() + "', models: [m], capacity_rps: "
                + ENGINE_RPS + ", profile: {ttft_ms: 100, tbt_ms: 1}}\n"
                + "  - {id: e2, cluster: c, endpoint: 'http://127.0.0.1:" + e2.port() + "', models: [m], capacity_rps: "
                + ENGINE_RPS + ", profile: {ttft_ms: 100, tbt_ms: 1}}\n"
                + "classes: [{id: high, model: m, priority: 2}, {id: normal, model: m, priority: 1}, "
                + "{id: low, model: m, priority: 0}]\n"
                + "demand_rps: {gw: {high: 2, normal: 2, low: 2}}\n");
        ControlPlane cp = ControlPlane.start(ControlPlaneConfig.defaults(topology, "tok"));
        GatewayConfig defaults = GatewayConfig.defaults("gw");
        // the shipped settings; only the access log is off (it changes nothing but the test's output)
        Gateway gw = Gateway.start(defaults.withAccessLog(false)
                        .withControlPlane(cp.uri(), "tok", defaults.reportInterval()),
                SnapshotSource.longPoll(cp.uri(), "gw", "tok", Duration.ofSeconds(30)), 2);
        Map<String, Tally> tallies = new ConcurrentHashMap<>();
        try {
            ScheduledExecutorService timer = Executors.newScheduledThreadPool(2);
            HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                    .connectTimeout(Duration.ofSeconds(5)).build();
            int perClass = RATE_PER_CLASS * SECONDS;
            CountDownLatch answered = new CountDownLatch(CLASSES.size() * perClass);
            URI uri = URI.create("http://127.0.0.1:" + gw.port() + "/v1/chat/completions");
            try {
                for (int p = 0; p < CLASSES.size(); p++) {
                    String cls = CLASSES.get(p);
                    String priority = Integer.toString(CLASSES.size() - 1 - p);
                    Tally t = tallies.computeIfAbsent(cls, c -> new Tally());
                    AtomicInteger sent = new AtomicInteger();
                    // open loop: requests leave on schedule whatever the answers do, as clients' traffic does
                    timer.scheduleAtFixedRate(() -> {
                        int n = sent.getAndIncrement();
                        if (n >= perClass) {
                            return;
                        }
                        HttpRequest r = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(60))
                                .header("content-type", "application/json").header("x-sextant-priority", priority)
                                .POST(HttpRequest.BodyPublishers.ofString(Fleet.chat(cls + "-" + n, false, 1))).build();
                        http.sendAsync(r, HttpResponse.BodyHandlers.discarding()).whenComplete((a, error) -> {
                            t.count(a, error);
                            answered.countDown();
                        });
                    }, 0, 1_000_000 / RATE_PER_CLASS, TimeUnit.MICROSECONDS);
                }
                assertThat(answered.await(SECONDS + 90, TimeUnit.SECONDS)).as("every request answered: %s", tallies)
                        .isTrue();
            } finally {
                timer.shutdownNow();
            }
            String summary = tallies.toString();
            System.out.println("overload at 2x, shipped defaults: " + summary + "; gateway " + gw.plane().status());
            Tally high = tallies.get("high");
            Tally normal = tallies.get("normal");
            Tally low = tallies.get("low");
            assertThat(high.status(200)).as("the highest priority is never refused: %s", summary).isEqualTo(perClass);
            assertThat(low.status(429)).as("the lowest priority is shed: %s", summary).isPositive();
            assertThat(low.status(429)).as("lowest first: %s", summary).isGreaterThanOrEqualTo(normal.status(429));
            for (Tally t : List.of(normal, low)) {
                assertThat(t.status(200) + t.status(429)).as("served or shed, nothing else: %s", summary)
                        .isEqualTo(perClass);
                assertThat(t.withoutRetryAfter.sum()).as("every 429 says when to come back: %s", summary).isZero();
            }
            assertThat(gw.plane().ejections()).as("no engine ejected: %s", summary).isEmpty();
            assertThat(Fleet.get(gw.port(), "/metrics").body()).contains("sextant_gateway_ejections_total 0.0");
        } finally {
            gw.close();
            cp.close();
            e1.close();
            e2.close();
        }
    }

    private static EngineConfig engine(String id) {
        return EngineConfig.defaults(id, "m").withLatency(2, 0.0, 1000.0 * 2 / ENGINE_RPS, 0.0).withDefaultMaxTokens(1);
    }

    /** Answers of one class by status; 429s without {@code Retry-After}; requests without an answer (status 0). */
    private static final class Tally {
        final Map<Integer, LongAdder> byStatus = new ConcurrentHashMap<>();
        final LongAdder withoutRetryAfter = new LongAdder();

        void count(HttpResponse<Void> answer, Throwable error) {
            int status = error != null ? 0 : answer.statusCode();
            byStatus.computeIfAbsent(status, s -> new LongAdder()).increment();
            if (status == 429 && answer.headers().firstValue("retry-after").isEmpty()) {
                withoutRetryAfter.increment();
            }
        }

        long status(int s) {
            LongAdder a = byStatus.get(s);
            return a == null ? 0 : a.sum();
        }

        @Override
        public String toString() {
            return byStatus.toString();
        }
    }
}
