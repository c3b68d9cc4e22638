package dev.sextant.server.control;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sextant.config.Json;
import dev.sextant.control.DemandEstimate;
import dev.sextant.control.EngineEstimate;
import dev.sextant.control.Estimates;
import dev.sextant.control.Explanations;
import dev.sextant.control.LinkEstimate;
import dev.sextant.control.ModelEstimate;
import dev.sextant.control.Step;
import dev.sextant.policy.Explanation;
import dev.sextant.server.internal.Http;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The estimates behind an explanation: for the engines the class may use, their condition, health, capacity and
 * speed with the evidence for each; the demand and round trips of the explained gateway cluster; the models; and the
 * control loop's last step. The control plane's {@code /v1/explain} and {@code bin/sextant explain} (which has no
 * running loop, and shows a fresh one's: everything as configured) add the same section, so that the two read
 * alike.
 */
public final class ExplainEstimates {
    private ExplainEstimates() {
    }

    /** The engines an explanation names (those the class may use), in its order. */
    public static List<String> engines(Explanation x) {
        return x.engines().stream().map(Explanation.EngineLine::engine).toList();
    }

    /**
     * The section as text, to follow the explanation's own: a blank line, a heading, then
     * {@link Explanations#lines}, with each heading's entries sorted (by engine, gateway cluster and class).
     */
    public static String text(Explanation x, Estimates e, Step last) {
        List<String> lines = Explanations.lines(e, last, engines(x), x.gateway());
        StringBuilder b = new StringBuilder("\nEstimates behind it (docs/control-loop.md):\n");
        List<String> entries = new ArrayList<>();
        for (String line : lines) {
            if (line.startsWith(" ")) {
                entries.add(line);
                continue;
            }
            flush(b, entries);
            b.append(line).append('\n');
        }
        flush(b, entries);
        return b.toString();
    }

    private static void flush(StringBuilder b, List<String> entries) {
        entries.sort(null);
        entries.forEach(l -> b.append(l).append('\n'));
        entries.clear();
    }

    /** The explanation's JSON with an {@code estimates} object added. */
    public static String json(Explanation x, Estimates e, Step last) {
        try {
            ObjectNode root = (ObjectNode) Http.JSON.readTree(Json.write(x));
            root.set("estimates", Http.JSON.readTree(Json.write(view(x, e, last))));
            return Json.write(root);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex); // our own JSON, read back
        }
    }

    /**
     * The {@code estimates} object of an explanation.
     *
     * @param lastStep          the loop's last step, or null
     * @param engines           engine id → estimate, for the engines the class may use
     * @param demand            class id → the demand planned for at the explained gateway cluster
     * @param roundTrips        engine cluster id → the round trip from the explained gateway cluster
     * @param models            model id → output length
     * @param affinityDiscountMs the prefill time a request saves on the engine holding its KV cache, ms
     * @param affinityWhy       its evidence
     */
    record View(StepView lastStep, Map<String, EngineView> engines, Map<String, DemandEstimate> demand,
                Map<String, LinkEstimate> roundTrips, Map<String, ModelEstimate> models, double affinityDiscountMs,
                String affinityWhy) {
    }

    /**
     * One engine's estimate.
     *
     * @param condition     {@code healthy}, {@code slow}, {@code unproven}, {@code failing} or {@code down}
     * @param health        what the optimizer gets, in [0, 1]: 0 out of service
     * @param capacityRps   estimated capacity, req/s
     * @param configuredRps the topology's capacity_rps
     * @param slowdown      how many times slower than its group's law it decodes
     * @param batchSlots    requests its batch holds, as estimated
     * @param evidence      how much the evidence weighs against the configured profile, in [0, 1)
     */
    record EngineView(String condition, double health, double capacityRps, double configuredRps, double slowdown,
                      double batchSlots, double evidence, String capacityWhy, String speedWhy, String conditionWhy) {
        static EngineView of(EngineEstimate x) {
            return new EngineView(ControlPlane.label(x.condition()), x.health(), x.capacityRps(), x.configuredRps(),
                    x.slowdown(), x.batchSlots(), x.evidence(), x.capacityWhy(), x.speedWhy(), x.conditionWhy());
        }
    }

    /**
     * The loop's last step.
     *
     * @param published   true when it published its snapshot
     * @param version     the version it published (null when it published none)
     * @param reason      why it published or not
     * @param gainMs      the expected latency saved per request, ms (null for the first, or when a change is
     *                    published whatever the gain)
     * @param thresholdMs the gain a publication needs, ms
     */
    record StepView(boolean published, Long version, String reason, double gainMs, double thresholdMs) {
        static StepView of(Step s) {
            return s == null ? null : new StepView(s.published(), s.published() ? s.snapshot().version() : null,
                    s.reason(), s.gainMs(), s.thresholdMs());
        }
    }

    static View view(Explanation x, Estimates e, Step last) {
        Map<String, EngineView> engines = new TreeMap<>();
        for (String id : engines(x)) {
            EngineEstimate est = e.engines().get(id);
            if (est != null) {
                engines.put(id, EngineView.of(est));
            }
        }
        return new View(StepView.of(last), engines, new TreeMap<>(e.demand().getOrDefault(x.gateway(), Map.of())),
                new TreeMap<>(e.links().getOrDefault(x.gateway(), Map.of())), new TreeMap<>(e.models()),
                e.affinityDiscountMs(), e.affinityWhy());
    }
}
