package dev.sextant.server.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.netty.channel.embedded.EmbeddedChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The step model on an event loop whose time the test moves: exact times, no wall clock. */
class BatchSchedulerTest {
    /** Steps of 2 ms plus 1 ms per prefilled token. */
    private static final EngineConfig CONFIG = EngineConfig.defaults("e", "m").withLatency(8, 1, 2, 0);

    private final EmbeddedChannel loop = new EmbeddedChannel();
    private final BatchScheduler scheduler;
    private final List<String> finished = new ArrayList<>();
    private final List<Sequence.Timing> timings = new ArrayList<>();

    BatchSchedulerTest() {
        loop.freezeTime();
        // the scheduler's clock is the loop's, which only the test moves
        scheduler = new BatchScheduler(CONFIG, loop.eventLoop(), () -> loop.eventLoop().ticker().nanoTime(),
                () -> Faults.NONE, "m");
    }

    @AfterEach
    void close() {
        loop.finishAndReleaseAll();
    }

    private void advanceMs(long ms) {
        loop.advanceTimeBy(ms, TimeUnit.MILLISECONDS);
        loop.runPendingTasks();
    }

    private Sequence sequence(String name, int promptTokens) {
        Sequence.Sink sink = new Sequence.Sink() {
            @Override
            public boolean writable() {
                return true;
            }

            @Override
            public void token(Sequence sequence, int index) {
            }

            @Override
            public void finished(Sequence sequence, String reason) {
                finished.add(name);
                timings.add(sequence.timing());
            }

            @Override
            public void crashed(Sequence sequence) {
            }
        };
        return new Sequence(name, promptTokens, 1, true, -1, sink, loop.eventLoop().ticker().nanoTime(), 0, 0);
    }

    @Test
    void aSequenceWhosePrefillIsCut_endsItsStepThen_andTheQueueMovesOn() {
        Sequence longPrompt = sequence("long", 1000);
        scheduler.submit(longPrompt);
        loop.runPendingTasks(); // a step of 2 + 1000 ms
        scheduler.submit(sequence("next", 1)); // waits for the next step

        advanceMs(100);
        scheduler.cancel(longPrompt);
        loop.runPendingTasks();
        advanceMs(1);
        assertThat(scheduler.meters().scrape()).as("the step ended once its client left: its prefill stopped")
                .contains("vllm:request_success_total{engine=\"0\",finished_reason=\"abort\",model_name=\"m\"} 1.0");
        advanceMs(3); // the next step: 2 + 1 ms

        assertThat(finished).containsExactly("next");
        assertThat(timings.get(0).ttftMs()).as("queued until the cut step ended, at 101 ms as the test moves time, then its own step")
                .isCloseTo(101 + 3, within(1e-3));
    }

    @Test
    void withoutACancel_theStepLastsItsWholePrefill() {
        scheduler.submit(sequence("long", 1000));
        loop.runPendingTasks();

        advanceMs(1001);
        assertThat(finished).isEmpty();
        advanceMs(1);
        assertThat(finished).containsExactly("long");
        assertThat(timings.get(0).ttftMs()).isEqualTo(2 + 1000);
    }
}
