package dev.sextant.server.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.engine.Faults;
import dev.sextant.server.gateway.Fleet;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Engines that crash: before the first byte, in the middle of a stream, and between requests on a pooled connection. */
class EngineCrashFaultsTest extends FaultCase {
    private static final int N = 120;
    private static final int CONCURRENCY = 8;

    @Test
    void engineCrashesBeforeTheFirstByte_inFlightRequestsAreRetriedElsewhere() throws Exception {
        try (Rig rig = new Rig(2); Traffic traffic = new Traffic(rig.startGateway(Rig.options()).port(),
                Rig.CLIENT_DEADLINE)) {
            rig.warmUp(traffic);
            long before = rig.resentTotal();
            rig.engines.get("eu-1").setFaults(new Faults(0, 1, true, -1)); // holds requests without a byte of answer
            Tally tally = new Tally("engine crash before the first byte (eu-1 holds requests, then dies)");
            long[] held = new long[1];
            traffic.run(tally, N, CONCURRENCY, i -> {
                if (i == N / 4) {
                    try { // let requests pile up on eu-1 (inside the first-byte timeout), then kill it
                        Fleet.await(() -> rig.engines.get("eu-1").hungRequests() >= 2, Duration.ofSeconds(1));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    held[0] = rig.engines.get("eu-1").hungRequests();
                    rig.kill("eu-1");
                }
            });
            assertSound(rig, tally, before, Rig.WARM_UP + N);
            assertThat(held[0]).as("requests eu-1 held when it died").isPositive();
            assertThat(tally.retriesReported()).as("requests eu-1 held were retried elsewhere").isPositive();
            assertThat(tally.completedCount()).as("most requests complete; the rest are refused by the retry budget")
                    .isGreaterThanOrEqualTo(N * 9 / 10);
        }
    }

    @Test
    void engineCrashesMidStream_streamsEndWithAnErrorEvent_andTheEngineIsEjected() throws Exception {
        try (Rig rig = new Rig(2); Traffic traffic = new Traffic(rig.startGateway(Rig.options()).port(),
                Rig.CLIENT_DEADLINE)) {
            rig.warmUp(traffic);
            long before = rig.resentTotal();
            rig.engines.get("eu-1").setFaults(new Faults(0, 1, false, 2)); // closes after 2 tokens
            Tally tally = new Tally("engine crash mid-stream (eu-1 after 2 tokens)");
            traffic.run(tally, N, CONCURRENCY, i -> { });
            assertSound(rig, tally, before, Rig.WARM_UP + N);
            assertThat(tally.statusCount("200+sse-error")).as("streams cut after their first byte end with an error event")
                    .isPositive();
            assertThat(tally.served("eu-1")).as("eu-1 never completes an answer").isZero();
            assertThat(rig.gateway.plane().ejections()).as("eu-1 is ejected").anyMatch(e -> e.engineId().equals("eu-1"));
        }
    }

    @Test
    void engineRestartsBetweenRequests_pooledConnectionsItClosedAreNotUsed() throws Exception {
        try (Rig rig = new Rig(2); Traffic traffic = new Traffic(rig.startGateway(Rig.options()).port(),
                Rig.CLIENT_DEADLINE)) {
            rig.warmUp(traffic); // leaves idle keep-alive connections to every engine
            long before = rig.resentTotal();
            rig.kill("eu-1"); // closes every connection, the gateway's idle ones included
            rig.restart("eu-1"); // and is back on the same port before the next request
            Tally tally = new Tally("engine restart between requests (pooled connections to eu-1 closed)");
            traffic.run(tally, N, CONCURRENCY, i -> { });
            assertSound(rig, tally, before, Rig.WARM_UP + N);
            assertThat(tally.completedCount()).as("the other engines are healthy").isGreaterThanOrEqualTo(N * 9 / 10);
            assertThat(tally.served("eu-1")).as("the restarted eu-1 serves again").isPositive();
            assertThat(rig.resentTotal() - before).as("no request was sent into a dead pooled connection").isZero();
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"FIN", "RST"})
    void engineClosesAPooledConnectionAsItIsReused_theRequestGoesOutOnANewConnection(String how) throws Exception {
        OneShotEngine oneShot = new OneShotEngine("eu-3", how.equals("RST"));
        try (Rig rig = new Rig(2, Map.of("eu-3", oneShot.endpoint())); Traffic traffic = new Traffic(
                rig.startGateway(Rig.options()).port(), Rig.CLIENT_DEADLINE)) {
            rig.own(oneShot);
            Tally tally = new Tally("engine closes a pooled connection as it is reused (eu-3, " + how + ")");
            traffic.run(tally, N, CONCURRENCY, i -> { });
            assertSound(rig, tally, 0, N);
            assertThat(oneShot.dropped.get()).as("requests eu-3 dropped on a reused connection").isPositive();
            assertThat(tally.served("eu-3")).as("and answered on a new one").isPositive();
            assertThat(tally.completedCount()).as("the other engines are healthy").isGreaterThanOrEqualTo(N * 9 / 10);
            // each dropped request would otherwise have been a failed attempt and a retry (a stalled CI machine may
            // still time out a healthy engine once in a while, hence not zero)
            assertThat(rig.resentTotal()).as("a connection the engine closed is not a failed attempt (%d dropped)",
                    oneShot.dropped.get()).isLessThan(Math.max(2, oneShot.dropped.get() / 2));
            assertThat(rig.gateway.plane().ejections()).as("nor a reason to eject a healthy engine").isEmpty();
        }
    }
}
