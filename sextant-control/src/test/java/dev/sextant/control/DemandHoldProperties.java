package dev.sextant.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.topology.Topology;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;

/**
 * The hold of a recent peak of demand, on any history the gateways may report: what the loop plans for is never below
 * what the reports show nor above the most they showed lately, and once a level has lasted the hold and a demand
 * window, the plan is that level, whatever came before (docs/control-loop.md, "Demand").
 */
class DemandHoldProperties {

    private static final int REPORT_S = 5;

    @Property(tries = 200)
    void theHeldDemand_liesBetweenThePresentAndTheRecentMost_andEndsAfterTheHold(
            @ForAll @LongRange(min = 1, max = 1_000_000_000) long seed,
            @ForAll @IntRange(min = 0, max = 400) int finalRate) {
        Topology t = Fleets.oneCluster(2, 500, 100);
        ManualTicker ticker = new ManualTicker();
        ControlOptions options = ControlOptions.defaults();
        ControlLoop loop = ControlLoop.create(t, options, ticker, null);
        SplittableRandom rng = new SplittableRandom(seed);
        long holdAndWindow = options.demandHold().toSeconds() + options.demandWindow().toSeconds();
        // the rates of the reports of the hold and window before each one: what a held estimate may reach
        ArrayDeque<long[]> recent = new ArrayDeque<>();
        int segments = 1 + rng.nextInt(20);
        for (int s = 0; s < segments; s++) {
            long rate = rng.nextInt(401);
            int reports = 1 + rng.nextInt(12);
            for (int k = 0; k < reports; k++) {
                report(loop, ticker, rate, recent, holdAndWindow);
                DemandEstimate e = loop.estimates().demand().get("gw").get("chat");
                if (Double.isNaN(e.standardError()) || e.why().startsWith("configured")) {
                    continue; // the topology's demand, while the reports settle: the floor's rule, not the hold's
                }
                double most = recent.stream().mapToLong(r -> r[1]).max().orElse(0);
                assertThat(e.rps()).as("not below what the reports show").isGreaterThanOrEqualTo(e.reportedRps());
                // an estimate averages exact counts here, and its trend continues to the newest report: a little
                // beyond the most of its reports at most
                assertThat(e.rps()).as("not above the recent most").isLessThanOrEqualTo(1.5 * most + 1);
            }
        }
        for (long k = 0; k < (holdAndWindow + 30) / REPORT_S; k++) {
            report(loop, ticker, finalRate, recent, holdAndWindow);
        }
        DemandEstimate e = loop.estimates().demand().get("gw").get("chat");
        assertThat(e.floored()).as(e.why()).isFalse();
        assertThat(e.rps()).isEqualTo(e.reportedRps());
        assertThat(e.rps()).isCloseTo(finalRate, within(0.01 * finalRate + 1e-9));
    }

    /** One 5-s report of exactly {@code rate} req/s, remembered with its time in {@code recent}. */
    private static void report(ControlLoop loop, ManualTicker ticker, long rate, ArrayDeque<long[]> recent,
                               long keepSeconds) {
        ticker.advanceSeconds(REPORT_S);
        long now = ticker.nanos();
        loop.observe(new GatewayReport("gw", "", now, REPORT_S, Map.of("chat", REPORT_S * rate), Map.of(), Map.of(),
                Map.of(), null));
        recent.addLast(new long[] {now, rate});
        while (recent.peekFirst()[0] < now - keepSeconds * 1_000_000_000L - 1) {
            recent.pollFirst();
        }
    }
}
