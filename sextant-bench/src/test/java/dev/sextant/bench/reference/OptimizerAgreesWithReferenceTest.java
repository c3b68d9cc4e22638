package dev.sextant.bench.reference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.bench.fleet.Fleets;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.snapshot.Objective;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Engine;
import dev.sextant.topology.Topology;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.LongStream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The optimizer against the independent LP reference on small random instances (2-4 gateway clusters,
 * 3-12 engines, 1-3 models, residency, priorities, degraded engines, measured profiles, demand from 30%
 * to 140% of capacity): same latency cost to 1e-4 relative, same shed per priority level, same engine
 * loads (unique, since every engine cost is strictly convex) up to the reference's segment width, and
 * the optimizer's certificate never claims a bound above what the reference achieves.
 *
 * <p>The reference uses {@value #SEGMENTS} segments per engine; its a-priori interpolation error is
 * asserted below 2.5e-5 of the latency cost (typically 1-5e-6), so a disagreement above 1e-4 is the
 * optimizer's.
 */
class OptimizerAgreesWithReferenceTest {

    private static final int SEGMENTS = 400;
    private static final ReferenceSolver REFERENCE = ReferenceSolver.withSegments(SEGMENTS);

    static LongStream seeds() {
        return LongStream.rangeClosed(1, 30);
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void optimal_agreesWithReference(long seed) {
        Topology t = Fleets.random(seed, 3 + (int) (seed % 10));

        Snapshot snapshot = Policies.optimal().solve(t, SolveOptions.defaults());
        ReferenceSolution ref = REFERENCE.solve(t);

        assertThat(ref.optimal()).as("reference LP state").isTrue();
        assertThat(ref.pwlErrorBoundRelative()).as("reference interpolation error").isLessThan(2.5e-5);
        Objective o = snapshot.objective();
        double demand = Fleets.totalDemandRps(t);
        assertThat(o.shedRps()).as("total shed").isCloseTo(ref.totalShedRps(), within(1e-6 * (1 + demand)));
        assertThat(shedByPriority(t, snapshot)).as("shed per priority")
                .allSatisfy((p, shed) -> assertThat(shed).isCloseTo(referenceShedByPriority(t, ref).get(p),
                        within(1e-6 * (1 + demand))));
        assertThat(o.latencyCost()).as("latency cost").isCloseTo(ref.latencyCost(), within(1e-4 * ref.latencyCost()));
        assertThat(o.lowerBound()).as("certificate's lower bound").isLessThanOrEqualTo(ref.latencyCost() * (1 + 1e-4));
        for (Engine e : t.engines()) {
            double capacity = e.effectiveCapacityRps(t.headroom(), 1.0);
            assertThat(snapshot.engines().get(e.id()).loadRps()).as("load of %s", e.id())
                    .isCloseTo(ref.engineLoadRps().get(e.id()), within(0.03 * capacity + 1e-6));
        }
    }

    /**
     * The same on the M fleet, within and above capacity; the reference aggregates interchangeable
     * engines there (an exact reformulation) with 100 segments, error bound ≈ 4e-5.
     */
    @ParameterizedTest(name = "utilization {0}")
    @ValueSource(doubles = {0.7, 1.2})
    void optimal_agreesWithReference_onMedium(double utilization) {
        Topology t = Fleets.medium(1, utilization);

        Snapshot snapshot = Policies.optimal().solve(t, SolveOptions.defaults());
        ReferenceSolution ref = ReferenceSolver.withSegments(100).aggregated().solve(t);

        assertThat(ref.optimal()).isTrue();
        assertThat(ref.pwlErrorBoundRelative()).isLessThan(5e-5);
        Objective o = snapshot.objective();
        assertThat(o.shedRps()).isCloseTo(ref.totalShedRps(), within(1e-6 * Fleets.totalDemandRps(t)));
        assertThat(o.latencyCost()).isCloseTo(ref.latencyCost(), within(1e-4 * ref.latencyCost()));
        assertThat(o.lowerBound()).isLessThanOrEqualTo(ref.latencyCost() * (1 + 1e-4));
    }

    private static Map<Integer, Double> shedByPriority(Topology t, Snapshot s) {
        Map<Integer, Double> out = new TreeMap<>();
        s.routes().forEach((g, byClass) -> byClass.forEach((k, r) ->
                out.merge(t.trafficClass(k).priority(), r.shedFraction() * r.demandRps(), Double::sum)));
        return out;
    }

    private static Map<Integer, Double> referenceShedByPriority(Topology t, ReferenceSolution ref) {
        Map<Integer, Double> out = new TreeMap<>();
        t.classes().forEach(c -> out.put(c.priority(), 0.0));
        ref.shedRps().forEach((g, byClass) -> byClass.forEach((k, shed) ->
                out.merge(t.trafficClass(k).priority(), shed, Double::sum)));
        return out;
    }
}
