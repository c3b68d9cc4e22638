package dev.sextant.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.topology.PriorityScheduling;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class EngineSimTest {
    /** a = 10 ms, b = 0.1 ms/token, c = 1 ms/sequence, 2 sequences, 100-token steps. */
    private static final EngineParams P = new EngineParams(10, 0.1, 1, 2, 10_000, 100);

    private final EventLoop loop = new EventLoop();
    private final List<String> log = new ArrayList<>();
    private final EngineSim.Listener listener = new EngineSim.Listener() {
        @Override
        public void firstToken(EngineSim e, SimRequest r, double at) {
            log.add("first " + r.id + " @" + at);
        }

        @Override
        public void finished(EngineSim e, SimRequest r, double at) {
            log.add("done " + r.id + " @" + at);
        }

        @Override
        public void failed(EngineSim e, SimRequest r, double at, boolean connect) {
            log.add("failed " + r.id + " @" + at);
        }

        @Override
        public void timedOut(EngineSim e, SimRequest r, double at) {
            log.add("timeout " + r.id + " @" + at);
        }
    };
    private final EngineSim engine = new EngineSim(0, "e", P, loop, listener, 60_000);

    private static SimRequest request(long id, long conversation, int prompt, int output) {
        return new SimRequest(id, new Conversation(conversation, 0, 0, 1), 0, 0, 0, prompt, output);
    }

    private void arriveAt(double t, SimRequest r) {
        loop.at(t, () -> engine.arrive(r));
    }

    @Test
    void chunkedPrefill_thenDecodeRun_matchesHandComputedSteps() {
        // A: 150-token prompt in chunks of 100 (10 + 0.1·100 = 20 ms) and 50 (15 ms): first token at 35;
        // two more tokens, one sequence decoding: 2 × (10 + 1) = 22 ms, done at 57.
        arriveAt(0, request(1, 1, 150, 3));
        loop.runAll();
        assertThat(log).containsExactly("first 1 @35.0", "done 1 @57.0");
        assertThat(engine.busyMs).isEqualTo(57.0);
        assertThat(engine.sequenceMs).as("one sequence running all along").isEqualTo(57.0);
    }

    @Test
    void scrape_countsEachTokenAsItIsGenerated_asVllmDoes_notWhenTheRequestEnds() {
        // as chunkedPrefill_…: first token at 35, then one run of two 11 ms decode steps (tokens at 46 and 57). A scrape
        // at 50 sees the first gap (11 ms) and two tokens, though the request has not finished; one at 60 the whole
        List<dev.sextant.signal.EngineMetrics> scrapes = new ArrayList<>();
        arriveAt(0, request(1, 1, 150, 3));
        loop.at(50, () -> scrapes.add(engine.metrics()));
        loop.at(60, () -> scrapes.add(engine.metrics()));
        loop.runAll();
        dev.sextant.signal.EngineMetrics mid = scrapes.get(0);
        assertThat(mid.successCount()).isZero();
        assertThat(mid.generationTokens()).isEqualTo(2);
        assertThat(mid.tbt().count()).isEqualTo(1);
        assertThat(mid.tbt().sum()).isCloseTo(0.011, within(1e-12));
        dev.sextant.signal.EngineMetrics end = scrapes.get(1);
        assertThat(end.successCount()).isEqualTo(1);
        assertThat(end.generationTokens()).isEqualTo(3);
        assertThat(end.tbt().count()).isEqualTo(2);
        assertThat(end.tbt().sum()).isCloseTo(0.022, within(1e-12));
    }

    @Test
    void arrivalDuringDecodeRun_joinsAtTheNextStepBoundary() {
        // A decodes from 35 in 11 ms steps; B arrives at 40, joins the step starting at 46:
        // 10 + 0.1·20 + 1·1 = 13 ms, so A's last token and B's first token both come at 59; B's last at 70.
        arriveAt(0, request(1, 1, 150, 3));
        arriveAt(40, request(2, 2, 20, 2));
        loop.runAll();
        assertThat(log).containsExactly("first 1 @35.0", "done 1 @59.0", "first 2 @59.0", "done 2 @70.0");
        assertThat(engine.sequenceMs).as("A alone to 46, both to 59, B alone to 70")
                .isCloseTo(46 + 2 * 13 + 11, org.assertj.core.api.Assertions.within(1e-9));
    }

    @Test
    void nextTurnOfConversation_prefillsOnlyItsNewTokens() {
        // turn 1 leaves 150 + 3 = 153 tokens cached; turn 2 (160 tokens) prefills 7: 10 + 0.7 = 10.7 ms
        arriveAt(0, request(1, 7, 150, 3));
        arriveAt(100, request(2, 7, 160, 1));
        loop.runAll();
        assertThat(log).hasSize(4);
        assertThat(log.get(2)).startsWith("first 2 @110.7");
        assertThat(engine.savedTokens).isEqualTo(153);
        assertThat(engine.promptTokens).isEqualTo(310);
    }

    @Test
    void fullBatch_queuesTheThirdRequestUntilASlotFrees() {
        // two 1-token prompts share a step: 10 + 0.1·2 = 10.2; both then decode 1 token (10 + 2 = 12) → 22.2.
        // The third waits for a slot: step at 22.2 prefills it: 10.1 → first token at 32.3, done (1 output).
        arriveAt(0, request(1, 1, 1, 2));
        arriveAt(0, request(2, 2, 1, 2));
        arriveAt(0, request(3, 3, 1, 1));
        loop.runAll();
        assertThat(log).containsExactly("first 1 @10.2", "first 2 @10.2", "done 1 @22.2", "done 2 @22.2",
                "first 3 @32.3", "done 3 @32.3");
    }

    @Test
    void priorityScheduling_admitsTheMoreImportantWaitingRequestFirst_tiesByArrival() {
        // as fullBatch_…: 1 and 2 fill both slots until 22.2. Then 3 (priority 0), 4 and 5 (both −2, vLLM's "lower
        // first"), come at 1 and wait. First come, first served would admit 3 and 4 at 22.2; priority scheduling
        // admits 4 and 5 (10 + 0.1·2 = 10.2 → first and only tokens at 32.4), then 3 (10.1 → 42.5).
        EngineSim byPriority = new EngineSim(1, "p", P, PriorityScheduling.LOWER_FIRST, loop, listener, 60_000);
        SimRequest[] rs = {request(1, 1, 1, 2), request(2, 2, 1, 2), request(3, 3, 1, 1), request(4, 4, 1, 1),
                request(5, 5, 1, 1)};
        int[] priority = {0, 0, 0, -2, -2};
        for (int i = 0; i < rs.length; i++) {
            rs[i].enginePriority = priority[i];
            SimRequest r = rs[i];
            loop.at(i < 2 ? 0 : 1, () -> byPriority.arrive(r));
        }
        loop.runAll();
        assertThat(log).containsExactly("first 1 @10.2", "first 2 @10.2", "done 1 @22.2", "done 2 @22.2",
                "first 4 @32.4", "done 4 @32.4", "first 5 @32.4", "done 5 @32.4", "first 3 @42.5", "done 3 @42.5");
    }

    @Test
    void firstComeFirstServed_ignoresThePriorityField() {
        SimRequest late = request(3, 3, 1, 1);
        SimRequest urgent = request(4, 4, 1, 1);
        urgent.enginePriority = -2;
        arriveAt(0, request(1, 1, 1, 2));
        arriveAt(0, request(2, 2, 1, 2));
        arriveAt(1, late);
        arriveAt(1, urgent);
        loop.runAll();
        assertThat(log.subList(4, 8)).containsExactly("first 3 @32.4", "done 3 @32.4", "first 4 @32.4",
                "done 4 @32.4");
    }

    @Test
    void sharedSystemPrompt_leftByOneConversation_isReusedByAnother_andStaysCached() {
        // conversation 1 starts with system prompt 0 (100 tokens) and leaves it here; conversation 2's first turn
        // (the same 100 tokens and 50 of its own) reuses them: it prefills 50 (10 + 5 = 15 ms), first token at 15
        // after its arrival at 100; a third conversation with another system prompt reuses nothing
        SimRequest a = request(1, 1, 150, 1);
        SimRequest b = request(2, 2, 150, 1);
        SimRequest c = request(3, 3, 150, 1);
        for (SimRequest r : new SimRequest[] {a, b}) {
            r.conversation.systemPrompt = 0;
            r.conversation.systemTokens = 100;
        }
        c.conversation.systemPrompt = 1;
        c.conversation.systemTokens = 100;
        arriveAt(0, a);
        arriveAt(100, b);
        arriveAt(200, c);
        loop.runAll();
        assertThat(a.cachedTokens).isZero();
        assertThat(b.cachedTokens).isEqualTo(100);
        assertThat(c.cachedTokens).isZero();
        assertThat(log).contains("first 2 @115.0");
        assertThat(engine.cache.size()).as("three conversations and two system prompts").isEqualTo(5);
    }

    @Test
    void crash_failsRunningAndWaiting_andLosesTheCache() {
        arriveAt(0, request(1, 1, 150, 3));
        arriveAt(0, request(2, 2, 150, 3));
        arriveAt(0, request(3, 3, 150, 3));
        loop.at(25, engine::crash);
        loop.runAll();
        assertThat(log).containsExactlyInAnyOrder("failed 1 @25.0", "failed 2 @25.0", "failed 3 @25.0");
        assertThat(engine.cache.tokens()).isZero();
        assertThat(engine.isUp()).isFalse();
    }

    @Test
    void slowdown_multipliesStepTimes() {
        engine.setSlowdown(2);
        arriveAt(0, request(1, 1, 150, 3));
        loop.runAll();
        assertThat(log).containsExactly("first 1 @70.0", "done 1 @114.0");
    }

    @Test
    void requestLargerThanTheKvCache_fails() {
        EngineSim small = new EngineSim(1, "s", new EngineParams(10, 0.1, 1, 2, 100, 100), loop, listener, 60_000);
        SimRequest r = request(9, 9, 150, 3);
        loop.at(0, () -> small.arrive(r));
        loop.runAll();
        assertThat(log).containsExactly("failed 9 @0.0");
    }

    @Test
    void saturationRps_followsTheClosedForm() {
        // N = 2, n = 3, P = 150: 2·1000 / (3·(10 + 2) + 0.1·150·2) = 2000 / 66
        assertThat(P.saturationRps(150, 3)).isCloseTo(2000.0 / 66, within(1e-9));
    }
}
