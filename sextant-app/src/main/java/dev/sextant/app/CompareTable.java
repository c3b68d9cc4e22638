package dev.sextant.app;

import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Snapshot;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The table {@code sextant compare} prints: one row per policy with its mean latency, its busiest
 * engine's utilization, what it sheds, the optimizer's certified gap, and its latency relative to the
 * optimal policy's.
 */
final class CompareTable {
    /** Load may exceed effective capacity by this relative amount before it counts as overload (rounding). */
    static final double OVERLOAD_TOLERANCE = 1e-9;

    private static final List<String> HEADER = List.of("policy", "mean latency ms", "worst utilization", "shed req/s",
            "gap", "vs optimal");

    private CompareTable() {
    }

    /**
     * @param results policy name → its {@link Snapshot}, or the exception it failed with, in row order;
     *                the row named {@code optimal}, when it solved, is the reference of the last column
     */
    static String render(Map<String, Object> results) {
        double optimalMean = results.get("optimal") instanceof Snapshot s && bounded(s) ? s.objective().meanLatencyMs()
                : Double.NaN;
        List<List<String>> rows = new ArrayList<>();
        rows.add(HEADER);
        results.forEach((name, r) -> rows.add(r instanceof Snapshot s ? row(name, s, optimalMean)
                : List.of(name, "failed: " + ((Exception) r).getMessage(), "", "", "", "")));
        int[] width = new int[HEADER.size()];
        for (List<String> row : rows) {
            for (int i = 0; i < row.size(); i++) {
                width[i] = Math.max(width[i], row.get(i).length());
            }
        }
        StringBuilder out = new StringBuilder();
        for (List<String> row : rows) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < row.size(); i++) {
                line.append(String.format(Locale.ROOT, "%-" + width[i] + "s", row.get(i)));
                if (i < row.size() - 1) {
                    line.append("  ");
                }
            }
            out.append(line.toString().stripTrailing()).append('\n');
        }
        return out.toString();
    }

    private static List<String> row(String name, Snapshot s, double optimalMean) {
        String over = overloadedEngine(s);
        double mean = s.objective().meanLatencyMs();
        String latency = over != null ? "unbounded (engine " + over + " over capacity)"
                : Double.isFinite(mean) ? fmt("%.1f", mean) : "unbounded (mean latency " + mean + ")";
        String ratio = over != null || !Double.isFinite(mean) ? "unbounded"
                : Double.isFinite(optimalMean) && optimalMean > 0 ? fmt("%.2fx", mean / optimalMean) : "-";
        double gap = s.objective().gapRelative();
        String gapText = name.equals("optimal") && !Double.isNaN(gap) ? fmt("%.1e", gap) : "-";
        return List.of(name, latency, fmt("%.1f%%", 100 * worstUtilization(s)), fmt("%.1f", s.objective().shedRps()),
                gapText, ratio);
    }

    private static boolean bounded(Snapshot s) {
        return overloadedEngine(s) == null && Double.isFinite(s.objective().meanLatencyMs());
    }

    /** The first engine (by id) whose load exceeds its effective capacity, or null. */
    static String overloadedEngine(Snapshot s) {
        for (Map.Entry<String, EngineState> e : s.engines().entrySet()) {
            EngineState st = e.getValue();
            if (st.loadRps() > st.effectiveCapacityRps() * (1 + OVERLOAD_TOLERANCE)) {
                return e.getKey();
            }
        }
        return null;
    }

    /** Max over engines of load / effective capacity (infinite for load on an engine with none). */
    static double worstUtilization(Snapshot s) {
        double worst = 0;
        for (EngineState st : s.engines().values()) {
            double u = st.loadRps() == 0 ? 0 : st.loadRps() / st.effectiveCapacityRps();
            worst = Math.max(worst, u);
        }
        return worst;
    }

    private static String fmt(String format, double v) {
        return String.format(Locale.ROOT, format, v);
    }
}
