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
