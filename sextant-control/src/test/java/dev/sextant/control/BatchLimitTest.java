package dev.sextant.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

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

    /**
     * The topology states 48 places: exploring, which raises a binding engine's estimate by its margin past the batch
     * that ran, stops there. A batch larger than the topology says that runs refutes the file (older than the server's
     * flags), and the evidence stands.
     */
    @Test
    void theTopologysBatchLimit_isACeiling_onExploring_untilALargerBatchRuns() {
        BatchLimit stated = new BatchLimit(48);
        BatchLimit unstated = new BatchLimit();
        for (BatchLimit b : new BatchLimit[] {stated, unstated}) {
            b.sample(noWait(44, 300, 5), 0.05, 0, 700);
            b.probe(true, 1, 40, 0.15);
        }

        assertThat(unstated.slots(40)).as("what ran, then explored 15% past it").isCloseTo(50.6, within(1e-9));
        assertThat(stated.slots(40)).isEqualTo(48);
        assertThat(stated.why(40, 0.15)).contains("the topology's max_num_seqs");

        stated.sample(noWait(60, 420, 10), 0.05, 0, 700);
        assertThat(stated.slots(40)).as("a batch of 60 ran").isEqualTo(60);
        assertThat(stated.why(40, 0.15)).doesNotContain("max_num_seqs");
    }

    /**
     * Long requests (3.2 s each) that all started together, a burst of long answers, keep a full batch and a queue
     * while none of them finishes: intervals with a backlog and no completion measure no throughput. Taken as a rate
     * of 0 it lowered the engine's saturation to nothing, and the control loop's step failed for the whole fleet.
     * Counted from a residence into the backlog, the completions measure the rate the engine serves.
     */
    @Test
    void aBacklogWhileNothingFinishes_measuresNoThroughputYet_thenTheRateServed() {
        BatchLimit b = new BatchLimit();
        for (int t = 1; t <= 3; t++) {
            b.sample(backlogged(0, t), 0.01, 0, 3_200);
        }
        assertThat(b.servedRps()).as("no throughput measured from no completion").isNaN();
        assertThat(b.servedSaturation(40)).isEqualTo(40);

        for (int t = 4; t <= 12; t++) {
            b.sample(backlogged(20, t), 0.01, 0, 3_200);
        }
        assertThat(b.servedRps()).as("20 a second, from a residence into the backlog").isCloseTo(20, within(1e-9));
        assertThat(b.servedSaturation(40)).isGreaterThan(20).isLessThan(25);
    }

    /** One second with a full batch of 64 and 200 waiting at both ends, {@code completions} finished. */
    private static Interval backlogged(double completions, long atSeconds) {
        return new Interval(atSeconds * 1_000_000_000L, 1, completions, completions * 400, Double.NaN, Double.NaN,
                Double.NaN, 0, 8, 64 * 125, Double.NaN, 64, 64, 200, 200, Double.NaN, Double.NaN);
    }
}
