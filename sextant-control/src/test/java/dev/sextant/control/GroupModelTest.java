package dev.sextant.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.topology.Engine;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** What a group's step law learns from its engines' intervals. */
class GroupModelTest {

    /**
     * A small batch at light load, as the 8-sequence engines of a fleet see it: the gauge of running sequences, read at
     * the two ends of each interval, strays from the interval's mean batch by about its square root. Regressed on
     * that gauge the law's slope flattens (errors in variables) and a full batch is predicted too fast, so the
     * capacity comes out high; regressed on the mean batch the token gaps imply (Little's law), it does not.
     */
    @Test
    void stepLaw_fromIntervalsWhoseBatchGaugeIsNoisy_isNotFlattened() {
        double alpha = 12;
        double gamma = 1.5;
        Engine config = Fleets.oneCluster(1, 100, 50).engines().get(0);
        // a prior worth one interval: the evidence alone decides
        ControlOptions o = ControlOptions.defaults().withPriorWeight(1);
        GroupModel g = new GroupModel(GroupModel.key(config), config, Fleets.OUTPUT_TOKENS, o);
        SplittableRandom rng = new SplittableRandom(7);
        long now = 0;
        for (int k = 0; k < 240; k++) {
            double batch = 0.5 + 7.5 * rng.nextDouble(); // the interval's mean batch
            double tbt = alpha + gamma * Batching.tokenBatch(batch, 8); // per token: the batch a token sees
            double seconds = 5;
            double gaps = batch * seconds * 1000 / tbt;
            double noise = Math.sqrt(batch);
            double start = Math.max(0, Math.round(batch + noise * rng.nextGaussian()));
            double end = Math.max(0, Math.round(batch + noise * rng.nextGaussian()));
            now += 5_000_000_000L;
            g.sample(new Interval(now, seconds, gaps / 249, gaps + gaps / 249, Double.NaN, Double.NaN, Double.NaN, 0,
                    tbt, gaps, Double.NaN, start, end, 0, 0, Double.NaN, Double.NaN), 1, 8);
        }
        Batching law = g.fitted(now);
        assertThat(law.stepTime(8, 0)).as("a full batch of 8").isCloseTo(alpha + 8 * gamma, within(0.02 * 24));
        assertThat(law.stepTime(1, 0)).as("one sequence").isCloseTo(alpha + gamma, within(0.03 * 13.5));
    }
}
