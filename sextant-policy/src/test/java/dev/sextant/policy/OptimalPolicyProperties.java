package dev.sextant.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Engine;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.Map;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.LongRange;

class OptimalPolicyProperties {

    @Property(tries = 300)
    void everySolution_keepsTheInvariants(@ForAll @LongRange(min = 0, max = 1_000_000) long seed) {
        Topology t = Topologies.random(seed);
        Snapshot s = Policies.optimal().solve(t, SolveOptions.defaults());

        for (var g : s.routes().entrySet()) {
            for (var c : g.getValue().entrySet()) {
                Route r = c.getValue();
                TrafficClass k = t.trafficClass(c.getKey());
                double sum = 0;
                for (var w : r.weights().entrySet()) {
                    Engine e = t.engines().stream().filter(x -> x.id().equals(w.getKey())).findFirst().orElseThrow();
                    assertThat(t.allowed(k, e)).as("%s may serve %s", e.id(), k.id()).isTrue();
                    assertThat(w.getValue()).isBetween(0.0, 1.0);
                    sum += w.getValue();
                }
                if (!r.weights().isEmpty() || r.demandRps() > 0) {
                    assertThat(sum + r.shedFraction()).isCloseTo(1, within(1e-9));
                }
            }
        }
        for (EngineState e : s.engines().values()) {
            assertThat(e.loadRps()).isLessThanOrEqualTo(e.effectiveCapacityRps() * (1 + 1e-9));
        }
    }

    /**
     * What {@code explain} says of an engine in use: its marginal cost, network plus engine latency at the margin
     * plus any capacity shadow price, equals the class price. For an engine the solve filled, the shadow price is
     * what makes it so, also when the smoothed solve left the engine a hair short of its capacity. Engines a route
     * sends at least a twentieth of its traffic to are compared, to a thousandth, except below a thousandth of
     * their effective capacity (a group's idle engines) and between 90% and 99.9% of it, where the marginal cost is
     * so steep that a load within the gap tolerance moves it by more than that.
     */
    @Property(tries = 300)
    void enginesInUse_marginalCostPlusShadowPrice_isTheClassPrice(@ForAll @LongRange(min = 0, max = 1_000_000) long seed) {
        Topology t = Topologies.random(seed);
        Snapshot s = Policies.optimal().solve(t, SolveOptions.defaults());

        s.routes().forEach((g, byClass) -> byClass.forEach((c, r) -> {
            if (r.shedFraction() > 0 || r.demandRps() == 0) {
                return; // its price is the shed cost, or the cheapest option's cost for a request that comes anyway
            }
            r.weights().forEach((id, w) -> {
                EngineState e = s.engines().get(id);
                double use = e.loadRps() / e.effectiveCapacityRps();
                if (w < 0.05 || use < 1e-3 || (use > 0.9 && use < 1 - OptimalPolicy.NEAR_FULL)) {
                    return;
                }
                double marginal = t.networkRttMs().get(g).get(e.cluster()) + e.marginalCostMs() + e.shadowPriceMs();
                assertThat(marginal).as("%s %s on %s at %.6f of capacity", g, c, id, use)
                        .isCloseTo(r.priceMs(), within(1e-3 * r.priceMs()));
            });
        }));
    }

    @Property(tries = 300)
    void everySolution_isCertified(@ForAll @LongRange(min = 0, max = 1_000_000) long seed) {
        Snapshot s = Policies.optimal().solve(Topologies.random(seed), SolveOptions.defaults());
        // the bound is a true lower bound, and the gap closes to the tolerance; with shedding the
        // prices sit near the shed cost (1e7 ms) and rounding can stall the gap above it (seen: 2e-5)
        assertThat(s.objective().lowerBound()).isLessThanOrEqualTo(s.objective().latencyCost() * (1 + 1e-9)
);
        double tolerance = s.objective().shedRps() > 0 ? 1e-4 : SolveOptions.DEFAULT_GAP_TOLERANCE;
        assertThat(s.objective().gapRelative()).isLessThanOrEqualTo(tolerance);
    }

    /**
     * A topology that sheds, whose cold solve once stalled at a gap of 2.5e-4: its temperature stages, each solved
     * only to a millionth of the demand, improved a little each time and so were never solved to rounding, until τ
     * was too small for Newton's method. A stage that does not halve the gap is now solved to rounding.
     */
    @Example
    void everySolution_thatStalledWhileShedding_isCertified() {
        everySolution_isCertified(76_325);
        assertThat(Policies.optimal().solve(Topologies.random(76_325), SolveOptions.defaults()).objective()
                .gapRelative()).as("to the default tolerance, not only the shedding allowance")
                .isLessThanOrEqualTo(SolveOptions.DEFAULT_GAP_TOLERANCE);
    }

    /**
     * A topology whose warm-started re-solve with affinity once stalled at a gap of 0.81 after 800 Newton steps
     * (the demand change makes it shed): the solver now starts again from the cold guess when the warm start
     * does not certify.
     */
    @Example
    void resolveWithAffinity_warmStartThatStalled_isCertified() {
        resolveWithAffinity_afterADemandChange_isCertifiedAndKeepsTheInvariants(142_889);
    }

    @Property(tries = 150)
    void resolveWithAffinity_afterADemandChange_isCertifiedAndKeepsTheInvariants(
            @ForAll @LongRange(min = 0, max = 1_000_000) long seed) {
        Topology t = Topologies.random(seed);
        Snapshot first = Policies.optimal().solve(t, SolveOptions.defaults());
        java.util.Random r = new java.util.Random(seed);
        Map<String, Map<String, Double>> demand = new java.util.LinkedHashMap<>();
        t.demandRps().forEach((g, row) -> {
            Map<String, Double> changed = new java.util.LinkedHashMap<>();
            row.forEach((c, v) -> changed.put(c, v * (0.7 + 0.6 * r.nextDouble())));
            demand.put(g, changed);
        });
        Snapshot next = Policies.optimal().solve(t.withDemand(demand), SolveOptions.defaults().after(first));

        assertThat(next.version()).isEqualTo(first.version() + 1);
        double tolerance = next.objective().shedRps() > 0 ? 1e-4 : SolveOptions.DEFAULT_GAP_TOLERANCE;
        assertThat(next.objective().gapRelative()).isLessThanOrEqualTo(tolerance);
        for (EngineState e : next.engines().values()) {
            assertThat(e.loadRps()).isLessThanOrEqualTo(e.effectiveCapacityRps() * (1 + 1e-9));
        }
        next.routes().values().forEach(byClass -> byClass.values().forEach(route ->
                assertThat(route.shedFraction()).isBetween(0.0, 1.0)));
    }

    @Property(tries = 50)
    void sameInput_sameSnapshot(@ForAll @LongRange(min = 0, max = 1_000_000) long seed) {
        Topology t = Topologies.random(seed);
        Snapshot a = Policies.optimal().solve(t, SolveOptions.defaults());
        Snapshot b = Policies.optimal().solve(t, SolveOptions.defaults());
        assertThat(b.hash()).isEqualTo(a.hash());
        assertThat(b).isEqualTo(a);
    }

    @Property(tries = 50)
    void certifiedSolution_isTheSnapshotsSolution_beforeAssembly(@ForAll @LongRange(min = 0, max = 1_000_000) long seed) {
        Topology t = Topologies.random(seed);
        CertifiedSolution c = Policies.optimalSolution(t, SolveOptions.defaults());
        Snapshot s = Policies.optimal().solve(t, SolveOptions.defaults());
        assertThat(c.snapshot()).isEqualTo(s);
        assertThat(c.snapshot().hash()).isEqualTo(s.hash());
        assertThat(c.gapRelative()).isEqualTo(s.objective().gapRelative());
        assertThat(c.lowerBound()).isEqualTo(s.objective().lowerBound());
        assertThat(c.iterations()).isEqualTo(s.objective().iterations());
        assertThat(c.shedRps()).isCloseTo(s.objective().shedRps(), within(1e-9 * (1 + s.objective().shedRps())));
    }

    @Property(tries = 100)
    void optimal_isNeverWorseThanTheBaselines(@ForAll @LongRange(min = 0, max = 1_000_000) long seed) {
        Topology t = Topologies.random(seed);
        Snapshot optimal = Policies.optimal().solve(t, SolveOptions.defaults());
        for (String name : java.util.List.of("nearest", "waterfall", "proportional")) {
            Snapshot other = Policies.byName(name).solve(t, SolveOptions.defaults());
            boolean feasible = other.engines().values().stream()
                    .allMatch(e -> e.loadRps() <= e.effectiveCapacityRps() * (1 + 1e-9));
            if (!feasible) {
                continue;
            }
            // a feasible baseline never sheds less (shedding is minimal), nor routes cheaper at equal shed
            assertThat(optimal.objective().shedRps()).isLessThanOrEqualTo(other.objective().shedRps() + 1e-6);
            if (optimal.objective().shedRps() == 0 && other.objective().shedRps() == 0) {
                // with shedding, a baseline may shed higher priorities to save latency, which the
                // optimizer must not: latencies compare only when nobody sheds
                assertThat(optimal.objective().latencyCost())
                        .isLessThanOrEqualTo(other.objective().latencyCost() * (1 + 1e-6));
            }
        }
    }

}
