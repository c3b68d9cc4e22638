package dev.sextant.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Engine;
import dev.sextant.topology.EngineCluster;
import dev.sextant.topology.GatewayCluster;
import dev.sextant.topology.Model;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * While the fleet is short, the engines the policy fills are planned no fuller than where their TTFT reaches
 * {@link ControlOptions#overloadTtftFactor()} times idle, the shed falling on the lower priority; never at the cost of
 * shedding the highest priority.
 */
class OverloadPlanTest {
    private static final double FACTOR = ControlOptions.defaults().overloadTtftFactor();

    /** Four h100-like engines at one gateway; a premium (priority 1) and a batch (0) class at the given demands. */
    private static Topology fleet(double premiumRps, double batchRps) {
        List<Engine> es = new ArrayList<>();
        for (int i = 1; i <= 4; i++) {
            es.add(Rig.configured("e" + i, "gpu", ControlLoopTest.H100, 1));
        }
        return new Topology(List.of(new GatewayCluster("gw", "r1")), List.of(new EngineCluster("gpu", "r1")),
                Map.of("gw", Map.of("gpu", 2.0)), List.of(new Model("m", 120)), es,
                List.of(new TrafficClass("premium", "m", List.of(), 1), new TrafficClass("batch", "m", List.of(), 0)),
                Map.of("gw", Map.of("premium", premiumRps, "batch", batchRps)), 0.1, 25);
    }

    /** The first step with the topology's demand as the demand (as {@code demand: configured}): what is planned for it. */
    private static Snapshot firstStep(Topology t, ControlOptions options) {
        ControlLoop loop = ControlLoop.create(t, options.withObservedDemand(false), () -> 0L, null);
        Step s = loop.step();
        assertThat(s.published()).as(s.reason()).isTrue();
        return s.snapshot();
    }

    private static double capacity(Topology t) {
        return t.engines().stream().mapToDouble(Engine::capacityRps).sum();
    }

    @Test
    void twiceTheCapacity_engineLoadsStayWhereTtftIsWithinTheFactor_andOnlyTheLowerPriorityIsShed() {
        Topology probe = fleet(1, 1);
        double c = capacity(probe);
        Topology t = fleet(0.4 * c, 1.6 * c);
        Snapshot bounded = firstStep(t, ControlOptions.defaults());
        Snapshot unbounded = firstStep(t, ControlOptions.defaults().withOverloadTtftFactor(Double.POSITIVE_INFINITY));

        for (Engine e : t.engines()) {
            EngineState st = bounded.engines().get(e.id());
            double rho = st.loadRps() / e.capacityRps();
            assertThat(e.profile().ttftMs(rho)).as("TTFT of %s at its planned utilization %.3f", e.id(), rho)
                    .isLessThanOrEqualTo(FACTOR * e.profile().ttftMs(0) * (1 + 1e-6));
            // without the bound the same engine is planned to its effective capacity, past that TTFT
            double full = unbounded.engines().get(e.id()).loadRps() / e.capacityRps();
            assertThat(full).isCloseTo(0.9, within(1e-3));
            assertThat(e.profile().ttftMs(full)).isGreaterThan(FACTOR * e.profile().ttftMs(0));
        }
        assertThat(bounded.route("gw", "premium").shedFraction()).as("none, to the solver's precision")
                .isLessThan(1e-6);
        assertThat(bounded.route("gw", "batch").shedFraction())
                .isGreaterThan(unbounded.route("gw", "batch").shedFraction());
        assertThat(bounded.objective().shedRps()).isGreaterThan(unbounded.objective().shedRps());
    }

    @Test
    void theTopPriorityAloneBeyondTheBound_isServedToTheEffectiveCapacity_notShedForTheBound() {
        Topology probe = fleet(1, 1);
        double c = capacity(probe);
        // premium alone wants 85% of the capacity: above where TTFT doubles, below the effective capacity (90%)
        Topology t = fleet(0.85 * c, 0.5 * c);
        assertThat(DefaultControlLoop.utilizationAtTtft(t.engines().get(0).profile(), FACTOR))
                .as("where the bound alone would plan the engines").isLessThan(0.85);
        Snapshot s = firstStep(t, ControlOptions.defaults());

        assertThat(s.route("gw", "premium").shedFraction()).isZero();
        double load = s.engines().values().stream().mapToDouble(EngineState::loadRps).sum();
        assertThat(load).as("planned load").isGreaterThanOrEqualTo(0.85 * c * (1 - 1e-6));
    }

    @Test
    void utilizationAtTtft_isWhereTheProfileReachesTheFactor() {
        Engine e = Rig.configured("e1", "gpu", ControlLoopTest.H100, 1);
        double rho = DefaultControlLoop.utilizationAtTtft(e.profile(), 2);
        assertThat(rho).isBetween(0.0, 0.985);
        assertThat(e.profile().ttftMs(rho)).isCloseTo(2 * e.profile().ttftMs(0), within(1e-6 * e.profile().ttftMs(0)));
    }
}
