package dev.sextant.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.snapshot.Snapshot;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CompareTableTest {

    @Test
    void render_infiniteMeanWithoutOverload_isUnboundedWithItsReason() {
        Map<String, Object> results = new LinkedHashMap<>();
        results.put("optimal", SextantTest.snapshot("optimal", 88, 4500, 1e-7));
        results.put("proportional", SextantTest.snapshot("proportional", 89, Double.POSITIVE_INFINITY, Double.NaN));

        String[] lines = CompareTable.render(results).split("\n");

        assertThat(lines[2]).matches("proportional\\s+unbounded \\(mean latency Infinity\\)\\s+98\\.9%\\s+0\\.0\\s+-\\s+unbounded");
    }

    @Test
    void render_optimalFailed_leavesRatiosOpen() {
        Map<String, Object> results = new LinkedHashMap<>();
        results.put("optimal", new IllegalStateException("did not converge"));
        results.put("waterfall", SextantTest.snapshot("waterfall", 90, 4950, Double.NaN));

        String[] lines = CompareTable.render(results).split("\n");

        assertThat(lines[1]).isEqualTo("optimal    failed: did not converge");
        assertThat(lines[2]).matches("waterfall\\s+4950\\.0\\s+100\\.0%\\s+0\\.0\\s+-\\s+-");
    }

    @Test
    void overloadedEngine_loadAtCapacityUpToRounding_isNotOverload() {
        Snapshot atCapacity = SextantTest.snapshot("optimal", 90 * (1 + 1e-12), 4500, 1e-7);
        Snapshot over = SextantTest.snapshot("nearest", 90.5, 4500, 1e-7);

        assertThat(CompareTable.overloadedEngine(atCapacity)).isNull();
        assertThat(CompareTable.overloadedEngine(over)).isEqualTo("east-1");
    }
}
