package dev.sextant.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.request.ReuseTimes;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Scale;

/**
 * How long a context stays its conversation's latest, on any counts the gateways may report: the occupancy grows
 * with the time, never faster than the time itself nor slower than the share that never comes back, and
 * {@link ReuseDistribution#keptFor} inverts it.
 */
class ReuseDistributionProperties {

    /** Random counts in random buckets (some empty), first requests included. */
    private static ReuseDistribution random(long seed) {
        SplittableRandom rng = new SplittableRandom(seed);
        long[] c = new long[ReuseTimes.BUCKETS];
        for (int i = 0; i < ReuseTimes.FIRST_SEEN; i++) {
            c[i] = rng.nextDouble() < 0.4 ? 0 : rng.nextLong(1, 1_000_000);
        }
        c[ReuseTimes.FIRST_SEEN] = rng.nextDouble() < 0.2 ? 0 : rng.nextLong(1, 3_000_000);
        c[ReuseTimes.REQUESTS] = 1_000;
        ReuseDistribution d = new ReuseDistribution();
        d.add(c);
        return d;
    }

    @Property(tries = 2_000)
    void theOccupancy_growsWithTheTime_andKeptForInvertsIt(@ForAll @LongRange(min = 1, max = 1_000_000_000) long seed,
                                                          @ForAll @DoubleRange(min = 0.01, max = 20_000) double t) {
        ReuseDistribution d = random(seed);
        double r = d.returning();
        double o = d.occupancy(t);
        assertThat(o).isBetween((1 - r) * t - 1e-9 * t, t + 1e-9 * t);
        assertThat(d.occupancy(1.5 * t)).as("not falling (to rounding)").isGreaterThanOrEqualTo(o - 1e-9 * o);
        double back = d.keptFor(o);
        if (r < 1) {
            assertThat(back).isCloseTo(t, within(1e-6 * t + 1e-9));
        } else if (Double.isInfinite(back)) {
            // every conversation back by t: the occupancy has reached its end, and the cache holds them all
            assertThat(d.occupancy(back)).isFinite().isCloseTo(o, within(1e-9 * Math.max(1, o)));
        } else {
            // where the occupancy is flat, any t of the flat stretch is an answer
            assertThat(d.occupancy(back)).isCloseTo(o, within(1e-9 * Math.max(1, o)));
        }
    }

    /** The quantile inverts the cdf: the least time at which the share p of the times is reached. */
    @Property(tries = 2_000)
    void theQuantile_invertsTheCdf(@ForAll @LongRange(min = 1, max = 1_000_000_000) long seed,
                                   @ForAll @DoubleRange(min = 0.001, max = 1) @Scale(6) double p) {
        ReuseDistribution d = random(seed);
        double t = d.quantile(p);
        double[] bounds = ReuseTimes.BOUNDS_SECONDS;
        if (Double.isInfinite(t)) {
            assertThat(d.cdf(bounds[bounds.length - 1])).isLessThan(p);
        } else {
            assertThat(d.cdf(t)).isCloseTo(p, within(1e-9));
            assertThat(d.cdf(t * (1 - 1e-6))).as("not reached before").isLessThan(p + 1e-9);
        }
    }
}
