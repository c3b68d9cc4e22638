package dev.sextant.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.request.ReuseTimes;
import org.junit.jupiter.api.Test;

/** The prefix cache's capacity for reuse: how much of an engine's prompts it serves at each load. */
class CacheReuseTest {

    /**
     * Reuse times drawn from an exponential distribution of mean {@code mean} s, as counts in the gateways' buckets;
     * four requests in five come back (a fifth are conversations' first requests).
     */
    static ReuseDistribution exponential(double mean) {
        return exponential(mean, 250_000);
    }

    /** The same, with {@code firstSeen} counted for the conversations' first requests against 10⁶ that come back. */
    static ReuseDistribution exponential(double mean, long firstSeen) {
        long[] c = new long[ReuseTimes.BUCKETS];
        double lo = 0;
        for (int i = 0; i < ReuseTimes.BOUNDS_SECONDS.length + 1; i++) {
            double hi = i < ReuseTimes.BOUNDS_SECONDS.length ? ReuseTimes.BOUNDS_SECONDS[i] : Double.POSITIVE_INFINITY;
            c[i] = Math.round(1e6 * (Math.exp(-lo / mean) - Math.exp(-hi / mean)));
            lo = hi;
        }
        c[ReuseTimes.FIRST_SEEN] = firstSeen;
        c[ReuseTimes.REQUESTS] = 1_250;
        ReuseDistribution d = new ReuseDistribution();
        d.add(c);
        return d;
    }

    @Test
    void theDistribution_isReadOffTheBuckets_evenlyOverTheLogarithmOfTheTime() {
        ReuseDistribution d = exponential(10);
        assertThat(d.cdf(0)).isZero();
        assertThat(d.cdf(Double.POSITIVE_INFINITY)).isEqualTo(1);
        // at the bounds the counts are exact: 1 − e^(−t/10)
        assertThat(d.cdf(8)).isCloseTo(1 - Math.exp(-0.8), within(1e-5));
        assertThat(d.cdf(16)).isCloseTo(1 - Math.exp(-1.6), within(1e-5));
        assertThat(d.cdf(11)).isBetween(d.cdf(8), d.cdf(16));
        assertThat(d.median()).isCloseTo(10 * Math.log(2), within(0.3));
        assertThat(d.requests()).isEqualTo(1_250);
        d.decay(0.5);
        assertThat(d.requests()).isEqualTo(625);
        assertThat(d.cdf(8)).as("forgetting keeps the shape").isCloseTo(1 - Math.exp(-0.8), within(1e-5));
    }

    /**
     * ∫₀ᵗ (1 − r·G) for r = 0.8 and G exponential of mean 10 s: 0.2·t + 8·(1 − e^(−t/10)). The buckets spread their
     * counts evenly over the logarithm of the time, not as the exponential does, so within a bucket the two differ a
     * little.
     */
    @Test
    void theTimeAContextStaysItsConversationsLatest_countsAConversationThatComesBackOnce() {
        ReuseDistribution d = exponential(10);
        assertThat(d.returning()).isCloseTo(0.8, within(1e-9));
        for (double t : new double[] {0.1, 1, 5, 10, 30, 100, 1_000}) {
            double exact = 0.2 * t + 8 * (1 - Math.exp(-t / 10));
            assertThat(d.occupancy(t)).as("at %s s", t).isCloseTo(exact, within(0.02 * exact));
            assertThat(d.keptFor(d.occupancy(t))).as("the inverse at %s s", t).isCloseTo(t, within(1e-6 * t));
        }
        ReuseDistribution allBack = exponential(10, 0);
        assertThat(allBack.occupancy(1_000)).as("every conversation back: the mean time (log-even buckets: +4%)")
                .isCloseTo(10, within(0.5));
        assertThat(allBack.keptFor(12)).as("room for more than every context: all kept").isInfinite();
        ReuseDistribution noneBack = new ReuseDistribution();
        long[] firstOnly = new long[ReuseTimes.BUCKETS];
        firstOnly[ReuseTimes.FIRST_SEEN] = 1_000;
        noneBack.add(firstOnly);
        assertThat(noneBack.keptFor(9.5)).as("no conversation back: every context held until evicted")
                .isCloseTo(9.5, within(1e-6));
    }

    /**
     * 600k tokens of KV, contexts of 1,000 tokens, the batch holding 0.5 s of each request per req/s: at 60 req/s the
     * cache has room for (600k − 30 × 1,000) / (60 × 1,000) = 9.5 s of contexts, and a context stays the T at which
     * 0.2·T + 8·(1 − e^(−T/10)) = 9.5 (about 15.8 s: the conversations that come back sooner are held once); the
     * uncached prompt grows with the load.
     */
    @Test
    void theUncachedPrompt_growsWithTheLoad_fromWhatACacheWithoutLimitLeaves_toTheWholePrompt() {
        CacheReuse c = new CacheReuse(900, 800, 600_000, 1_000, 0.5, 64, exponential(10), 1);
        double lo = 0;
        double hi = 100;
        for (int i = 0; i < 100; i++) {
            double mid = 0.5 * (lo + hi);
            if (0.2 * mid + 8 * (1 - Math.exp(-mid / 10)) < 9.5) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        assertThat(c.keptSeconds(60)).isCloseTo(lo, within(0.01 * lo));
        assertThat(c.uncached(0)).as("no load: every reusable token served").isCloseTo(100, within(1e-9));
        double last = 0;
        for (double x = 1; x <= 2_000; x *= 1.5) {
            double p = c.uncached(x);
            assertThat(p).as("at %s req/s", x).isGreaterThanOrEqualTo(last).isLessThanOrEqualTo(900);
            last = p;
        }
        assertThat(c.uncached(1e9)).as("no room left: next to nothing served").isCloseTo(900, within(1e-3));
    }

    /** A law whose prompts depend on the load: slower to the first token and saturating sooner than at a fixed prompt. */
    @Test
    void anEngineWhoseCacheKeepsLessUnderLoad_isPricedSlowerAboveThePresentLoad_andFasterBelow() {
        Batching fixed = new Batching(5, 0.03, 0.006 / 1000, 1, 0.006, 1, 64, 100, 500);
        CacheReuse cache = new CacheReuse(1_000, 900, 600_000, 1_100, fixed.residence(60) / 1000, 64, exponential(10),
                1);
        // pin the model to the observed 500 uncached tokens at 60 req/s, as GroupModel does
        double share = cache.reuse().cdf(cache.keptSeconds(60));
        CacheReuse pinned = new CacheReuse(1_000, 500 / share, 600_000, 1_100, cache.busyPerRps(), 64, cache.reuse(),
                1);
        Batching withCache = fixed.withCache(pinned);
        assertThat(withCache.prompt(60)).isCloseTo(500, within(1e-6));
        assertThat(withCache.ttft(60)).isCloseTo(fixed.ttft(60), within(1e-6));
        assertThat(withCache.ttft(70)).isGreaterThan(fixed.ttft(70));
        assertThat(withCache.ttft(20)).isLessThan(fixed.ttft(20));
        assertThat(withCache.saturation()).isLessThan(fixed.saturation());
        double limit = withCache.computeLimit();
        assertThat(limit * withCache.beta() * withCache.prompt(limit)).as("prefill alone fills the engine there")
                .isCloseTo(1, within(1e-6));
    }

    /** The explanation says how long a context stays, or that the cache has room for every conversation. */
    @Test
    void theExplanation_namesTheTimeAContextStays_orRoomForEveryConversation() {
        CacheReuse small = new CacheReuse(900, 800, 600_000, 1_000, 0.5, 64, exponential(10), 1);
        assertThat(DefaultControlLoop.cacheWhy(small, 60, 100)).contains("at 60.0 req/s")
                .containsPattern("a context kept 1[56]\\.\\d s; conversations back after 6\\.\\d s, median");
        CacheReuse roomy = new CacheReuse(900, 800, 600_000_000, 1_000, 0.5, 64, exponential(10, 0), 1);
        assertThat(DefaultControlLoop.cacheWhy(roomy, 60, 100)).contains("room for every conversation between its "
                + "requests").doesNotContain("Infinity");
    }
}
