package dev.sextant.snapshot;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

import static org.assertj.core.api.Assertions.assertThat;

/** {@link Route#firstWeightMoved}: the engine a union of the two routes' ids, walked in order, finds first. */
class RouteWeightMoveProperties {

    @Property(tries = 300)
    void firstWeightMoved_isTheFirstEngineInIdOrderBeyondTheThreshold_howeverTheWeightsAreHeld(
            @ForAll @IntRange(min = 1, max = 40) int n, @ForAll long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<String> all = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            all.add(String.format("e%03d", i));
        }
        // equal lists in two objects, as two solves have them
        SortedEngineIds before = SortedEngineIds.of(all);
        SortedEngineIds now = rnd.nextBoolean() ? before : SortedEngineIds.of(all);
        Map<String, Double> a = weights(rnd, before, n);
        Map<String, Double> b = rnd.nextInt(4) == 0 ? nudged(rnd, a, now) : weights(rnd, now, n);
        double by = rnd.nextDouble() * 0.3;

        String expected = bruteForce(a, b, by);
        assertThat(route(a).firstWeightMoved(route(b), by)).isEqualTo(expected);
        assertThat(route(new TreeMap<>(a)).firstWeightMoved(route(new TreeMap<>(b)), by)).isEqualTo(expected);
        assertThat(route(a).firstWeightMoved(route(new TreeMap<>(b)), by)).isEqualTo(expected);
        assertThat(route(b).firstWeightMoved(route(a), by)).isEqualTo(expected);
        assertThat(route(a).firstWeightMoved(route(a), 0)).isNull();
    }

    @Property(tries = 300)
    void firstWeightMoved_groupedRoutes_agreesWithTheirWrittenOutWeights(
            @ForAll @IntRange(min = 1, max = 30) int n, @ForAll long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        Route a = groupedRoute(rnd, n);
        Route b = rnd.nextInt(4) == 0 ? a : groupedRoute(rnd, n);
        double by = rnd.nextInt(4) == 0 ? 0 : rnd.nextDouble() * 0.3;
        String expected = bruteForce(a.weights(), b.weights(), by);
        assertThat(a.firstWeightMoved(b, by)).isEqualTo(expected);
        assertThat(b.firstWeightMoved(a, by)).isEqualTo(expected);
        assertThat(route(new TreeMap<>(a.weights())).firstWeightMoved(b, by)).isEqualTo(expected);
    }

    /** Engines e000.. dealt into groups g0..g3 by index; a random subset of the groups with random shares. */
    private static Route groupedRoute(SplittableRandom rnd, int n) {
        List<String> ids = new ArrayList<>();
        List<Double> fractions = new ArrayList<>();
        List<EngineGroup> groups = new ArrayList<>();
        for (int g = 0; g < 4; g++) {
            Map<String, Double> shares = new TreeMap<>();
            for (int i = g; i < n; i += 4) {
                if (rnd.nextInt(3) > 0) {
                    shares.put(String.format("e%03d", i), 0.05 + rnd.nextDouble());
                }
            }
            if (shares.isEmpty() || rnd.nextInt(4) == 0) {
                continue;
            }
            double sum = shares.values().stream().mapToDouble(Double::doubleValue).sum();
            shares.replaceAll((e, v) -> Math.min(1, v / sum));
            ids.add("g" + g);
            fractions.add(0.05 + 0.95 * rnd.nextDouble());
            groups.add(new EngineGroup(shares, "x"));
        }
        return Route.grouped("m", List.of(), 0, 1, ids.toArray(new String[0]),
                fractions.stream().mapToDouble(Double::doubleValue).toArray(), groups.toArray(new EngineGroup[0]), 0,
                Double.NaN, ids.isEmpty() ? "" : "x");
    }

    private static String bruteForce(Map<String, Double> a, Map<String, Double> b, double by) {
        TreeSet<String> ids = new TreeSet<>(a.keySet());
        ids.addAll(b.keySet());
        for (String id : ids) {
            if (Math.abs(a.getOrDefault(id, 0.0) - b.getOrDefault(id, 0.0)) > by) {
                return id;
            }
        }
        return null;
    }

    /** Weights on a random subset of the ids, some of them zero. */
    private static Map<String, Double> weights(SplittableRandom rnd, SortedEngineIds ids, int n) {
        int[] ranks = java.util.stream.IntStream.range(0, n).filter(i -> rnd.nextInt(3) > 0).toArray();
        double[] values = new double[ranks.length];
        for (int i = 0; i < values.length; i++) {
            values[i] = rnd.nextInt(5) == 0 ? 0 : rnd.nextDouble();
        }
        return Route.weights(ids, ranks, values);
    }

    /** The same engines with each weight moved a little. */
    private static Map<String, Double> nudged(SplittableRandom rnd, Map<String, Double> a, SortedEngineIds ids) {
        SortedWeights w = (SortedWeights) a;
        double[] values = w.value.clone();
        for (int i = 0; i < values.length; i++) {
            values[i] = Math.min(1, Math.max(0, values[i] + (rnd.nextDouble() - 0.5) * 0.1));
        }
        return Route.weights(ids, w.rank, values);
    }

    private static Route route(Map<String, Double> w) {
        return new Route("m", List.of(), 0, 1, w, 0, Double.NaN);
    }
}
