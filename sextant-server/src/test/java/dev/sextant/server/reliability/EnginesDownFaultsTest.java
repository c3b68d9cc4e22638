package dev.sextant.server.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.gateway.Fleet;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Every engine of a class down, and a network partition between the gateway and one engine: connections refused
 * (nothing listens) or black-holed (SYNs never answered).
 */
class EnginesDownFaultsTest extends FaultCase {
    private static final int N = 120;
    private static final int CONCURRENCY = 8;

    @Test
    void everyEngineOfAClassDown_is503WithAClearMessage_andServesAgainWhenOneReturns() throws Exception {
        try (Rig rig = new Rig(2); Traffic traffic = new Traffic(rig.startGateway(
                Rig.options().toBuilder().ejectionBase(Duration.ofSeconds(1)).build()).port(), Rig.CLIENT_DEADLINE)) {
            rig.warmUp(traffic);
            long before = rig.resentTotal();
            long usBefore = rig.received("us-1", "us-2");
            rig.kill("eu-1");
            rig.kill("eu-2"); // class chat-eu has no engine left; class chat still has us-1, us-2
            Tally down = new Tally("all engines of class chat-eu down (eu-west only requests)");
            traffic.run(down, N / 2, CONCURRENCY, i -> { }, i -> true);
            assertSound(rig, down, before, Rig.WARM_UP + N / 2);
            assertThat(down.completedCount()).as("no eu-west engine is left: nothing may complete").isZero();
            assertThat(down.statusCount("503")).as("refused as unavailable").isEqualTo(N / 2);
            assertThat(rig.received("us-1", "us-2")).as("no attempt crossed into us-east").isEqualTo(usBefore);
            HttpResponse<String> refused = traffic.probe(true);
            assertThat(refused.statusCode()).isEqualTo(503);
            assertThat(refused.body()).as("the message names the engines and what they did")
                    .contains("cannot connect to engine eu-").contains("Connection refused");

            long beforeRecovery = rig.resentTotal();
            rig.restart("eu-2");
            java.util.concurrent.atomic.AtomicInteger probes = new java.util.concurrent.atomic.AtomicInteger(1);
            assertThat(Fleet.await(() -> {
                try {
                    probes.incrementAndGet();
                    return traffic.probe(true).statusCode() == 200;
                } catch (Exception e) {
                    return false;
                }
            }, Duration.ofSeconds(15))).as("eu-west requests are served again once eu-2 is back").isTrue();
            Tally back = new Tally("class chat-eu recovers (eu-2 back)");
            traffic.run(back, N, CONCURRENCY, i -> { });
            assertSound(rig, back, beforeRecovery, Rig.WARM_UP + N / 2 + N + probes.get());
            assertThat(back.completedCount()).as("every request completes again").isGreaterThanOrEqualTo(N * 9 / 10);
        }
    }

    @Test
    void partitionRefused_connectionsToOneEngineAreRefused_requestsGoElsewhere() throws Exception {
        try (Rig rig = new Rig(2, Map.of("eu-3", Rig.closedPort())); Traffic traffic = new Traffic(
                rig.startGateway(Rig.options()).port(), Rig.CLIENT_DEADLINE)) {
            Tally tally = new Tally("partition: connection refused (eu-3)");
            traffic.run(tally, N, CONCURRENCY, i -> { });
            assertSound(rig, tally, 0, N);
            assertThat(tally.served("eu-3")).isZero();
            assertThat(tally.retriesReported()).as("refused connections were retried").isPositive();
            assertThat(rig.gateway.plane().ejections()).as("eu-3 is ejected").anyMatch(e -> e.engineId().equals("eu-3"));
        }
    }

    @Test
    void partitionBlackHoled_connectsToOneEngineTimeOut_requestsGoElsewhere() throws Exception {
        List<AutoCloseable> fakes = new ArrayList<>();
        String hole = Rig.unansweredSyn(fakes);
        try (Rig rig = new Rig(2, Map.of("eu-3", hole)); Traffic traffic = new Traffic(
                rig.startGateway(Rig.options()).port(), Rig.CLIENT_DEADLINE)) {
            fakes.forEach(rig::own);
            Tally tally = new Tally("partition: SYN never answered (eu-3)");
            traffic.run(tally, N, CONCURRENCY, i -> { });
            assertSound(rig, tally, 0, N);
            assertThat(tally.served("eu-3")).isZero();
            assertThat(tally.retriesReported()).as("connect timeouts were retried").isPositive();
            assertThat(rig.gateway.plane().ejections()).as("eu-3 is ejected").anyMatch(e -> e.engineId().equals("eu-3"));
        }
    }

    /**
     * Three of the four engines eu-west requests may use refuse connections (eu-2 killed, eu-3 and eu-4 never
     * listening) while eu-1 answers: past the cap and past half of the allowed engines, they are ejected, since eu-1's
     * answers show that the gateway reaches the class and the fault is theirs. Afterwards each of them costs at most
     * its half-open trial every 5 s, not a failed connection for every request its keys choose.
     */
    @Test
    void mostOfAClassCutOff_whileTheEngineLeftAnswers_theRestAreEjected() throws Exception {
        try (Rig rig = new Rig(2, Map.of("eu-3", Rig.closedPort(), "eu-4", Rig.closedPort())); Traffic traffic =
                new Traffic(rig.startGateway(Rig.options()).port(), Rig.CLIENT_DEADLINE)) {
            rig.kill("eu-2");
            Tally cut = new Tally("three of four eu-west engines refuse connections");
            traffic.run(cut, N, CONCURRENCY, i -> { }, i -> true);
            assertSound(rig, cut, 0, N);
            assertThat(cut.retriesReported()).as("the refused connections were retried").isPositive();

            long retriesBefore = rig.resentTotal();
            Tally after = new Tally("the same, once they are ejected");
            long start = System.nanoTime();
            traffic.run(after, N, CONCURRENCY, i -> { }, i -> true);
            double seconds = (System.nanoTime() - start) / 1e9;
            assertSound(rig, after, retriesBefore, 2L * N);
            assertThat(after.completedCount()).as("every request completes on eu-1").isEqualTo(N);
            assertThat(after.served("eu-1")).isEqualTo(N);
            // where the cap kept one of them in rotation, 66 of the 120 paid a refused connection first
            assertThat(after.retriesReported()).as("retries in %.1f s: the three engines' half-open trials at most", seconds)
                    .isLessThanOrEqualTo(3 * (1 + (int) Math.ceil(seconds / 5)));
        }
    }
}
