package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.config.TopologyLoader;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.request.DataPlaneOptions;
import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.server.engine.Faults;
import dev.sextant.snapshot.Snapshot;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;

/**
 * Spill under load on live sockets (docs/request-path.md, "Spill under load" and §6): a gateway holding a snapshot
 * that the control plane can no longer refresh, whose weights send class chat to engine a alone while engine b, an
 * allowed engine farther away, gets none. Offered far more than a's allowance, the gateway sends the excess to b;
 * offered less again, everything returns to a. Slowed down within its allowance, a sheds to b what its pace does not
 * serve; fast again, it gets everything back. Slowed down so far that none of its streamed answers ends for a long
 * time, its late first tokens alone make the gateway shed to b.
 */
class GatewaySpillTest {
    /** Output tokens per answer and the emulators' step: an answer takes about 20 × 25 ms = 0.5 s. */
    private static final int TOKENS = 20;
    private static final double STEP_MS = 25;
    /**
     * Closed-loop clients of the surge and of the quiet phase: about 120 and 20 req/s at 0.5 s an answer, against an
     * allowance of 36 req/s for a (demand 20 req/s planned on it, plus its spare capacity: 40 × (1 − 0.1 headroom) −
     * 20). The quiet phase keeps more than 8 requests in flight at a, so it is the offered rate, not the bounded
     * load's minimum, that ends the spill.
     */
    private static final int SURGE_WORKERS = 60;
    private static final int QUIET_WORKERS = 10;
    private static final Duration DEADLINE = Duration.ofSeconds(60);

    @Test
    void heldSnapshotPastItsAge_engineOfferedBeyondItsAllowance_spillsToTheUnusedNearbyEngine_andLoadReturnsWhenItFalls()
            throws Exception {
        try (EngineEmulator a = EngineEmulator.start(engine("a"));
             EngineEmulator b = EngineEmulator.start(engine("b"))) {
            Snapshot held = snapshot(a.port(), b.port());
            assertThat(held.engines().get("a").loadRps()).as("the plan sends chat to a").isGreaterThan(19);
            assertThat(held.engines().get("b").loadRps()).as("and nothing to b").isZero();
            // the control plane is away: the snapshot is never refreshed, and past max_snapshot_age (1 s here) the
            // gateway keeps its weights and keys and the spill (§6)
            GatewayConfig config = GatewayConfig.defaults("gw").withAccessLog(false)
                    .withOptions(DataPlaneOptions.builder().maxSnapshotAge(Duration.ofSeconds(1)).build());
            try (Gateway gw = Gateway.start(config, SnapshotSource.fixed(held), 2)) {
                assertThat(Fleet.await(() -> gw.plane().status().fallback(), DEADLINE)).as("past its age").isTrue();

                long spillsBefore = spills(gw);
                ClosedLoop surge = new ClosedLoop("surge", gw.port(), SURGE_WORKERS,
                        (w, n) -> Fleet.chat("surge-" + w + "-" + n, false, TOKENS));
                boolean spilled = spillsToB(gw, b, spillsBefore, surge);
                assertThat(spilled).as("a offered ~120 req/s against an allowance of 36: b serves the excess; "
                        + "spills %d, b received %d; %s", spills(gw), b.requestsReceived(), surge).isTrue();
                assertThat(surge.answered(200)).as("the surge is served, not shed: %s", surge)
                        .isEqualTo(surge.answered());
                assertThat(surge.servedBy("a")).as("a keeps the keys within its allowance: %s", surge).isPositive();
                System.out.println("surge: spills " + spills(gw) + ", " + surge);

                try (ClosedLoop quiet = new ClosedLoop("quiet", gw.port(), QUIET_WORKERS,
                        (w, n) -> Fleet.chat("quiet-" + w + "-" + n, false, TOKENS))) {
                    // the offered rate's 2 s average still remembers the surge for a while
                    boolean returned = returnsToA(gw, b, quiet);
                    assertThat(returned).as("at ~20 req/s, within a's allowance, the spill stops and requests land on "
                            + "a; spills %d; %s", spills(gw), quiet).isTrue();
                    assertThat(gw.plane().status().fallback()).isTrue();
                    assertThat(gw.plane().status().ejectedEngines()).as("neither engine ejected").isZero();
                    assertThat(quiet.unanswered.sum()).isZero();
                }
            }
        }
    }

    /**
     * The same held snapshot past its age (the control plane silent), a offered within its allowance. Made four times
     * slower while more clients arrive, a holds more of the gateway's requests than its allowance at the planned pace
     * would put there and answers four times later: the gateway spills what a's pace does not serve to b (request-path
     * §4, "An engine that does not keep up within its allowance"); a fast again, everything returns to a.
     */
    @Test
    void heldSnapshotPastItsAge_engineSlowWithinItsAllowance_spillsWhatItsPaceDoesNotServe_andLoadReturnsWhenFast()
            throws Exception {
        try (EngineEmulator a = EngineEmulator.start(engine("a"));
             EngineEmulator b = EngineEmulator.start(engine("b"))) {
            try (Gateway gw = heldPastItsAge(a, b)) {
                calm(gw, b, false);

                a.setFaults(new Faults(0, 4, false, -1));
                long spillsBefore = spills(gw);
                // 40 clients at 2 s an answer: 20 req/s offered, within the allowance, but 40 held at a
                ClosedLoop slow = new ClosedLoop("slow", gw.port(), 40,
                        (w, n) -> Fleet.chat("slow-" + w + "-" + n, false, TOKENS));
                boolean spilled = spillsToB(gw, b, spillsBefore, slow);
                assertThat(spilled).as("a four times slower: b serves what its pace does not; spills %d, b received "
                        + "%d; %s", spills(gw), b.requestsReceived(), slow).isTrue();
                assertThat(slow.answered(200)).as("every request answered: %s", slow)
                        .isEqualTo(slow.answered());
                assertThat(slow.servedBy("a")).as("a keeps the keys its pace serves: %s", slow).isPositive();
                System.out.println("slow: spills " + spills(gw) + ", " + slow);

                a.setFaults(Faults.NONE);
                try (ClosedLoop quiet = new ClosedLoop("quiet", gw.port(), QUIET_WORKERS,
                        (w, n) -> Fleet.chat("quiet-" + w + "-" + n, false, TOKENS))) {
                    boolean returned = returnsToA(gw, b, quiet);
                    assertThat(returned).as("a fast again: the spill stops and requests land on a; spills %d; %s",
                            spills(gw), quiet).isTrue();
                    assertThat(gw.plane().status().ejectedEngines()).as("neither engine ejected").isZero();
                    assertThat(quiet.unanswered.sum()).isZero();
                }
            }
        }
    }

    /**
     * The same held snapshot past its age, streamed answers. Made forty times slower, a takes 20 s an answer, so none of
     * the answers it starts ends for that long; its first tokens, a second late, say it at once. Offered 25 req/s on a
     * schedule (within its allowance of 36, and more in flight than the 18 it holds at the planned pace within a
     * second), the gateway moves what a's pace does not serve to b before any of a's slow answers has ended
     * (request-path §4, "An engine that does not keep up within its allowance": the pace reads the first tokens as they
     * come).
     */
    @Test
    void heldSnapshotPastItsAge_streamsWhoseFirstTokensComeLate_spillBeforeAnyOfTheirAnswersEnds() throws Exception {
        try (EngineEmulator a = EngineEmulator.start(engine("a"));
             EngineEmulator b = EngineEmulator.start(engine("b"))) {
            try (Gateway gw = heldPastItsAge(a, b)) {
                calm(gw, b, true);

                a.setFaults(new Faults(0, 40, false, -1));
                LongAdder endedAtA = new LongAdder();
                HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
                ScheduledExecutorService clients = Executors.newSingleThreadScheduledExecutor();
                AtomicLong sent = new AtomicLong();
                try {
                    // open loop: a request every 40 ms whatever the answers do
                    clients.scheduleAtFixedRate(() -> {
                        long n = sent.incrementAndGet();
                        http.sendAsync(HttpRequest.newBuilder(
                                        URI.create("http://127.0.0.1:" + gw.port() + "/v1/chat/completions"))
                                        .header("content-type", "application/json")
                                        .POST(HttpRequest.BodyPublishers.ofString(Fleet.chat("late-" + n, true, TOKENS)))
                                        .build(), HttpResponse.BodyHandlers.ofString())
                                .thenAccept(r -> {
                                    if ("a".equals(r.headers().firstValue("x-sextant-engine").orElse(null))) {
                                        endedAtA.increment();
                                    }
                                });
                    }, 0, 40, TimeUnit.MILLISECONDS);
                    assertThat(Fleet.await(() -> b.requestsReceived() >= 30, DEADLINE))
                            .as("b serves what a's pace does not; sent %d, spills %d", sent.get(), spills(gw)).isTrue();
                    assertThat(endedAtA.sum()).as("b took them before any of a's slow answers ended (sent %d)",
                            sent.get()).isZero();
                } finally {
                    clients.shutdownNow();
                }
                a.setFaults(Faults.NONE);
            }
        }
    }

    /** A gateway holding {@link #snapshot} with the control plane away, past its maximum age (1 s here). */
    private static Gateway heldPastItsAge(EngineEmulator a, EngineEmulator b) throws Exception {
        GatewayConfig config = GatewayConfig.defaults("gw").withAccessLog(false)
                .withOptions(DataPlaneOptions.builder().maxSnapshotAge(Duration.ofSeconds(1)).build());
        Gateway gw = Gateway.start(config, SnapshotSource.fixed(snapshot(a.port(), b.port())), 2);
        assertThat(Fleet.await(() -> gw.plane().status().fallback(), DEADLINE)).as("past its age").isTrue();
        return gw;
    }

    /**
     * About 20 req/s at 0.5 s an answer ({@code stream}ed or whole), within a's allowance of 36 and below the 18 it holds
     * there at the planned pace, until a has served 200: a sets its floor, nothing spills.
     */
    private static void calm(Gateway gw, EngineEmulator b, boolean stream) throws Exception {
        try (ClosedLoop calm = new ClosedLoop("calm", gw.port(), QUIET_WORKERS,
                (w, n) -> Fleet.chat("calm-" + w + "-" + n, stream, TOKENS))) {
            assertThat(Fleet.await(() -> calm.servedBy("a") >= 200, DEADLINE)).as("%s", calm).isTrue();
        }
        assertThat(b.requestsReceived()).as("within its allowance at its pace: a alone").isZero();
    }

    /**
     * Runs {@code load} until b has received 100 requests and the gateway has counted 100 spills beyond
     * {@code spillsBefore} (or the deadline passes), then closes it; whether both happened.
     */
    private static boolean spillsToB(Gateway gw, EngineEmulator b, long spillsBefore, ClosedLoop load)
            throws Exception {
        try (load) {
            return Fleet.await(() -> b.requestsReceived() >= 100 && spills(gw) >= spillsBefore + 100, DEADLINE);
        }
    }

    /**
     * Whether, within the deadline, {@code quiet} gets a stretch of 100 answers from a during which nothing spilled
     * and b received nothing.
     */
    private static boolean returnsToA(Gateway gw, EngineEmulator b, ClosedLoop quiet) throws Exception {
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        boolean returned = false;
        while (!returned && System.nanoTime() < deadline) {
            long s0 = spills(gw);
            long b0 = b.requestsReceived();
            long a0 = quiet.servedBy("a");
            returned = Fleet.await(() -> quiet.servedBy("a") >= a0 + 100, DEADLINE)
                    && spills(gw) == s0 && b.requestsReceived() == b0;
        }
        return returned;
    }

    private static EngineConfig engine(String id) {
        return EngineConfig.defaults(id, "m").withLatency(256, 0.0, STEP_MS, 0.0).withDefaultMaxTokens(TOKENS);
    }

    /** The gateway's {@code sextant_gateway_spills_total}, as its /metrics says. */
    private static long spills(Gateway gw) {
        try {
            for (String line : Fleet.get(gw.port(), "/metrics").body().split("\n")) {
                if (line.startsWith("sextant_gateway_spills_total")) {
                    return (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        throw new IllegalStateException("no sextant_gateway_spills_total in /metrics");
    }

    /**
     * The optimizer's snapshot for gateway cluster gw and class chat: 20 req/s planned, engine a 1 ms away with
     * capacity for 40, engine b 200 ms away with capacity for 200. Profiles as the emulators behave (a first token in
     * one step, then a step a token, whatever the batch); b's round trip costs more than a's queueing term at half
     * its capacity, so the plan leaves b unused.
     */
    private static Snapshot snapshot(int portA, int portB) throws Exception {
        String profile = "profile: {ttft_ms: " + STEP_MS + ", tbt_ms: " + STEP_MS + ", tbt_slope: 0}";
        String yaml = "gateway_clusters: [{id: gw, region: r}]\n"
                + "engine_clusters: [{id: near, region: r}, {id: far, region: r}]\n"
                + "network_rtt_ms: {gw: {near: 1, far: 200}}\n"
                + "models: [{id: m, output_tokens: " + TOKENS + "}]\n"
                + "engines:\n"
                + "  - {id: a, cluster: near, endpoint: 'http://127.0.0.1:" + portA + "', models: [m], capacity_rps: 40, "
                + profile + "}\n"
                + "  - {id: b, cluster: far, endpoint: 'http://127.0.0.1:" + portB + "', models: [m], capacity_rps: 200, "
                + profile + "}\n"
                + "classes: [{id: chat, model: m}]\n"
                + "demand_rps: {gw: {chat: 20}}\n";
        return Policies.optimal().solve(TopologyLoader.load(yaml, "spill.yaml"), SolveOptions.defaults());
    }
}
