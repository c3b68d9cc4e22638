package dev.sextant.control;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** What one engine's intervals say about how many requests its batch holds. */
class BatchLimitTest {
    /**
     * Five seconds in which {@code running} requests ran on average, {@code completions} finished and none waited
     * before admission (vLLM's queue-time histogram at zero), with steps of 6.5 ms.
     */
    private static Interval noWait(double running, double completions, long atSeconds) {
        return new Interval(atSeconds * 1_000_000_000L, 5, completions, completions * 100, Double.NaN, Double.NaN,
                30, completions, 6.5, completions * 100, 0, running, running, 0, 0, Double.NaN, Double.NaN);
    }

    @Test
    void noWaitAtALoad_provesTheBatchThatRan_notThePlacesAPoissonQueueWouldNeed() {
        BatchLimit b = new BatchLimit();
        for (int t = 1; t <= 5; t++) {
            // 50 running, 350 finished in 5 s, none waited: a Poisson queue with 50 places busy would have made some
            // of them wait unless it had well over 50; smoother arrivals (chats that wait for their answers) do not
            b.sample(noWait(50, 350, 5L * t), 0.05, 0, 700);
        }

        assertThat(b.slots(40)).as("what ran, no more").isEqualTo(50);
        assertThat(b.fromEvidence(40)).isTrue();
        assertThat(b.why(40, 0.1)).contains("50");
    }

    @Test
    void aLargerBatchThatRan_raisesItAgain() {
        BatchLimit b = new BatchLimit();
        b.sample(noWait(50, 350, 5), 0.05, 0, 700);
        b.sample(noWait(60, 420, 10), 0.05, 0, 700);

        assertThat(b.slots(40)).isEqualTo(60);
    }
}
