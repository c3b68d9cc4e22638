package dev.sextant.server.control;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.control.Condition;
import dev.sextant.control.EngineEstimate;
import dev.sextant.control.Estimates;
import dev.sextant.server.gateway.LogCapture;
import dev.sextant.topology.ParametricProfile;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Each engine's change of condition is logged, and a step that changes thousands logs a bounded number of lines. */
class EstimateGaugesTest {

    @Test
    void take_aFewChanges_logsALineForEach() {
        EstimateGauges gauges = new EstimateGauges(new SimpleMeterRegistry());
        gauges.take(estimates(30, 0));
        try (LogCapture log = new LogCapture()) {
            gauges.take(estimates(30, 3));
            assertThat(conditionLines(log)).hasSize(3)
                    .allSatisfy(l -> assertThat(l).contains("UNPROVEN (was HEALTHY): its metrics do not answer"));
        }
    }

    @Test
    void take_thousandsOfChanges_logsTheFirstAndOneLineForTheRest() {
        EstimateGauges gauges = new EstimateGauges(new SimpleMeterRegistry());
        gauges.take(estimates(4096, 0));
        try (LogCapture log = new LogCapture()) {
            gauges.take(estimates(4096, 4096)); // the control plane cut off from every engine at once
            List<String> lines = conditionLines(log);
            assertThat(lines).hasSize(EstimateGauges.LINES_PER_STEP + 1);
            assertThat(lines.get(lines.size() - 1)).contains((4096 - EstimateGauges.LINES_PER_STEP)
                    + " more engines UNPROVEN (was HEALTHY) in this step").contains("its metrics do not answer");
        }
        try (LogCapture log = new LogCapture()) {
            gauges.take(estimates(4096, 0)); // and back: the same at INFO
            assertThat(conditionLines(log)).hasSize(EstimateGauges.LINES_PER_STEP + 1)
                    .last().asString().contains("more engines HEALTHY (was UNPROVEN)");
        }
    }

    private static List<String> conditionLines(LogCapture log) {
        return log.lines().stream().filter(l -> l.contains("(was ")).toList();
    }

    /** {@code n} engines, the first {@code unproven} of them unproven, the rest healthy. */
    private static Estimates estimates(int n, int unproven) {
        Map<String, EngineEstimate> engines = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            String id = String.format("e%04d", i);
            boolean out = i < unproven;
            engines.put(id, new EngineEstimate(id, "g", out ? Condition.UNPROVEN : Condition.HEALTHY, out ? 0 : 1, 10,
                    10, new ParametricProfile(20, 5, 1), 20, 1, 8, 0, "as configured", "not judged yet",
                    out ? "its metrics do not answer (Connection refused)" : "scrapes answer"));
        }
        return new Estimates(0, engines, Map.of(), Map.of(), Map.of(), 25, "as configured");
    }
}
