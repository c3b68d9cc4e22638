package dev.sextant.topology;

import dev.sextant.snapshot.RetryBudget;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TopologyTest {
    static final RetryBudget TIGHT = new RetryBudget(List.of(new RetryBudget.Point(0.3, 0.1),
            new RetryBudget.Point(0.8, 0.0)), 0.5);

    static Topology small() {
        return new Topology(List.of(new GatewayCluster("g", "r")), List.of(new EngineCluster("c", "r")),
                Map.of("g", Map.of("c", 1.0)), List.of(new Model("m", 10)),
                List.of(new Engine("e", "c", "http://127.0.0.1:9000", List.of("m"), 10,
                        new ParametricProfile(100, 10, 1), 1.0)),
                List.of(new TrafficClass("k", "m", List.of(), 0)), Map.of("g", Map.of("k", 5.0)), 0.1,
                Topology.DEFAULT_AFFINITY_DISCOUNT_MS);
    }

    @Test
    void new_positional_hasTheDefaultRetryBudget() {
        assertThat(small().retryBudget()).isEqualTo(RetryBudget.DEFAULT);
    }

    @Test
    void withDemandEnginesAndRetryBudget_carryTheRetryBudget() {
        Topology t = small().withRetryBudget(TIGHT);
        assertThat(t.retryBudget()).isEqualTo(TIGHT);
        assertThat(t.withDemand(Map.of("g", Map.of("k", 7.0))).retryBudget()).isEqualTo(TIGHT);
        assertThat(t.withEngines(t.engines()).retryBudget()).isEqualTo(TIGHT);
        assertThat(t).isNotEqualTo(small());
        assertThat(t.withRetryBudget(RetryBudget.DEFAULT)).isEqualTo(small());
    }

    @Test
    void new_withoutRetryBudget_isRejectedNamingTheField() {
        assertThatThrownBy(() -> small().withRetryBudget(null))
                .hasMessage("retry_budget: missing (expected: a retry budget, or the default)");
    }

    @Test
    void engine_idWithAControlCharacter_isRejectedNamingIt() {
        assertThatThrownBy(() -> new Engine("east\r\n1", "c", "http://e", List.of("m"), 10,
                new ParametricProfile(100, 20, 1), 1))
                .hasMessage("id: 'east\\u000d…' (expected: no control characters)");
        assertThatThrownBy(() -> new GatewayCluster("g", "us\u0000east"))
                .hasMessage("region: 'us\\u0000…' (expected: no control characters)");
    }
}
