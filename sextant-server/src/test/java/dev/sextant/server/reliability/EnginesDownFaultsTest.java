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
}
