package dev.sextant.server.control;

import dev.sextant.control.Condition;
import dev.sextant.control.EngineEstimate;
import dev.sextant.control.Estimates;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The loop's estimates as the policy thread took them last: kept for {@code /healthz}, shown per engine in the
 * gauges {@code sextant_control_engine_*}, and each engine's change of condition logged (INFO back to healthy,
 * WARNING otherwise): one line per engine up to {@link #LINES_PER_STEP} changes in one step, beyond that those lines
 * and one line per kind of change with its count, so that a partition between the control plane and a region does not
 * log a line for each of its thousands of engines (their states are in {@code /healthz} and the gauges).
 */
final class EstimateGauges {
    /** The control plane's logger: one name for operators to set, whichever part of it speaks. */
    private static final Logger LOG = Logger.getLogger(ControlPlane.class.getName());

    private final MultiGauge conditionGauge;
    private final MultiGauge healthGauge;
    private final MultiGauge capacityGauge;
    private final MultiGauge slowdownGauge;
    /** The estimates the policy thread took last, for {@code /healthz} and the gauges. */
    private volatile Estimates estimates;
    /** Most engines whose change of condition one step logs a line of its own. */
    static final int LINES_PER_STEP = 20;

    EstimateGauges(MeterRegistry registry) {
        this.conditionGauge = MultiGauge.builder("sextant.control.engine.condition")
                .description("1 for each engine's condition as the control loop judges it, 0 for the others")
                .register(registry);
        this.healthGauge = MultiGauge.builder("sextant.control.engine.health")
                .description("each engine's health as the optimizer gets it: 0 out of service, else as configured")
                .register(registry);
        this.capacityGauge = MultiGauge.builder("sextant.control.engine.capacity.rps")
                .description("each engine's capacity as the control loop estimates it, req/s").register(registry);
        this.slowdownGauge = MultiGauge.builder("sextant.control.engine.slowdown")
                .description("how many times slower than its group's law each engine decodes (1 = as its group)")
                .register(registry);
    }

    /** The estimates taken last; null before the first. */
    Estimates last() {
        return estimates;
    }

    /** Keeps the estimates for {@code /healthz} and the gauges, and logs each engine's change of condition. */
    void take(Estimates now) {
        Estimates before = estimates;
        int changes = 0;
        // "CONDITION (was CONDITION)" → engines beyond the lines of their own, and the first one's reason
        Map<String, int[]> more = new TreeMap<>();
        Map<String, String> example = new TreeMap<>();
        estimates = now;
        List<MultiGauge.Row<?>> conditions = new ArrayList<>();
        List<MultiGauge.Row<?>> health = new ArrayList<>();
        List<MultiGauge.Row<?>> capacity = new ArrayList<>();
        List<MultiGauge.Row<?>> slowdown = new ArrayList<>();
        for (EngineEstimate x : now.engines().values()) {
            for (Condition c : Condition.values()) {
                conditions.add(MultiGauge.Row.of(Tags.of("engine", x.engine(), "condition", ControlPlane.label(c)),
                        x.condition() == c ? 1 : 0));
            }
            health.add(MultiGauge.Row.of(Tags.of("engine", x.engine()), x.health()));
            capacity.add(MultiGauge.Row.of(Tags.of("engine", x.engine()), x.capacityRps()));
            slowdown.add(MultiGauge.Row.of(Tags.of("engine", x.engine()), x.slowdown()));
            EngineEstimate was = before == null ? null : before.engines().get(x.engine());
            if (was != null && was.condition() != x.condition()) {
                Level level = x.condition() == Condition.HEALTHY ? Level.INFO : Level.WARNING;
                if (++changes <= LINES_PER_STEP) {
                    LOG.log(level, "engine " + x.engine() + " " + x.condition() + " (was " + was.condition() + "): "
                            + x.conditionWhy());
                } else {
                    String kind = x.condition() + " (was " + was.condition() + ")";
                    more.computeIfAbsent(kind, k -> new int[1])[0]++;
                    example.putIfAbsent(kind, x.engine() + ": " + x.conditionWhy());
                }
            }
        }
        more.forEach((kind, n) -> LOG.log(kind.startsWith(Condition.HEALTHY + " ") ? Level.INFO : Level.WARNING,
                n[0] + " more engines " + kind + " in this step, not logged each (sextant_control_engine_condition and"
                        + " /healthz have every one); the first: " + example.get(kind)));
        conditionGauge.register(conditions, true);
        healthGauge.register(health, true);
        capacityGauge.register(capacity, true);
        slowdownGauge.register(slowdown, true);
    }
}
