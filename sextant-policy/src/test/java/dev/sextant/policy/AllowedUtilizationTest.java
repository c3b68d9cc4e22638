package dev.sextant.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.RetryBudget;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Engine;
import dev.sextant.topology.EngineCluster;
import dev.sextant.topology.GatewayCluster;
import dev.sextant.topology.Model;
import dev.sextant.topology.ParametricProfile;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.From;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.FieldSource;

/** Each route's allowed utilization, which sets its class's retry budget, as every policy writes it. */
class AllowedUtilizationTest {

    static final List<String> POLICIES = Policies.NAMES;

    /**
     * One gateway cluster, two classes on engines of their own: {@code hot} asks its one engine (80 req/s, 72
     * effective) for {@code hotDemand}, {@code cold} asks its engine (100 req/s, 90 effective) for 9 req/s.
     */
    static Topology twoClasses(double hotDemand) {
        ParametricProfile profile = new ParametricProfile(100, 10, 1.0);
        return new Topology(List.of(new GatewayCluster("g", "r")), List.of(new EngineCluster("c", "r")),
                Map.of("g", Map.of("c", 2.0)), List.of(new Model("m-hot", 50), new Model("m-cold", 50)),
                List.of(new Engine("hot-1", "c", "http://127.0.0.1:9101", List.of("m-hot"), 80, profile, 1.0),
                        new Engine("cold-1", "c", "http://127.0.0.1:9102", List.of("m-cold"), 100, profile, 1.0)),
                List.of(new TrafficClass("hot", "m-hot", List.of(), 0), new TrafficClass("cold", "m-cold", List.of(), 0)),
                Map.of("g", Map.of("hot", hotDemand, "cold", 9.0)), 0.1, Topology.DEFAULT_AFFINITY_DISCOUNT_MS);
    }

    @ParameterizedTest(name = "{0}")
    @FieldSource("POLICIES")
    void solve_oneClassSaturatedTheOtherIdle_givesEachItsOwnUtilizationAndDeposit(String policy) {
        Snapshot s = Policies.byName(policy).solve(twoClasses(200), SolveOptions.defaults());
        Route hot = s.route("g", "hot");
        Route cold = s.route("g", "cold");

        EngineState hotEngine = s.engines().get("hot-1");
        assertThat(hot.allowedUtilization()).isEqualTo(hotEngine.loadRps() / hotEngine.effectiveCapacityRps())
                .isGreaterThan(0.99);
        assertThat(cold.allowedUtilization()).isCloseTo(0.1, within(1e-9)); // 9 of 90 req/s
        // the fleet's utilization is between the two: the old deposit was wrong for both classes
        assertThat(s.fleetUtilization()).isStrictlyBetween(cold.allowedUtilization(), hot.allowedUtilization());
        assertThat(s.retryRatio(hot)).isCloseTo(0.01, within(1e-3)); // the default curve near saturation
        assertThat(s.retryRatio(cold)).isEqualTo(0.2);
    }

    @ParameterizedTest(name = "{0}")
    @FieldSource("POLICIES")
    void solve_classWithoutAnEngineThatHasCapacity_hasUtilizationOne(String policy) {
        Topology t = twoClasses(10);
        List<Engine> engines = List.of(t.engines().get(0).withHealth(0.0), t.engines().get(1));
        Snapshot s = Policies.byName(policy).solve(t.withEngines(engines), SolveOptions.defaults());

        assertThat(s.route("g", "hot").allowedUtilization()).isEqualTo(1.0);
        assertThat(s.route("g", "cold").allowedUtilization()).isCloseTo(0.1, within(1e-9));
    }

    @ParameterizedTest(name = "{0}")
    @FieldSource("POLICIES")
    void solve_writesTheTopologysRetryBudget(String policy) {
        RetryBudget budget = new RetryBudget(List.of(new RetryBudget.Point(0.2, 0.3), new RetryBudget.Point(0.9, 0.0)),
                2.5);
        Snapshot s = Policies.byName(policy).solve(twoClasses(50).withRetryBudget(budget), SolveOptions.defaults());
        Snapshot byDefault = Policies.byName(policy).solve(twoClasses(50), SolveOptions.defaults());

        assertThat(s.retryBudget()).isEqualTo(budget);
        assertThat(byDefault.retryBudget()).isEqualTo(RetryBudget.DEFAULT);
        assertThat(s.hash()).isNotEqualTo(byDefault.hash());
    }

    @Test
    void solve_twiceTheSame_givesTheSameUtilizationsAndHash() {
        Snapshot a = Policies.optimal().solve(twoClasses(200), SolveOptions.defaults());
        Snapshot b = Policies.optimal().solve(twoClasses(200), SolveOptions.defaults());
        assertThat(b).isEqualTo(a);
        assertThat(b.hash()).isEqualTo(a.hash()).isEqualTo(a.contentHash());
    }

    /**
     * The formula on random fleets, for every policy: Σ load / Σ effective capacity over the engines the class may
     * use from its gateway cluster (model served, region within the residency, a round trip to its cluster) that
     * have capacity, each engine's load from every class; 1 when none has capacity.
     */
    @Property(tries = 200)
    void everyRoute_carriesTheUtilizationOfItsAllowedEngines(@ForAll @LongRange(min = 0, max = 1_000_000) long seed,
                                                           @ForAll @From("policies") String policy) {
        Topology t = Topologies.random(seed);
        Snapshot s = Policies.byName(policy).solve(t, SolveOptions.defaults());

        s.routes().forEach((g, byClass) -> byClass.forEach((c, r) -> {
            TrafficClass k = t.trafficClass(c);
            Map<String, Double> rtt = t.networkRttMs().getOrDefault(g, Map.of());
            double load = 0;
            double capacity = 0;
            for (Engine e : t.engines()) {
                EngineState state = s.engines().get(e.id());
                if (t.allowed(k, e) && rtt.containsKey(e.cluster()) && state.effectiveCapacityRps() > 0) {
                    load += state.loadRps();
                    capacity += state.effectiveCapacityRps();
                }
            }
            double expected = capacity > 0 ? load / capacity : 1.0;
            assertThat(r.allowedUtilization()).as("%s at %s under %s", c, g, policy)
                    .isCloseTo(expected, within(1e-12 * Math.max(1, expected)));
            assertThat(s.allowedUtilizationOf(r)).isEqualTo(r.allowedUtilization());
        }));
    }

    @Provide
    Arbitrary<String> policies() {
        return Arbitraries.of(POLICIES);
    }
}
