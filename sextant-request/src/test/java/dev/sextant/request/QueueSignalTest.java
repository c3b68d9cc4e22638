package dev.sextant.request;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class QueueSignalTest {
    private static final int NONE = Decision.NO_ENGINE_PRIORITY;

    @Test
    void queueing_isARecentTtftBeyondTwiceItsFloorAndTheSlack() {
        QueueSignal s = new QueueSignal();
        assertThat(s.queueing(5)).isFalse(); // nothing seen
        for (int i = 0; i < 50; i++) {
            s.observe(10);
        }
        assertThat(s.ttftFloorMs).isEqualTo(10);
        s.observe(40); // one slow answer: a mean of about ten moves by a tenth of the difference
        assertThat(s.queueing(5)).isFalse();
        for (int i = 0; i < 30; i++) {
            s.observe(40);
        }
        assertThat(s.recentTtftMs).isGreaterThan(2 * 10 + 5);
        assertThat(s.queueing(5)).isTrue();
        assertThat(s.ttftFloorMs).isLessThan(11); // a queue of seconds does not lift the floor
    }

    @Test
    void pace_isTheFloorOverTheFirstTokensAsTheyCome_neverAbove1() {
        QueueSignal s = new QueueSignal();
        assertThat(s.pace()).isEqualTo(1); // nothing seen: no evidence of a slow engine
        for (int i = 0; i < 50; i++) {
            s.observeFirstToken(10);
            s.observe(10);
        }
        assertThat(s.pace()).isEqualTo(1);
        assertThat(s.firstTokensLate(5)).isFalse();
        for (int i = 0; i < 100; i++) {
            s.observeFirstToken(40); // first tokens four times later, their answers still under way
        }
        // about a quarter of the pace, and a queue, before any of those answers ends
        assertThat(s.pace()).isBetween(0.25, 0.26);
        assertThat(s.firstTokensLate(5)).isTrue();
        assertThat(s.queueing(5)).isFalse(); // the answers' mean, which the other judgements read, has not moved
        for (int i = 0; i < 100; i++) {
            s.observe(40); // the answers end: their mean shows the queue too, and the floor creeps up
        }
        assertThat(s.queueing(5)).isTrue();
        assertThat(s.pace()).isBetween(0.25, 0.35);
        s.rescaleFloor(10); // a floor moved above the recent TTFT (the plan prices the engine slower): never above 1
        assertThat(s.pace()).isEqualTo(1);
    }

    @Test
    void pace_isThePlannedDurationOverTheAnswers_onceTheyAreBehindThePlan() {
        QueueSignal s = new QueueSignal();
        for (int i = 0; i < 50; i++) {
            s.observe(10);
            s.observeFirstToken(10);
            s.observeDuration(1.3); // 30% longer than planned: within the estimates' error, not behind
        }
        assertThat(s.behindThePlan()).isFalse();
        assertThat(s.pace()).isEqualTo(1);
        for (int i = 0; i < 100; i++) {
            s.observe(10); // no queue in the first tokens (the floor has caught up with a lasting slow-down)
            s.observeFirstToken(10);
            s.observeDuration(3);
        }
        assertThat(s.behindThePlan()).isTrue();
        assertThat(s.pace()).isBetween(0.33, 0.35);
        s.observeDuration(Double.NaN); // no planned duration: nothing
        s.observeDuration(0);
        assertThat(s.pace()).isBetween(0.33, 0.35);
    }

    @Test
    void aNewSnapshotsExpectedTtft_movesTheFloorsInProportion() {
        EngineCell cell = new EngineCell("e");
        cell.levels(new int[] {-3, 0});
        cell.planned(150);
        for (int i = 0; i < 50; i++) {
            cell.observeTtft(10, -3);
            cell.observeTtft(20, 0);
        }
        cell.planned(450); // the plan prices the engine three times slower
        assertThat(cell.signal(-3).ttftFloorMs).isCloseTo(30, org.assertj.core.data.Offset.offset(1e-9));
        assertThat(cell.signal(0).ttftFloorMs).isCloseTo(60, org.assertj.core.data.Offset.offset(1e-9));
        assertThat(cell.answers.ttftFloorMs).isBetween(30.0, 60.0);
        cell.planned(Double.NaN); // a snapshot without an expected TTFT moves nothing
        cell.planned(450);
        assertThat(cell.signal(-3).ttftFloorMs).isCloseTo(30, org.assertj.core.data.Offset.offset(1e-9));
    }

    @Test
    void anEngineSchedulingByPriority_judgesEachPrioritysQueueFromItsOwnAnswers() {
        EngineCell cell = new EngineCell("e");
        cell.levels(new int[] {-3, 0}); // vLLM's order: the higher class is sent -3, the lower 0
        cell.inFlight.set(1);
        for (int i = 0; i < 50; i++) {
            cell.observeTtft(10, -3);
            cell.observeTtft(10, 0);
        }
        for (int i = 0; i < 40; i++) { // the lower class waits behind a queue; the higher passes it
            cell.observeTtft(100, 0);
            cell.observeTtft(12, -3);
        }
        assertThat(cell.queueing(5, 0)).isTrue();
        assertThat(cell.queueing(5, -3)).isFalse();
        assertThat(cell.queueing(5, NONE)).isTrue(); // every answer: the mean of both
        assertThat(cell.signal(7)).isSameAs(cell.answers); // a priority not sent here: every answer's

        cell.inFlight.set(0); // nobody there to tell: the judgement lapses
        assertThat(cell.queueing(5, 0)).isFalse();
    }

    @Test
    void anEngineFirstComeFirstServed_judgesEveryPriorityFromEveryAnswer() {
        EngineCell cell = new EngineCell("e");
        cell.levels(new int[0]);
        cell.inFlight.set(1);
        for (int i = 0; i < 50; i++) {
            cell.observeTtft(10, NONE);
        }
        for (int i = 0; i < 40; i++) {
            cell.observeTtft(100, NONE);
        }
        assertThat(cell.signal(NONE)).isSameAs(cell.answers);
        assertThat(cell.queueing(5, NONE)).isTrue();
    }

    @Test
    void levels_keepWhatAPriorityStillSentHasShown_andEndEverySpillUnderWay() {
        EngineCell cell = new EngineCell("e");
        cell.levels(new int[] {-3, 0});
        cell.observeTtft(10, 0);
        QueueSignal low = cell.signal(0);
        low.spilling = true;
        cell.answers.spilling = true;
        cell.signal(-3).spilling = true;

        cell.levels(new int[] {0, 5});
        assertThat(cell.signal(0)).isSameAs(low);
        assertThat(low.recentTtftMs).isEqualTo(10);
        assertThat(low.spilling).isFalse();
        assertThat(cell.answers.spilling).isFalse();
        assertThat(cell.signal(5).recentTtftMs).isNaN(); // newly sent: nothing seen yet
        assertThat(cell.signal(-3)).isSameAs(cell.answers); // no longer sent here
    }
}
