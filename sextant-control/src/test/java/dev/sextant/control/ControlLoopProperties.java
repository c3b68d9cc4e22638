package dev.sextant.control;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.snapshot.Route;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;

/** What must hold whatever the seed, the truth and the delay of the signals. */
class ControlLoopProperties {

    /**
     * Under constant truth, with Poisson arrivals and noisy latencies reaching the loop late, the published weights
     * converge and stay put: after the first minutes, at most one more publication in ten minutes, and the weights of
     * the last quarter hour move less than 5% in total.
     */
    @Property(tries = 40)
    void constantTruth_weightsConvergeAndStayPut(@ForAll @LongRange(min = 1, max = 1_000_000) long seed,
                                                 @ForAll @IntRange(min = 0, max = 2) int delayScrapes,
                                                 @ForAll @DoubleRange(min = 100, max = 250) double demand) {
        Map<String, Batching> t = ControlLoopTest.truths(Map.of());
        DelayedRig r = new DelayedRig(ControlLoopTest.fleet(t, Map.of(), demand), t, seed, delayScrapes);
        r.run(300);
        Map<String, Double> settledWeights = r.rig.loop.published().route("gw", "chat").weights();
        int settled = r.rig.steps.size();
        r.run(600);

        assertThat(r.rig.publicationsSince(settled)).isLessThanOrEqualTo(1);
        Route now = r.rig.loop.published().route("gw", "chat");
        double moved = 0;
        for (String e : t.keySet()) {
            moved += Math.abs(now.weights().getOrDefault(e, 0.0) - settledWeights.getOrDefault(e, 0.0));
        }
        assertThat(moved).isLessThan(0.05);
    }

    /**
     * Estimates stay within bounds of the truth: an engine whose true batch and speed differ from the configuration
     * by up to a factor of two either way, loaded past its saturation at times, is estimated within 15% of its true
     * saturation after fifteen minutes.
     */
    @Property(tries = 40)
    void wrongRating_capacityEndsWithinFifteenPercentOfTheTruth(
            @ForAll @LongRange(min = 1, max = 1_000_000) long seed,
            @ForAll @DoubleRange(min = 0.5, max = 2.0) double slotFactor,
            @ForAll @DoubleRange(min = 0.7, max = 1.5) double speedFactor) {
        Batching truth = ControlLoopTest.H100.withSlots(Math.round(64 * slotFactor)).slower(speedFactor);
        Map<String, Batching> t = new LinkedHashMap<>();
        for (String id : List.of("e1", "e2", "e3", "e4")) {
            t.put(id, truth);
        }
        // no other engine to send it to, and 1.2 times what the engines can carry: they show where their limit is
        Rig r = new Rig(ControlLoopTest.fleet(t, Map.of(), 4 * 1.2 * truth.saturation()), t, seed);
        r.run(900);

        double mu = truth.saturation();
        assertThat(r.estimate("e1").capacityRps()).as("truth %.1f", mu).isBetween(0.85 * mu, 1.15 * mu);
    }

    /** The loop's observations reach it {@code delay} scrape intervals late, as the simulator's signal delay does. */
    static final class DelayedRig {
        final Rig rig;
        DelayedRig(dev.sextant.topology.Topology t, Map<String, Batching> truths, long seed, int delay) {
            this.rig = new Rig(t, truths, seed);
            this.rig.signalDelayIntervals = delay;
        }

        void run(double seconds) {
            rig.run(seconds);
        }
    }
}
