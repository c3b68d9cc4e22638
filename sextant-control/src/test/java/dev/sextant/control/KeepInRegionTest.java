package dev.sextant.control;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.policy.HeldRouting;
import dev.sextant.policy.Policies;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * While nothing is shed, a gateway cluster's requests leave its region only for a gain above the publication
 * threshold (docs/control-loop.md, "Requests stay in their region"). {@link Fleets#oneCluster}: a gateway 2 ms from
 * four engines of its region and 40 ms from four alike in another.
 */
class KeepInRegionTest {
    private static final double CAPACITY = 40;

    private static Step firstStep(Topology t, boolean keep) {
        return ControlLoop.create(t, ControlOptions.defaults().withKeepInRegion(keep), () -> 0L, null).step();
    }

    /** The share of the gateway's requests that {@code s} sends to the other region. */
    private static double away(Snapshot s) {
        Route r = s.route("gw", "chat");
        return r.weights().entrySet().stream().filter(e -> e.getKey().startsWith("f"))
                .mapToDouble(Map.Entry::getValue).sum();
    }

    @Test
    void aSpillThatGainsLessThanTheThreshold_isNotMade_andTheReasonSaysWhy() {
        ControlOptions o = ControlOptions.defaults();
        List<Double> keptHome = new ArrayList<>();
        for (double load = 0.1; load <= 0.85; load += 0.05) {
            Topology t = Fleets.oneCluster(4, CAPACITY, load * 4 * CAPACITY);
            Step free = firstStep(t, false);
            Step kept = firstStep(t, true);
            double awayFree = away(free.snapshot());
            double awayKept = away(kept.snapshot());
            if (awayKept == awayFree) {
                assertThat(kept.reason()).doesNotContain("kept in region");
                continue;
            }
            // the rule's plan stays home, costs no more than the threshold per request, and is honest about it
            assertThat(awayKept).as("share sent away at %.0f%% load", 100 * load).isZero();
            HeldRouting home = Policies.evaluate(t, kept.snapshot());
            HeldRouting best = Policies.evaluate(t, free.snapshot());
            double threshold = Math.max(o.publishGainMs(), o.publishGain() * best.meanLatencyMs());
            assertThat(home.meanLatencyMs() - best.meanLatencyMs()).isLessThanOrEqualTo(threshold + 1e-9);
            assertThat(kept.reason()).contains("kept in region: sending requests out of their region would gain");
            assertThat(kept.snapshot().networkRttMs()).isEqualTo(t.networkRttMs());
            assertThat(kept.snapshot().objective().latencyCost()).isGreaterThanOrEqualTo(
                    kept.snapshot().objective().lowerBound());
            assertThat(kept.snapshot().objective().meanLatencyMs()).isCloseTo(home.meanLatencyMs(),
                    org.assertj.core.data.Offset.offset(1e-6));
            keptHome.add(load);
        }
        assertThat(keptHome).as("loads at which the unrestricted plan spilled for a gain below the threshold")
                .isNotEmpty();
    }

    @Test
    void moreThanTheRegionCarries_stillGoesToTheOtherRegion_andNothingIsShed() {
        Topology t = Fleets.oneCluster(4, CAPACITY, 1.3 * 4 * CAPACITY);
        Step kept = firstStep(t, true);
        assertThat(away(kept.snapshot())).isGreaterThan(0.2);
        assertThat(kept.snapshot().objective().shedRps()).isZero();
        assertThat(kept.reason()).doesNotContain("kept in region");
    }

    @Test
    void aLargeGainFromTheOtherRegion_isTaken() {
        // the gateway's engines at 80% of what they carry: the far ones' emptier batches decode faster by more than
        // the threshold, so the rule leaves the optimum as it is
        Topology t = Fleets.oneCluster(4, CAPACITY, 0.8 * 4 * CAPACITY * 1.1);
        Step free = firstStep(t, false);
        Step kept = firstStep(t, true);
        assertThat(away(free.snapshot())).isGreaterThan(0);
        assertThat(away(kept.snapshot())).isEqualTo(away(free.snapshot()));
    }
}
