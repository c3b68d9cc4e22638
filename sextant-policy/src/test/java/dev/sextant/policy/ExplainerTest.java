package dev.sextant.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What {@code explain} says of the engines a class uses. */
class ExplainerTest {

    private static Explanation eastChat(double gapTolerance) {
        Topology t = Topologies.talk();
        Snapshot s = Policies.optimal().solve(t, SolveOptions.defaults().withGapTolerance(gapTolerance));
        return Explainer.explain(t, s, "east", "chat");
    }

    @Test
    void engineInUse_atTheDefaultGap_hasTheClassPriceAsItsMarginalCost() {
        Explanation e = eastChat(SolveOptions.DEFAULT_GAP_TOLERANCE);
        assertThat(e.engines()).hasSize(2).allSatisfy(line -> {
            assertThat(line.weight()).isPositive();
            assertThat(line.marginalCostMs()).isCloseTo(e.priceMs(), within(0.5));
            assertThat(line.reason()).isEqualTo("in use: its marginal cost equals the class price");
        });
    }

    /** At gap 1e-3 the talk example's two engines end ~1,900 ms apart: each line says how far from the price. */
    @Test
    void engineInUse_atALooseGap_saysHowFarItsMarginalCostIsFromTheClassPrice() {
        List<Explanation.EngineLine> lines = eastChat(1e-3).engines();
        assertThat(lines).hasSize(2);
        assertThat(lines).anySatisfy(line -> assertThat(line.reason())
                .matches("in use: its marginal cost is \\d+\\.\\d ms below the class price \\(as near as the solve's "
                        + "gap tolerance asked\\)"));
        assertThat(lines).anySatisfy(line -> assertThat(line.reason()).contains(" ms above the class price"));
    }

    /** An engine premium leaves to chat at the same price says so, not that it is farther than needed. */
    @Test
    void engineLeftToALowerPriority_saysSo() {
        Topology t = Topologies.talkWithPremium();
        Snapshot s = Policies.optimal().solve(t, SolveOptions.defaults());
        Explanation premium = Explainer.explain(t, s, "east", "premium");
        assertThat(premium.engines()).anySatisfy(line -> {
            assertThat(line.engine()).isEqualTo("west-1");
            assertThat(line.weight()).isZero();
            assertThat(line.reason()).isEqualTo("at the class price, and left to lower priorities of this gateway "
                    + "cluster: chat (priority 0) (higher priorities get the engines that answer first)");
        });
    }

    /** An engine with no effective capacity has no utilization: its text says "-" (the JSON says null), not NaN%. */
    @Test
    void toText_engineOutOfService_showsNoUtilization() {
        Topology talk = Topologies.talk();
        Topology t = talk.withEngines(talk.engines().stream().map(e -> e.withHealth(0)).toList());
        Snapshot s = Policies.optimal().solve(t, SolveOptions.defaults());
        String text = Explainer.toText(Explainer.explain(t, s, "east", "chat"));
        assertThat(text).contains("out of service").doesNotContain("NaN").containsPattern("east-1 .* - +0  out of service");
    }
}
