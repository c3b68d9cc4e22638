package dev.sextant.control;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The control loop's estimates and decisions as an operator reads them: every estimate with its evidence and its
 * prior, every penalty with its reason and what will lift it, and why the last snapshot was or was not published.
 * Plain text lines; the control plane's {@code /v1/explain} and {@code bin/sextant explain} print them.
 */
public final class Explanations {
    private Explanations() {
    }

    /**
     * The lines for the engines {@code engineIds} (all of them when null), the demand of {@code gateway} (every
     * gateway cluster when null), its round trips, the models, the affinity credit and the last step.
     */
    public static List<String> lines(Estimates e, Step last, List<String> engineIds, String gateway) {
        List<String> out = new ArrayList<>();
        if (last != null) {
            out.add("Last step: " + (last.published() ? "published snapshot " + last.snapshot().version() + ": "
                    : "not published: ") + last.reason() + ".");
        }
        out.add("Engines:");
        for (EngineEstimate x : e.engines().values()) {
            if (engineIds == null || engineIds.contains(x.engine())) {
                out.add("  " + engine(x));
            }
        }
        out.add("Demand:");
        e.demand().forEach((g, row) -> {
            if (gateway == null || gateway.equals(g)) {
                row.forEach((c, d) -> out.add(String.format(Locale.ROOT, "  %s/%s: %.1f req/s%s — %s", g, c, d.rps(),
                        Double.isNaN(d.standardError()) ? "" : String.format(Locale.ROOT, " (± %.1f)", d.standardError()),
                        d.why())));
            }
        });
        out.add("Round trips:");
        e.links().forEach((g, row) -> {
            if (gateway == null || gateway.equals(g)) {
                row.forEach((c, l) -> out.add("  " + g + " → " + c + ": " + (l.reachable()
                        ? String.format(Locale.ROOT, "%.1f ms", l.ms()) : "unreachable") + " — " + l.why()));
            }
        });
        out.add("Models:");
        for (Map.Entry<String, ModelEstimate> m : e.models().entrySet()) {
            out.add("  " + m.getKey() + ": " + m.getValue().outputTokens() + " output tokens — " + m.getValue().why());
        }
        out.add("Affinity credit: " + e.affinityWhy());
        return out;
    }

    /**
     * One engine on one line: "east-2 SLOW: capacity 31.0 req/s, estimated from 640 requests over 12 min; …;
     * configured 60.0. decodes 4.0× slower than its group (…); recovers below 1.2×".
     */
    public static String engine(EngineEstimate x) {
        return String.format(Locale.ROOT, "%s %s (health %.2f): %s. %s. Last speed judgement: %s.", x.engine(),
                x.condition(), x.health(), x.capacityWhy(), capitalized(x.conditionWhy()), x.speedWhy());
    }

    private static String capitalized(String s) {
        return s == null || s.isEmpty() ? "" : Character.toUpperCase(s.charAt(0)) + s.substring(1);
    }

    /** A rate in req/s as explanations write it: three significant figures, at most two decimals. */
    static String rps(double v) {
        return v >= 100 ? String.format(Locale.ROOT, "%.0f", v) : v >= 10 ? String.format(Locale.ROOT, "%.1f", v)
                : String.format(Locale.ROOT, "%.2f", v);
    }
}
