package dev.sextant.server.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.engine.Faults;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Engines that answer badly: never (a black hole that accepts connections and reads nothing, an engine that takes
 * requests and hangs, an engine core that stands still with requests in its batch), slowly (10× the time between tokens), with 500s for 30% of requests, or with a truncated or
 * malformed event stream. A request its engine may have started is never sent to another (docs/request-path.md §5).
 */
class EngineMisbehaviourFaultsTest extends FaultCase {
    private static final int N = 120;
    private static final int CONCURRENCY = 8;

    @Test
    void blackHoleEngine_requestsSentThereTimeOut_withoutARetry_untilItIsEjected() throws Exception {
        List<AutoCloseable> fakes = new ArrayList<>();
        String hole = Rig.blackHole(fakes);
        try (Rig rig = new Rig(2, Map.of("eu-3", hole)); Traffic traffic = new Traffic(
                rig.startGateway(Rig.options()).port(), Rig.CLIENT_DEADLINE)) {
            fakes.forEach(rig::own);
            Tally tally = new Tally("black hole engine (eu-3 accepts, never answers)");
            traffic.run(tally, N, CONCURRENCY, i -> { });
            assertSound(rig, tally, 0, N);
            assertThat(tally.served("eu-3")).isZero();
            assertThat(tally.statusCount("504")).as("its requests time out, explicitly (the request was written: not"
                    + " retried)").isPositive().isEqualTo(tally.failedCount());
            assertThat(rig.gateway.plane().ejections()).as("eu-3 is ejected").anyMatch(e -> e.engineId().equals("eu-3"));
        }
    }

    @Test
    void hangingEngine_itsRequestsTimeOut_streamsOnTheirFirstToken_withoutARetry() throws Exception {
        try (Rig rig = new Rig(2); Traffic traffic = new Traffic(rig.startGateway(Rig.options()).port(),
                Rig.CLIENT_DEADLINE)) {
            rig.warmUp(traffic);
            long before = rig.resentTotal();
            rig.engines.get("eu-1").setFaults(new Faults(0, 1, true, -1)); // takes requests, never answers
            Tally tally = new Tally("engine hangs (eu-1 takes requests, never answers)");
            traffic.run(tally, N, CONCURRENCY, i -> { });
            assertSound(rig, tally, before, Rig.WARM_UP + N);
            assertThat(tally.served("eu-1")).isZero();
            assertThat(tally.statusCount("504")).as("the requests it took time out").isPositive()
                    .isEqualTo(tally.failedCount()).isLessThanOrEqualTo((int) rig.engines.get("eu-1").hungRequests());
            assertThat(rig.gateway.plane().ejections()).as("eu-1 is ejected").anyMatch(e -> e.engineId().equals("eu-1"));
        }
    }

    @Test
    void stalledEngineCore_itsRequestsTimeOut_withoutARetry_andNothingItHeldIsGeneratedTwiceWhenItMovesAgain()
            throws Exception {
        try (Rig rig = new Rig(2); Traffic traffic = new Traffic(rig.startGateway(Rig.options()).port(),
                Rig.CLIENT_DEADLINE)) {
            rig.warmUp(traffic);
            long before = rig.resentTotal();
            var eu1 = rig.engines.get("eu-1");
            eu1.setFaults(new Faults(0, 1, false, -1, Faults.Corruption.NONE, true)); // holds requests, /metrics answers
            Tally tally = new Tally("engine core stalls (eu-1 holds requests, its /metrics answering)");
            traffic.run(tally, N, CONCURRENCY, i -> { });
            eu1.setFaults(Faults.NONE); // moves again: whatever it still holds was given up by the gateway
            assertSound(rig, tally, before, Rig.WARM_UP + N);
            assertThat(tally.statusCount("504")).as("the requests it held time out").isPositive()
                    .isEqualTo(tally.failedCount());
            assertThat(rig.gateway.plane().ejections()).as("eu-1 is ejected").anyMatch(e -> e.engineId().equals("eu-1"));
        }
    }

    @Test
    void slowEngine_tenTimesTheTimeBetweenTokens_stillCompletesEveryRequest() throws Exception {
        try (Rig rig = new Rig(4); Traffic traffic = new Traffic(rig.startGateway(Rig.options()).port(),
                Rig.CLIENT_DEADLINE)) {
            rig.warmUp(traffic);
            long before = rig.resentTotal();
            rig.engines.get("eu-1").setFaults(new Faults(0, 10, false, -1)); // steps of 40 ms instead of 4 ms
            Tally tally = new Tally("slow engine (eu-1 at 10× TBT)");
            traffic.run(tally, N, CONCURRENCY, i -> { });
            assertSound(rig, tally, before, Rig.WARM_UP + N);
            assertThat(tally.completedCount()).as("slow is not broken: within the timeouts, it completes")
                    .isGreaterThanOrEqualTo(N * 9 / 10);
            assertThat(tally.statusCount("200+sse-error")).as("no stream cut for being slow").isZero();
            assertThat(tally.served("eu-1")).as("eu-1 kept serving, slowly").isPositive();
        }
    }

    @Test
    void engineFailingThirtyPercent_failuresAreRetriedWithinTheBudget() throws Exception {
        try (Rig rig = new Rig(2); Traffic traffic = new Traffic(rig.startGateway(Rig.options()).port(),
                Rig.CLIENT_DEADLINE)) {
            rig.warmUp(traffic);
            long before = rig.resentTotal();
            rig.engines.get("eu-1").setFaults(new Faults(0.3, 1, false, -1));
            Tally tally = new Tally("engine answering 500 to 30% (eu-1)");
            traffic.run(tally, N, CONCURRENCY, i -> { });
            assertSound(rig, tally, before, Rig.WARM_UP + N);
            assertThat(tally.retriesReported() + tally.statusCount("502")).as("the 500s were retried (streams) or"
                    + " answered 502 (non-streaming: a 500 may follow a generation)").isPositive();
            assertThat(tally.failedCount()).as("each failure a 502, or a 503 once the retry budget is spent")
                    .isEqualTo(tally.statusCount("502") + tally.statusCount("503"));
            assertThat(tally.served("eu-1")).as("eu-1 still serves 70%").isPositive();
            assertThat(tally.completedCount()).as("most complete").isGreaterThanOrEqualTo(N * 8 / 10);
        }
    }

    @Test
    void truncatedStream_endsWithAnErrorEventInsteadOfLookingComplete() throws Exception {
        try (Rig rig = new Rig(2); Traffic traffic = new Traffic(rig.startGateway(Rig.options()).port(),
                Rig.CLIENT_DEADLINE)) {
            rig.warmUp(traffic);
            long before = rig.resentTotal();
            rig.engines.get("eu-1").setFaults(new Faults(0, 1, false, -1, Faults.Corruption.TRUNCATE));
            Tally tally = new Tally("truncated event stream (eu-1 ends streams without [DONE])");
            traffic.run(tally, N, CONCURRENCY, i -> { });
            assertSound(rig, tally, before, Rig.WARM_UP + N);
            assertThat(tally.statusCount("200+sse-error")).as("cut streams end with an error event").isPositive();
            assertThat(tally.served("eu-1")).as("eu-1 still completes non-streaming requests").isPositive();
        }
    }

    @Test
    void malformedStream_isDroppedWithAnErrorEvent_andItsConnectionIsNotReused() throws Exception {
        try (Rig rig = new Rig(2); Traffic traffic = new Traffic(rig.startGateway(Rig.options()).port(),
                Rig.CLIENT_DEADLINE)) {
            rig.warmUp(traffic);
            long before = rig.resentTotal();
            rig.engines.get("eu-1").setFaults(new Faults(0, 1, false, -1, Faults.Corruption.MALFORMED));
            Tally tally = new Tally("malformed event stream (eu-1 breaks chunked encoding)");
            traffic.run(tally, N, CONCURRENCY, i -> { });
            assertSound(rig, tally, before, Rig.WARM_UP + N);
            assertThat(tally.statusCount("200+sse-error")).as("broken streams end with an error event").isPositive();
            assertThat(tally.served("eu-1")).as("eu-1 still completes non-streaming requests").isPositive();
        }
    }
}
