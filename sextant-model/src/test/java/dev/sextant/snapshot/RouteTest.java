package dev.sextant.snapshot;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.offset;

class RouteTest {

    @Test
    void slotEngines_arePositiveWeightsInIdOrder() {
        Route r = new Route("m", List.of(), 0, 1, Map.of("b", 0.25, "c", 0.0, "a", 0.75), 0, Double.NaN);
        assertThat(r.slotEngines()).containsExactly("a", "b");
        assertThat(r.slotWeights()).containsExactly(0.75, 0.25);
        assertThat(r.slots()).isEmpty();
    }

    @Test
    void new_slotsWithoutPositiveWeight_orNull_areRejectedWithTheField() {
        assertThatThrownBy(() -> new Route("m", List.of(), 0, 1, Map.of("a", 0.0), 1, Double.NaN, "AQwBAIAg"))
                .hasMessage("slots: 'AQwBAIAg' (expected: empty when no weight is positive)");
        assertThatThrownBy(() -> new Route("m", List.of(), 0, 1, Map.of("a", 1.0), 0, Double.NaN, null))
                .hasMessage("slots: null (expected: an encoded slot table, or empty)");
    }

    @Test
    void new_withoutAllowedUtilization_isNaN_andTheSnapshotUsesTheFleetUtilizationForIt() {
        Route without = new Route("m", List.of(), 0, 1, Map.of("a", 1.0), 0, Double.NaN);
        Route with = new Route("m", List.of(), 0, 1, Map.of("a", 1.0), 0, Double.NaN, "", Map.of(), 0.9);
        Snapshot s = new Snapshot(0, "", "test", 0.3, RetryBudget.DEFAULT, Map.of("g", Map.of("x", without,
                "y", with)), Map.of(), Map.of(), new Objective(0, 0, Double.NaN, Double.NaN, 0, 0));

        assertThat(without.allowedUtilization()).isNaN();
        assertThat(s.allowedUtilizationOf(without)).isEqualTo(0.3);
        assertThat(s.allowedUtilizationOf(with)).isEqualTo(0.9);
        assertThat(s.retryRatio(without)).isEqualTo(0.2); // below 50%: the default curve's 20%
        assertThat(s.retryRatio(with)).isCloseTo(0.2 - 0.4 / 0.45 * 0.19, offset(1e-12));
    }

    @ParameterizedTest
    @ValueSource(doubles = {-0.1, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY})
    void new_allowedUtilizationNegativeOrInfinite_isRejectedWithTheField(double u) {
        assertThatThrownBy(() -> new Route("m", List.of(), 0, 1, Map.of("a", 1.0), 0, Double.NaN, "", Map.of(), u))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("allowed_utilization: " + u + " (expected: a finite number >= 0, or absent)");
    }

    @Test
    void grouped_keepsItsAllowedUtilization_andTheOlderFactoryHasNone() {
        EngineGroup g = new EngineGroup(Map.of("a", 1.0), SlotTable.of(List.of("a"), new double[] {1}).encode());
        String slots = SlotTable.of(List.of("G"), new double[] {1}).encode();
        Route with = Route.grouped("m", List.of(), 0, 1, new String[] {"G"}, new double[] {1}, new EngineGroup[] {g},
                0, 5, slots, 1.25);
        Route without = Route.grouped("m", List.of(), 0, 1, new String[] {"G"}, new double[] {1},
                new EngineGroup[] {g}, 0, 5, slots);
        assertThat(with.allowedUtilization()).isEqualTo(1.25);
        assertThat(without.allowedUtilization()).isNaN();
        assertThat(with).isNotEqualTo(without);
    }

    @Test
    void weights_fromRanks_actLikeTheSortedMapOfTheSameEntries() {
        SortedEngineIds ids = SortedEngineIds.of(List.of("a", "b", "c", "d"));
        Map<String, Double> w = Route.weights(ids, new int[] {0, 2, 3}, new double[] {0.5, 0.0, 0.25});
        Map<String, Double> plain = new java.util.TreeMap<>(Map.of("a", 0.5, "c", 0.0, "d", 0.25));
        assertThat(w).isEqualTo(plain).containsExactlyEntriesOf(plain);
        assertThat(plain).isEqualTo(w);
        assertThat(w.hashCode()).isEqualTo(plain.hashCode());
        assertThat(w.get("d")).isEqualTo(0.25);
        assertThat(w.get("b")).isNull();
        assertThat(w).isNotEqualTo(Route.weights(ids, new int[] {0, 2, 3}, new double[] {0.5, 0.0, 0.3}));
        Route r = new Route("m", List.of(), 0, 1, w, 0.25, Double.NaN);
        assertThat(r).isEqualTo(new Route("m", List.of(), 0, 1, plain, 0.25, Double.NaN));
        assertThat(r.slotEngines()).containsExactly("a", "d");
        assertThat(r.slotWeights()).containsExactly(0.5, 0.25);
        assertThatThrownBy(() -> w.put("b", 0.1)).isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void weights_fromRanks_badInput_isRejectedWithTheField() {
        SortedEngineIds ids = SortedEngineIds.of(List.of("a", "b"));
        assertThatThrownBy(() -> Route.weights(ids, new int[] {1, 0}, new double[] {0.5, 0.5}))
                .hasMessage("ranks[1]: 0 (expected: ascending, in [0, 2))");
        assertThatThrownBy(() -> Route.weights(ids, new int[] {0}, new double[] {1.5}))
                .hasMessage("weights.a: 1.5 (expected: in [0, 1])");
        assertThatThrownBy(() -> SortedEngineIds.of(List.of("b", "a")))
                .hasMessage("ids[1]: a after b (expected: strictly ascending)");
    }

    @Test
    void engineIds_giveTheRankOfAnId_orMinusOne() {
        SortedEngineIds ids = SortedEngineIds.of(List.of("e1", "e10", "e2"));
        assertThat(ids.rankOf("e1")).isZero();
        assertThat(ids.rankOf("e10")).isEqualTo(1);
        assertThat(ids.rankOf("e2")).isEqualTo(2);
        assertThat(ids.rankOf("e3")).isEqualTo(-1);
        assertThat(ids.rankOf("e0")).isEqualTo(-1);
    }
}
