package dev.sextant.snapshot;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

class SnapshotTest {

    private static Snapshot snapshot(Map<String, Double> weights) {
        Route r = new Route("m", List.of(), 1, 10, weights, 0, 5.0);
        Map<String, EngineState> engines = new TreeMap<>();
        for (String id : List.of("a", "b", "c")) {
            engines.put(id, new EngineState("k", "us", "http://" + id, List.of("m"), 1, 10, 9, 0.1, 3, 4, 0, 1));
        }
        return new Snapshot(0, "", "optimal", 0.5, RetryBudget.DEFAULT, Map.of("g", Map.of("c1", r)), engines,
                Map.of("g", Map.of("k", 2.0)), new Objective(5, 50, 49.99, 2e-4, 0, 3)).sealed(1);
    }

    @Test
    void contentHash_sameWeightsAsArraysOrAsAMap_isTheSame() {
        SortedEngineIds ids = SortedEngineIds.of(List.of("a", "b", "c"));
        Snapshot arrays = snapshot(Route.weights(ids, new int[] {0, 2}, new double[] {0.25, 0.75}));
        Snapshot map = snapshot(new TreeMap<>(Map.of("a", 0.25, "c", 0.75)));
        assertThat(arrays).isEqualTo(map);
        assertThat(arrays.hash()).isEqualTo(map.hash()).hasSize(64);
    }

    @Test
    void contentHash_weightMovedOrOnAnUnknownEngine_differs() {
        Snapshot base = snapshot(new TreeMap<>(Map.of("a", 0.25, "c", 0.75)));
        assertThat(snapshot(new TreeMap<>(Map.of("a", 0.25, "b", 0.75))).hash()).isNotEqualTo(base.hash());
        assertThat(snapshot(new TreeMap<>(Map.of("a", 0.25, "z", 0.75))).hash()).isNotEqualTo(base.hash());
        assertThat(snapshot(new TreeMap<>(Map.of("a", 0.25, "c", 0.7500001))).hash()).isNotEqualTo(base.hash());
        // a subset of engines as the ids of the arrays: the hash still names engines by their position
        SortedEngineIds fewer = SortedEngineIds.of(List.of("a", "c"));
        assertThat(snapshot(Route.weights(fewer, new int[] {0, 1}, new double[] {0.25, 0.75})).hash())
                .isEqualTo(base.hash());
    }

    /** A snapshot whose one engine, {@code id}, has these strings: the same objects where the caller passes them. */
    private static Snapshot oneEngine(String id, String cluster, String region, String endpoint, List<String> models) {
        Route r = new Route("m", List.of(), 1, 10, Map.of(id, 1.0), 0, 5.0);
        return new Snapshot(0, "", "optimal", 0.5, RetryBudget.DEFAULT, Map.of("g", Map.of("c1", r)),
                Map.of(id, new EngineState(cluster, region, endpoint, models, 1, 10, 9, 0.1, 3, 4, 0, 1)),
                Map.of("g", Map.of(cluster, 2.0)), new Objective(5, 50, 49.99, 2e-4, 0, 3));
    }

    /**
     * The hash keeps each engine's texts from the last snapshot hashed, for the engines described by the very same
     * strings: what was hashed before must not change a hash, and an engine with one string changed is fed afresh.
     */
    @Test
    void contentHash_isTheSame_whateverWasHashedBefore() {
        String id = "e1";
        String cluster = "k";
        String region = "us";
        List<String> models = List.of("m");
        Snapshot a = oneEngine(id, cluster, region, "http://a", models);
        Snapshot otherEndpoint = oneEngine(id, cluster, region, "http://b", models);
        Snapshot otherModels = oneEngine(id, cluster, region, "http://a", List.of("m", "n"));
        Snapshot sameTextsOtherStrings = oneEngine(new String(id), new String(cluster), new String(region),
                new String("http://a"), List.of(new String("m")));

        String ha = a.contentHash();
        String hb = otherEndpoint.contentHash(); // right after `a`, with `a`'s id, cluster, region and models
        String hm = otherModels.contentHash();
        assertThat(hb).isNotEqualTo(ha);
        assertThat(hm).isNotEqualTo(ha).isNotEqualTo(hb);
        assertThat(sameTextsOtherStrings.contentHash()).isEqualTo(ha);
        assertThat(a.contentHash()).isEqualTo(ha);
        assertThat(otherEndpoint.contentHash()).isEqualTo(hb);
        assertThat(a.contentHash()).isEqualTo(ha);
        assertThat(otherModels.contentHash()).isEqualTo(hm);
    }

    @Test
    void forGateway_keepsItsRoutesAndRoundTripsAndEveryEngine_withAHashOfItsOwn() {
        Route r1 = new Route("m", List.of(), 1, 10, new TreeMap<>(Map.of("a", 1.0)), 0, 5.0);
        Route r2 = new Route("m", List.of(), 1, 20, new TreeMap<>(Map.of("b", 0.5, "c", 0.5)), 0, 6.0);
        Map<String, EngineState> engines = new TreeMap<>();
        for (String id : List.of("a", "b", "c")) {
            engines.put(id, new EngineState("k", "us", "http://" + id, List.of("m"), 1, 10, 9, 0.1, 3, 4, 0, 1));
        }
        Snapshot whole = new Snapshot(0, "", "optimal", 0.5, RetryBudget.DEFAULT,
                Map.of("g1", Map.of("c1", r1), "g2", Map.of("c1", r2)), engines,
                Map.of("g1", Map.of("k", 2.0), "g2", Map.of("k", 30.0)), new Objective(5, 50, 49.99, 2e-4, 0, 3))
                .sealed(7);

        Snapshot g2 = whole.forGateway("g2");
        assertThat(g2.version()).isEqualTo(7);
        assertThat(g2.routes()).containsOnlyKeys("g2");
        assertThat(g2.route("g2", "c1")).isEqualTo(r2);
        assertThat(g2.networkRttMs()).containsOnlyKeys("g2");
        assertThat(g2.engines()).isEqualTo(whole.engines());
        assertThat(g2.objective()).isEqualTo(whole.objective());
        assertThat(g2.hash()).isEqualTo(g2.contentHash()).isNotEqualTo(whole.hash())
                .isNotEqualTo(whole.forGateway("g1").hash());
        assertThat(whole.forGateway("nope").routes()).isEmpty();
    }

    /** {@link #snapshot} with the route's allowed utilization {@code u} (NaN: none). */
    private static Snapshot withAllowedUtilization(double u) {
        Route r = new Route("m", List.of(), 1, 10, new TreeMap<>(Map.of("a", 0.25, "c", 0.75)), 0, 5.0, "",
                Map.of(), u);
        Map<String, EngineState> engines = new TreeMap<>();
        for (String id : List.of("a", "b", "c")) {
            engines.put(id, new EngineState("k", "us", "http://" + id, List.of("m"), 1, 10, 9, 0.1, 3, 4, 0, 1));
        }
        return new Snapshot(0, "", "optimal", 0.5, RetryBudget.DEFAULT, Map.of("g", Map.of("c1", r)), engines,
                Map.of("g", Map.of("k", 2.0)), new Objective(5, 50, 49.99, 2e-4, 0, 3)).sealed(1);
    }

    /**
     * Routes without an allowed utilization hash as they did before the field existed (the hash below is what this
     * snapshot hashed to then): a gateway must still accept an older control plane's snapshots and its own cache file.
     */
    @Test
    void contentHash_routesWithoutAllowedUtilization_hashAsBeforeTheField() {
        assertThat(withAllowedUtilization(Double.NaN).hash())
                .isEqualTo("2381f00e5c9dce319544b7984722918b38e48a8ec390c26a7de0dfb0ac387d01")
                .isEqualTo(snapshot(new TreeMap<>(Map.of("a", 0.25, "c", 0.75))).hash());
    }

    @Test
    void contentHash_allowedUtilization_entersTheHash_byItsExactValue() {
        String none = withAllowedUtilization(Double.NaN).hash();
        String half = withAllowedUtilization(0.5).hash(); // the fleet's utilization, yet not the same content
        assertThat(half).isNotEqualTo(none);
        assertThat(withAllowedUtilization(0.5000001).hash()).isNotEqualTo(half);
        assertThat(withAllowedUtilization(0.5).hash()).isEqualTo(half);
        assertThat(withAllowedUtilization(0.5)).isNotEqualTo(withAllowedUtilization(Double.NaN));
    }

    @Test
    void forGateway_keepsEachRoutesAllowedUtilization() {
        Route r1 = new Route("m", List.of(), 1, 10, new TreeMap<>(Map.of("a", 1.0)), 0, 5.0, "", Map.of(), 0.9);
        Route r2 = new Route("m", List.of(), 1, 20, new TreeMap<>(Map.of("b", 1.0)), 0, 6.0, "", Map.of(), 0.1);
        Map<String, EngineState> engines = new TreeMap<>();
        for (String id : List.of("a", "b")) {
            engines.put(id, new EngineState("k", "us", "http://" + id, List.of("m"), 1, 10, 9, 0.1, 3, 4, 0, 1));
        }
        Snapshot whole = new Snapshot(0, "", "optimal", 0.5, RetryBudget.DEFAULT,
                Map.of("g1", Map.of("c1", r1), "g2", Map.of("c1", r2)), engines,
                Map.of("g1", Map.of("k", 2.0), "g2", Map.of("k", 30.0)), new Objective(5, 50, 49.99, 2e-4, 0, 3))
                .sealed(7);

        assertThat(whole.forGateway("g1").route("g1", "c1").allowedUtilization()).isEqualTo(0.9);
        assertThat(whole.forGateway("g2").route("g2", "c1").allowedUtilization()).isEqualTo(0.1);
        assertThat(whole.sealed(8).route("g1", "c1").allowedUtilization()).isEqualTo(0.9);
        assertThat(whole.sealed(8).hash()).isEqualTo(whole.hash());
    }
}
