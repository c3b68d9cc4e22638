package dev.sextant.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Engine;
import dev.sextant.topology.MeasuredProfile;
import dev.sextant.topology.Model;
import dev.sextant.topology.ParametricProfile;
import dev.sextant.topology.Topology;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.LongRange;

/**
 * Every topology a file may hold solves: random fleets with some of their numbers moved to the ends of what the
 * topology allows (capacities from a millionth to a billion req/s, times from a microsecond to 1e8 ms, TBT slopes up
 * to {@link ParametricProfile#MAX_TBT_SLOPE}, measured profiles that jump from a microsecond to 1e8 ms, outputs up to
 * ten million tokens, demands up to a billion req/s, engines out of service, the largest affinity discount), solved cold,
 * warm from the fleet as it was, and the fleet as it was warm from it: every solve gives a snapshot whose routes'
 * weights and shed fraction are fractions that add up to one. It found TBT slopes of 1e9 and more, then allowed, that
 * put one engine's cost 1e24 ms above another's and ended in shed fractions of NaN.
 */
class ExtremeTopologyProperties {
    private static final double[] RPS = {1e-6, 1e-3, 1, 1e6, 1e9};
    private static final double[] MS = {1e-3, 1, 1e4, 1e8};
    private static final double[] SLOPES = {0, 1e-9, 1, ParametricProfile.MAX_TBT_SLOPE};
    private static final int[] TOKENS = {1, 1000, Model.MAX_OUTPUT_TOKENS};

    @Property(tries = 200)
    void anyTopologyWithinBounds_solvesColdAndWarm(@ForAll @LongRange(min = 0, max = 1_000_000) long seed) {
        Topology before = Topologies.random(seed);
        Topology extreme = extreme(before, new SplittableRandom(seed));
        RoutingPolicy optimal = Policies.optimal();

        Snapshot was = optimal.solve(before, SolveOptions.defaults());
        Snapshot cold = optimal.solve(extreme, SolveOptions.defaults());
        Snapshot warm = optimal.solve(extreme, SolveOptions.defaults().after(was));
        Snapshot back = optimal.solve(before, SolveOptions.defaults().after(cold));

        for (Snapshot s : List.of(cold, warm, back)) {
            for (Map<String, Route> byClass : s.routes().values()) {
                for (Route r : byClass.values()) {
                    assertThat(r.shedFraction()).isBetween(0.0, 1.0);
                    assertThat(r.weights().values()).allSatisfy(w -> assertThat(w).isBetween(0.0, 1.0));
                    double sum = r.weights().values().stream().mapToDouble(Double::doubleValue).sum();
                    if (!r.weights().isEmpty() || r.demandRps() > 0) {
                        // to 1e-5: a class of 0.001 req/s beside one of a billion; byPriority keeps each class's own
                        // total (without that, up to 1e-4 was lost in the pool's rounding); up to 6e-6 in 3,000 tries
                        // is left from elsewhere, not traced; the gateway's slot tables normalize
                        assertThat(sum + r.shedFraction()).isCloseTo(1, within(1e-5));
                    }
                }
            }
        }
    }

    /** {@code t} with about a third of its numbers each moved to one end or the other of its field's range. */
    static Topology extreme(Topology t, SplittableRandom r) {
        List<Engine> engines = new ArrayList<>();
        for (Engine e : t.engines()) {
            engines.add(r.nextInt(3) > 0 ? e : new Engine(e.id(), e.cluster(), e.endpoint(), e.models(),
                    pick(r, RPS, e.capacityRps()), r.nextBoolean() ? measured(r) : new ParametricProfile(pick(r, MS, 50),
                            pick(r, MS, 20), pick(r, SLOPES, 1)), r.nextInt(4) == 0 ? 0 : e.health(),
                    e.priorityScheduling()));
        }
        List<Model> models = new ArrayList<>();
        for (Model m : t.models()) {
            models.add(r.nextInt(3) > 0 ? m : new Model(m.id(), TOKENS[r.nextInt(TOKENS.length)]));
        }
        return new Topology(t.gatewayClusters(), t.engineClusters(), table(t.networkRttMs(), r, MS), models, engines,
                t.classes(), table(t.demandRps(), r, RPS), t.headroom(),
                r.nextInt(3) > 0 ? t.affinityDiscountMs() : MS[r.nextInt(MS.length)], t.retryBudget());
    }

    /** A measured profile of some of six utilizations, each point's times at an end of their range, never falling. */
    static MeasuredProfile measured(SplittableRandom r) {
        List<MeasuredProfile.Point> points = new ArrayList<>();
        double ttft = MS[r.nextInt(MS.length)];
        double tbt = MS[r.nextInt(MS.length)];
        for (double u : new double[] {0, 0.001, 0.01, 0.5, 0.9, 0.999}) {
            if (r.nextInt(3) > 0 || points.isEmpty() && u == 0.999) {
                ttft = Math.max(ttft, MS[r.nextInt(MS.length)]);
                tbt = Math.max(tbt, MS[r.nextInt(MS.length)]);
                points.add(new MeasuredProfile.Point(u, ttft, tbt));
            }
        }
        return new MeasuredProfile(points);
    }

    private static Map<String, Map<String, Double>> table(Map<String, Map<String, Double>> t, SplittableRandom r,
                                                          double[] ends) {
        Map<String, Map<String, Double>> out = new LinkedHashMap<>();
        t.forEach((k, row) -> {
            Map<String, Double> changed = new LinkedHashMap<>();
            row.forEach((c, v) -> changed.put(c, pick(r, ends, v)));
            out.put(k, changed);
        });
        return out;
    }

    private static double pick(SplittableRandom r, double[] ends, double v) {
        return r.nextInt(3) == 0 ? ends[r.nextInt(ends.length)] : v;
    }
}
