package dev.sextant.bench.reference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.bench.fleet.Fleets;
import dev.sextant.topology.Engine;
import dev.sextant.topology.LatencyProfile;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ReferenceSolverTest {

    private static final ReferenceSolver SOLVER = ReferenceSolver.create();

    @Test
    void talk_bothEnginesWithinCapacity_eastSpillsToTheFartherEngine_westStaysHome() {
        ReferenceSolution s = SOLVER.solve(Fleets.talk());

        assertThat(s.optimal()).isTrue();
        assertThat(s.totalShedRps()).isZero();
        assertThat(s.engineLoadRps().get("east-1")).isLessThanOrEqualTo(90.0 + 1e-9);
        assertThat(s.engineLoadRps().get("west-1")).isLessThanOrEqualTo(72.0 + 1e-9);
        Map<String, Double> east = s.flowRps().get("east").get("chat");
        assertThat(east.get("west-1")).isGreaterThan(10.0);
        assertThat(east.get("east-1")).isGreaterThan(east.get("west-1"));
        assertThat(s.flowRps().get("west").get("chat")).containsOnlyKeys("west-1");
        assertThat(s.flowRps().get("west").get("chat").get("west-1")).isCloseTo(40.0, within(1e-6));
    }

    /**
     * By hand: east's traffic splits where the marginal costs are equal, 2 + φ'(x) = 60 + φ'(160 − x) with
     * φ'(x) = T(ρ) + ρ·T'(ρ) for the shared profile (ttft 150 / (1 − ρ), tbt 20·(1 + ρ), 200 tokens), and
     * both engines stay below their effective capacities (90 and 72), so x solves it by bisection.
     */
    @Test
    void talk_loadsMatchTheEqualMarginalCostSplit() {
        Topology t = Fleets.talk();
        double lo = 160 - 72;
        double hi = 90;
        for (int i = 0; i < 200; i++) {
            double x = (lo + hi) / 2;
            double excess = 2 + marginal(x, 100) - 60 - marginal(160 - x, 80);
            if (excess > 0) {
                hi = x;
            } else {
                lo = x;
            }
        }
        double x = (lo + hi) / 2;

        ReferenceSolution s = SOLVER.solve(t);

        assertThat(s.engineLoadRps().get("east-1")).isCloseTo(x, within(0.05));
        assertThat(s.engineLoadRps().get("west-1")).isCloseTo(160 - x, within(0.05));
        double exact = 2 * x + 60 * (120 - x) + 2 * 40 + cost(x, 100) + cost(160 - x, 80);
        assertThat(s.latencyCost()).isCloseTo(exact, within(1e-6 * exact));
    }

    private static double marginal(double x, double capacity) {
        double rho = x / capacity;
        double latency = 150 / (1 - rho) + 199 * 20 * (1 + rho);
        double slope = 150 / ((1 - rho) * (1 - rho)) + 199 * 20;
        return latency + rho * slope;
    }

    private static double cost(double x, double capacity) {
        double rho = x / capacity;
        return x * (150 / (1 - rho) + 199 * 20 * (1 + rho));
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8})
    void random_solutionIsFeasible_andBracketsTheOptimum(long seed) {
        Topology t = Fleets.random(seed, 3 + (int) (seed % 10));

        ReferenceSolution s = ReferenceSolver.withSegments(100).solve(t);

        assertThat(s.optimal()).isTrue();
        assertFeasible(t, s);
        double tolerance = 1e-7 * s.lpObjective();
        // ψ ≥ φ: the true cost at the LP's point is at most the LP's value ...
        assertThat(s.latencyCost()).isLessThanOrEqualTo(s.pwlLatencyCost() + tolerance);
        assertThat(s.latencyCost() + s.shedPenaltyCost()).isCloseTo(s.lpObjective(), within(s.pwlErrorBound() + tolerance));
        // ... and more segments can only get closer to the optimum from above, never below the bound
        ReferenceSolution fine = ReferenceSolver.withSegments(400).solve(t);
        assertThat(fine.lpObjective()).isLessThanOrEqualTo(s.lpObjective() + tolerance);
        assertThat(fine.lpObjective()).isGreaterThanOrEqualTo(s.lpObjective() - s.pwlErrorBound() - tolerance);
        assertThat(fine.pwlErrorBound()).isLessThan(s.pwlErrorBound() / 10);
    }

    @ParameterizedTest
    @ValueSource(longs = {11, 12, 13, 14})
    void aggregated_isTheSameLp(long seed) {
        Topology t = Fleets.random(seed, 12);

        ReferenceSolution plain = ReferenceSolver.withSegments(100).solve(t);
        ReferenceSolution grouped = ReferenceSolver.withSegments(100).aggregated().solve(t);

        assertThat(grouped.variables()).isLessThanOrEqualTo(plain.variables());
        assertThat(grouped.lpObjective()).isCloseTo(plain.lpObjective(), within(1e-7 * plain.lpObjective()));
        assertThat(grouped.totalShedRps()).isCloseTo(plain.totalShedRps(), within(1e-6));
        assertFeasible(t, grouped);
    }

    @Test
    void aggregated_mergesIdenticalEnginesOfAFleet() {
        Topology t = Fleets.medium(1);

        ReferenceSolution s = ReferenceSolver.withSegments(20).aggregated().solve(t);

        assertThat(s.optimal()).isTrue();
        assertFeasible(t, s);
        assertThat(s.totalShedRps()).isZero();
        assertThat(s.variables()).isLessThan(20 * t.engines().size());
    }

    @Test
    void aboveCapacity_shedsTheLowestPriorityFirst() {
        Topology talk = Fleets.talk();
        TrafficClass batch = new TrafficClass("batch", "llama-3.1-70b", List.of(), -1);
        // 162 req/s of capacity, 160 of chat and 30 of batch: batch loses 28, chat nothing
        Topology t = new Topology(talk.gatewayClusters(), talk.engineClusters(), talk.networkRttMs(), talk.models(),
                talk.engines(), List.of(talk.classes().get(0), batch),
                Map.of("east", Map.of("chat", 120.0, "batch", 30.0), "west", Map.of("chat", 40.0)),
                talk.headroom(), 0);

        ReferenceSolution s = SOLVER.solve(t);

        assertThat(s.totalShedRps()).isCloseTo(28.0, within(1e-6));
        assertThat(s.shedRps().get("east").get("batch")).isCloseTo(28.0, within(1e-6));
        assertThat(s.shedRps().get("east").get("chat")).isCloseTo(0.0, within(1e-6));
        assertThat(s.engineLoadRps().values().stream().mapToDouble(Double::doubleValue).sum())
                .isCloseTo(162.0, within(1e-6));
    }

    @Test
    void overloadedFleet_shedsAtLeastTheExcess_andBatchBeforePremium() {
        Topology t = Fleets.medium(1, 1.2);

        ReferenceSolution s = ReferenceSolver.withSegments(20).aggregated().solve(t);

        assertThat(s.optimal()).isTrue();
        assertFeasible(t, s);
        double excess = Fleets.totalDemandRps(t) - Fleets.totalEffectiveCapacityRps(t);
        assertThat(s.totalShedRps()).isGreaterThanOrEqualTo(excess * (1 - 1e-9));
        double premium = 0;
        double batch = 0;
        for (var byClass : s.shedRps().values()) {
            for (var shed : byClass.entrySet()) {
                premium += shed.getKey().endsWith("/premium") ? shed.getValue() : 0;
                batch += shed.getKey().endsWith("/batch") ? shed.getValue() : 0;
            }
        }
        assertThat(batch).isGreaterThan(0.5 * excess);
        assertThat(premium).isLessThan(1e-6 * excess);
    }

    @Test
    void shedPenalty_growsWithTheNumberOfPriorityLevelsBelow() {
        Topology t = Fleets.medium(1);

        assertThat(ReferenceSolver.shedPenaltyMs(t, t.trafficClass("llama-3.1-8b/batch"))).isEqualTo(1e7);
        assertThat(ReferenceSolver.shedPenaltyMs(t, t.trafficClass("llama-3.1-8b/standard"))).isEqualTo(1.01e7);
        assertThat(ReferenceSolver.shedPenaltyMs(t, t.trafficClass("llama-3.1-8b/eu"))).isEqualTo(1.01e7);
        assertThat(ReferenceSolver.shedPenaltyMs(t, t.trafficClass("llama-3.1-8b/premium"))).isEqualTo(1.02e7);
    }

    @Test
    void penalties_lowerAnEnginesCapacity() {
        ReferenceSolution s = SOLVER.solve(Fleets.talk(), Map.of("east-1", 0.5));

        assertThat(s.engineLoadRps().get("east-1")).isLessThanOrEqualTo(45.0 + 1e-9);
        assertThat(s.totalShedRps()).isCloseTo(160 - 45 - 72, within(1e-6));
    }

    /** Demand conserved, loads within effective capacity, only allowed engines used. */
    static void assertFeasible(Topology t, ReferenceSolution s) {
        for (var g : t.demandRps().entrySet()) {
            for (var k : g.getValue().entrySet()) {
                if (k.getValue() <= 0) {
                    continue;
                }
                TrafficClass c = t.trafficClass(k.getKey());
                Map<String, Double> flows = s.flowRps().get(g.getKey()).get(k.getKey());
                double routed = flows.values().stream().mapToDouble(Double::doubleValue).sum();
                assertThat(routed + s.shedRps().get(g.getKey()).get(k.getKey()))
                        .isCloseTo(k.getValue(), within(1e-6 * (1 + k.getValue())));
                for (String engine : flows.keySet()) {
                    Engine e = t.engines().stream().filter(x -> x.id().equals(engine)).findFirst().orElseThrow();
                    assertThat(t.allowed(c, e)).as("%s may serve %s", engine, c.id()).isTrue();
                }
            }
        }
        for (Engine e : t.engines()) {
            assertThat(s.engineLoadRps().get(e.id()))
                    .isLessThanOrEqualTo(e.effectiveCapacityRps(t.headroom(), 1.0) * (1 + 1e-9));
        }
    }

    @Test
    void engineCost_isLoadTimesLatency() {
        Engine e = Fleets.talk().engines().get(0);
        LatencyProfile p = e.profile();

        assertThat(ReferenceSolver.engineCost(e, 200, 50)).isCloseTo(50 * p.latencyMs(0.5, 200), within(1e-9));
        assertThat(ReferenceSolver.engineCost(e, 200, 0)).isZero();
    }
}
