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

    /**
     * Intervals of an engine at 40 req/s with prompts of 1,000 tokens of which 700 are cached, outputs of 100, 20
     * sequences running at 5% of its KV cache (so 20 × 1,100 / 0.05 = 440k tokens): with conversations coming back
     * after about 10 s, the cache model serves the observed 700 at 40 req/s, more below, less above.
     */
    @Test
    void thePrefixCache_isModelledFromTheEnginesHitsAndKv_andTheGatewaysReuseTimes() {
        Engine config = Fleets.oneCluster(1, 100, 50).engines().get(0);
        GroupModel g = new GroupModel(GroupModel.key(config), config, Fleets.OUTPUT_TOKENS, ControlOptions.defaults());
        long now = 0;
        for (int k = 0; k < 60; k++) {
            now += 5_000_000_000L;
            g.sample(new Interval(now, 5, 200, 200 * 100, 200 * 1_000, 200 * 700, 20, 200, 8, 200 * 99, 0, 20, 20,
                    0, 0, 0.05, Double.NaN), 1, 64);
        }
        Batching law = g.fitted(now);
        assertThat(g.kvCapacityTokens()).isCloseTo(440_000, within(1.0));
        assertThat(g.memberLoad()).isCloseTo(40, within(1e-9));
        assertThat(g.cacheReuse(law, null)).as("no reuse times counted").isNull();

        CacheReuse c = g.cacheReuse(law, CacheReuseTest.exponential(10));
        assertThat(c).isNotNull();
        assertThat(c.uncached(40)).as("what the engine shows at its load").isCloseTo(300, within(1e-6));
        assertThat(c.uncached(20)).isLessThan(300);
        assertThat(c.uncached(60)).isGreaterThan(300);

        assertThat(g.cacheReuse(law, CacheReuseTest.exponential(200)))
                .as("conversations back after minutes: the cache keeps less than half of them, too full to read")
                .isNull();

        // how long a context stays, for the gateways: the priced model where there is one; else Che's time alone,
        // which needs no hits, and shortens as the load rises
        assertThat(g.keeping(c, law, CacheReuseTest.exponential(10))).isSameAs(c);
        CacheReuse kept = g.keeping(null, law, CacheReuseTest.exponential(200));
        assertThat(kept).isNotNull();
        assertThat(kept.keptSeconds(40)).isPositive().isFinite();
        assertThat(kept.keptSeconds(60)).isLessThan(kept.keptSeconds(40));
        assertThat(kept.keptSeconds(20)).isGreaterThan(kept.keptSeconds(40));
        assertThat(g.keeping(null, law, null)).as("no reuse times counted").isNull();
    }

    /**
     * An engine that states its KV capacity (vLLM's cache_config_info) is taken at its word from its first scrape: the
     * reading off its intervals (running sequences over the KV fraction they hold) is a fallback, and reads high where
     * a sequence holds less than its whole context.
     */
    @Test
    void aStatedKvCapacity_replacesTheReadingOffIntervals() {
        Engine config = Fleets.oneCluster(1, 100, 50).engines().get(0);
        GroupModel g = new GroupModel(GroupModel.key(config), config, Fleets.OUTPUT_TOKENS, ControlOptions.defaults());
        assertThat(g.kvCapacityTokens()).as("nothing stated or read").isNaN();
        g.kvStated(Double.NaN);
        assertThat(g.kvCapacityTokens()).isNaN();
        g.kvStated(400_000);
        assertThat(g.kvCapacityTokens()).as("stated at the first scrape").isEqualTo(400_000);
        long now = 0;
        for (int k = 0; k < 12; k++) {
            now += 5_000_000_000L;
            g.sample(new Interval(now, 5, 200, 200 * 100, 200 * 1_000, 200 * 700, 20, 200, 8, 200 * 99, 0, 20, 20,
                    0, 0, 0.05, Double.NaN), 1, 64);
        }
        assertThat(g.kvCapacityTokens()).as("intervals that read 440k").isEqualTo(400_000);
        g.kvStated(Double.NaN);
        assertThat(g.kvCapacityTokens()).as("a scrape that says nothing keeps the statement").isEqualTo(400_000);
    }
}
