package dev.sextant.snapshot;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
}
