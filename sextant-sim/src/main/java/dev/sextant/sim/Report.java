package dev.sextant.sim;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.HdrHistogram.Histogram;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogarithmicAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.StackedXYAreaRenderer2;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.xy.DefaultTableXYDataset;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * Writes a run's results: {@code summary.json} (the tooling contract), {@code report.md} and
 * {@code report.html} with the same content, PNG plots (JFreeChart, headless) and CSV series.
 */
final class Report {
    private static final int MAX_LINES = 12;

    private final Scenario scenario;
    private final List<Simulator.Run> runs;
    private final long seed;
    private final String file;

    Report(Scenario scenario, List<Simulator.Run> runs, long seed, String file) {
        this.scenario = scenario;
        this.runs = runs;
        this.seed = seed;
        this.file = file;
    }

    void write(Path dir) throws IOException {
        System.setProperty("java.awt.headless", "true");
        writeSummary(dir.resolve("summary.json"));
        List<String> images = new ArrayList<>();
        images.add(cdf(dir, "ttft-cdf.png", "Time to first token (CDF)", true));
        images.add(cdf(dir, "e2e-cdf.png", "End-to-end latency (CDF)", false));
        images.add(overTime(dir, "cache-hit.png", "Prefix cache hit rate", "hit rate", 4, false));
        // log scale: the worst policy's TTFT is often magnitudes above the others', which a linear axis flattens
        images.add(overTime(dir, "ttft-over-time.png", "Mean TTFT of completed requests", "ms (log scale)", 5, true));
        for (Simulator.Run r : runs) {
            images.add(occupancy(dir, r));
            String w = weights(dir, r);
            if (w != null) {
                images.add(w);
            }
            writeCsv(dir, r);
            writeControl(dir, r);
        }
        List<String[]> blocks = blocks(images);
        Files.writeString(dir.resolve("report.md"), markdown(blocks), StandardCharsets.UTF_8);
        Files.writeString(dir.resolve("report.html"), html(blocks), StandardCharsets.UTF_8);
    }

    // ---- summary.json

    static Map<String, Object> summaryJson(Summary s) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ttft_p50_ms", finite(s.ttftP50Ms()));
        m.put("ttft_p99_ms", finite(s.ttftP99Ms()));
        m.put("e2e_p50_ms", finite(s.e2eP50Ms()));
        m.put("e2e_p99_ms", finite(s.e2eP99Ms()));
        m.put("cache_hit_rate", finite(s.cacheHitRate()));
        m.put("shed_fraction", finite(s.shedFraction()));
        m.put("failed", s.failed());
        m.put("retry_amplification", finite(s.retryAmplification()));
        m.put("weight_churn_per_min", finite(s.weightChurnPerMin()));
        m.put("residency_violations", s.residencyViolations());
        return m;
    }

    private static Double finite(double v) {
        return Double.isFinite(v) ? v : null;
    }

    private void writeSummary(Path p) throws IOException {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Simulator.Run r : runs) {
            out.put(r.policy(), summaryJson(r.summary()));
        }
        new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(p.toFile(), out);
    }

    // ---- CSV

    private void writeCsv(Path dir, Simulator.Run r) throws IOException {
        String slug = slug(r.policy());
        Metrics m = r.metrics();
        try (Writer w = Files.newBufferedWriter(dir.resolve("series-" + slug + ".csv"))) {
            w.write("time_s,completed,shed,failed,cache_hit_rate,ttft_mean_ms\n");
            for (double[] row : m.series) {
                w.write(String.format(Locale.ROOT, "%.1f,%d,%d,%d,%s,%s%n", row[0], (long) row[1], (long) row[2],
                        (long) row[3], num(row[4]), num(row[5])));
            }
        }
        try (Writer w = Files.newBufferedWriter(dir.resolve("engines-" + slug + ".csv"))) {
            w.write("time_s,engine,utilization,occupancy,queue,weight,prompt_tokens,cache_hit_rate\n");
            for (int i = 0; i < m.series.size(); i++) {
                double t = m.series.get(i)[0];
                float[] u = m.utilization.get(i);
                float[] occ = m.occupancy.get(i);
                int[] q = m.queue.get(i);
                float[] wt = m.weights.get(i);
                long[] pt = m.promptTokens.get(i);
                float[] hit = m.cacheHits.get(i);
                for (int j = 0; j < u.length; j++) {
                    w.write(String.format(Locale.ROOT, "%.1f,%s,%.4f,%.4f,%d,%s,%d,%s%n", t,
                            r.simulation().engines.get(j).id, u[j], occ[j], q[j], num(wt[j]), pt[j], num(hit[j])));
                }
            }
        }
    }

    private static String num(double v) {
        return Double.isFinite(v) ? String.format(Locale.ROOT, "%.4f", v) : "";
    }

    /** The control loop's steps and estimates, for a policy that has one. */
    private void writeControl(Path dir, Simulator.Run r) throws IOException {
        if (!(r.simulation().policy instanceof SextantPolicy sp)) {
            return;
        }
        String slug = slug(r.policy());
        try (Writer w = Files.newBufferedWriter(dir.resolve("control-" + slug + ".csv"))) {
            w.write("time_s,published,version,gain_ms,threshold_ms,reason\n");
            for (dev.sextant.control.Step st : sp.steps()) {
                w.write(String.format(Locale.ROOT, "%.1f,%s,%s,%s,%s,%s%n", st.atNanos() / 1e9, st.published(),
                        st.snapshot() == null ? "" : st.snapshot().version(), num(st.gainMs()), num(st.thresholdMs()),
                        csv(st.reason())));
            }
        }
        try (Writer w = Files.newBufferedWriter(dir.resolve("estimates-" + slug + ".csv"))) {
            w.write("time_s,engine,condition,capacity_rps,configured_rps,slowdown,batch_slots,evidence,capacity_why,"
                    + "speed_why,condition_why\n");
            for (dev.sextant.control.Step st : sp.steps()) {
                for (dev.sextant.control.EngineEstimate e : st.estimates().engines().values()) {
                    w.write(String.format(Locale.ROOT, "%.1f,%s,%s,%.3f,%.3f,%.3f,%.1f,%.3f,%s,%s,%s%n",
                            st.atNanos() / 1e9, e.engine(), e.condition(), e.capacityRps(), e.configuredRps(),
                            e.slowdown(), e.batchSlots(), e.evidence(), csv(e.capacityWhy()), csv(e.speedWhy()),
                            csv(e.conditionWhy())));
                }
            }
        }
        try (Writer w = Files.newBufferedWriter(dir.resolve("demand-" + slug + ".csv"))) {
            w.write("time_s,gateway,class,demand_rps,configured_rps,standard_error,why\n");
            for (dev.sextant.control.Step st : sp.steps()) {
                st.estimates().demand().forEach((g, row) -> row.forEach((c, d) -> {
                    try {
                        w.write(String.format(Locale.ROOT, "%.1f,%s,%s,%.3f,%.3f,%s,%s%n", st.atNanos() / 1e9, g, c,
                                d.rps(), d.configuredRps(), num(d.standardError()), csv(d.why())));
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }));
            }
        }
    }

    private static String csv(String text) {
        return text == null ? "" : "\"" + text.replace("\"", "\"\"") + "\"";
    }

    static String slug(String policy) {
        return policy.replaceAll("[^A-Za-z0-9.-]+", "-").replaceAll("-+$", "");
    }

    // ---- plots

    /** Lines, one per series, on linear or logarithmic axes. */
    private static JFreeChart chart(String title, String x, String y, XYSeriesCollection data, boolean logX,
                                    boolean logY) {
        XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, false);
        for (int i = 0; i < data.getSeriesCount(); i++) {
            renderer.setSeriesStroke(i, new BasicStroke(1.6f));
        }
        NumberAxis yAxis = axis(y, logY);
        yAxis.setAutoRangeIncludesZero(false);
        return chart(title, new XYPlot(data, axis(x, logX), yAxis, renderer));
    }

    private static NumberAxis axis(String label, boolean log) {
        if (!log) {
            return new NumberAxis(label);
        }
        LogarithmicAxis axis = new LogarithmicAxis(label);
        axis.setAllowNegativesFlag(false);
        return axis;
    }

    private static JFreeChart chart(String title, XYPlot plot) {
        plot.setBackgroundPaint(Color.WHITE);
        plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
        plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
        JFreeChart c = new JFreeChart(title, JFreeChart.DEFAULT_TITLE_FONT, plot, true);
        c.setBackgroundPaint(Color.WHITE);
        return c;
    }

    private static String save(Path dir, String name, JFreeChart c) throws IOException {
        ChartUtils.saveChartAsPNG(dir.resolve(name).toFile(), c, 960, 540);
        return name;
    }

    private String cdf(Path dir, String name, String title, boolean ttft) throws IOException {
        XYSeriesCollection data = new XYSeriesCollection();
        for (Simulator.Run r : runs) {
            Histogram h = ttft ? r.metrics().ttft : r.metrics().e2e;
            XYSeries s = new XYSeries(r.policy(), false, true);
            if (h.getTotalCount() > 0) {
                for (double q = 0.5; q <= 99.95; q += q < 90 ? 0.5 : 0.1) {
                    s.add(Math.max(0.01, h.getValueAtPercentile(q) / 1000.0), q / 100);
                }
            }
            data.addSeries(s);
        }
        return save(dir, name, chart(title, "ms (log scale)", "fraction of completed requests", data, true,
                false));
    }

    /** Column {@code column} of every policy's series over time; {@code logY} where policies differ by magnitudes. */
    private String overTime(Path dir, String name, String title, String y, int column, boolean logY)
            throws IOException {
        XYSeriesCollection data = new XYSeriesCollection();
        for (Simulator.Run r : runs) {
            XYSeries s = new XYSeries(r.policy(), false, true);
            for (double[] row : r.metrics().series) {
                if (Double.isFinite(row[column])) {
                    s.add(row[0], row[column]);
                }
            }
            data.addSeries(s);
        }
        return save(dir, name, chart(title, "simulated time (s)", y, data, false, logY));
    }

    /**
     * How full each engine's batch was: mean running sequences / {@code max_seqs} per interval. (Its busy fraction
     * says little: a step runs whenever one sequence does, so any engine with work reads ≈ 1.)
     */
    private String occupancy(Path dir, Simulator.Run r) throws IOException {
        Metrics m = r.metrics();
        int n = r.simulation().engineCount;
        XYSeriesCollection data = new XYSeriesCollection();
        if (n <= MAX_LINES) {
            for (int j = 0; j < n; j++) {
                XYSeries s = new XYSeries(r.simulation().engines.get(j).id, false, true);
                for (int i = 0; i < m.series.size(); i++) {
                    s.add(m.series.get(i)[0], m.occupancy.get(i)[j]);
                }
                data.addSeries(s);
            }
        } else {
            XYSeries mean = new XYSeries("mean over engines", false, true);
            XYSeries max = new XYSeries("max", false, true);
            XYSeries min = new XYSeries("min", false, true);
            for (int i = 0; i < m.series.size(); i++) {
                float[] u = m.occupancy.get(i);
                double sum = 0;
                double hi = 0;
                double lo = Double.MAX_VALUE;
                for (float v : u) {
                    sum += v;
                    hi = Math.max(hi, v);
                    lo = Math.min(lo, v);
                }
                double t = m.series.get(i)[0];
                mean.add(t, sum / n);
                max.add(t, hi);
                min.add(t, lo);
            }
            data.addSeries(mean);
            data.addSeries(max);
            data.addSeries(min);
        }
        return save(dir, "occupancy-" + slug(r.policy()) + ".png",
                chart("Batch occupancy (mean running sequences / max_seqs): " + r.policy(), "simulated time (s)",
                        "occupancy", data, false, false));
    }

    /**
     * The weights of class 0 at gateway cluster 0 as stacked bands, one per engine (beyond {@code MAX_LINES}, the
     * rest in one band): engines with the same weight, which as lines would hide each other, show as bands of the same
     * height, and the stack's top is the fraction routed (below 1 where the policy sheds).
     */
    private String weights(Path dir, Simulator.Run r) throws IOException {
        Metrics m = r.metrics();
        Simulation sim = r.simulation();
        if (m.weights.isEmpty() || Float.isNaN(firstWeight(m))) {
            return null;
        }
        int[] allowed = sim.allowed[0];
        int bands = Math.min(allowed.length, MAX_LINES);
        boolean rest = allowed.length > bands;
        int own = rest ? bands - 1 : bands;
        DefaultTableXYDataset data = new DefaultTableXYDataset();
        for (int b = 0; b < bands; b++) {
            String name = b < own ? sim.engines.get(allowed[b]).id : (allowed.length - own) + " other engines";
            XYSeries s = new XYSeries(name, true, false);
            for (int i = 0; i < m.series.size(); i++) {
                double w = 0;
                for (int k = b; k < (b < own ? b + 1 : allowed.length); k++) {
                    float x = m.weights.get(i)[allowed[k]];
                    w += Float.isNaN(x) ? 0 : x;
                }
                s.add(m.series.get(i)[0], w);
            }
            data.addSeries(s);
        }
        String title = "Weights at " + sim.topology.gatewayClusters().get(0).id() + " for class "
                + sim.topology.classes().get(0).id() + " (stacked): " + r.policy();
        XYPlot plot = new XYPlot(data, new NumberAxis("simulated time (s)"), new NumberAxis("weight (stacked)"),
                new StackedXYAreaRenderer2());
        return save(dir, "weights-" + slug(r.policy()) + ".png", chart(title, plot));
    }

    /** "1 engine", "2 engines", "1 class", "3 classes". */
    static String count(int n, String noun) {
        return n + " " + (n == 1 ? noun : noun.endsWith("s") ? noun + "es" : noun + "s");
    }

    private static float firstWeight(Metrics m) {
        for (float w : m.weights.get(0)) {
            if (!Float.isNaN(w)) {
                return w;
            }
        }
        return Float.NaN;
    }

    // ---- report text: blocks rendered to Markdown and HTML

    private List<String[]> blocks(List<String> images) {
        List<String[]> b = new ArrayList<>();
        var t = scenario.topology();
        b.add(new String[] {"h1", "Simulation: " + scenario.name()});
        if (!scenario.description().isEmpty()) {
            b.add(new String[] {"p", scenario.description()});
        }
        long requests = runs.isEmpty() ? 0 : runs.get(0).metrics().generated;
        b.add(new String[] {"p", String.format(Locale.ROOT,
                "Scenario `%s`, seed %d: %s, %s, %s, %s; "
                        + "%.0f s of traffic (then in-flight requests drain), %,d requests under the first policy. "
                        + "Reproduce with `bin/sextant simulate %s --seed %d --out DIR`.",
                file, seed, count(t.gatewayClusters().size(), "gateway cluster"),
                count(t.engineClusters().size(), "engine cluster"), count(t.engines().size(), "engine"),
                count(t.classes().size(), "class"), scenario.durationMs() / 1000, requests, file, seed)});
        b.add(new String[] {"h2", "Results"});
        List<String> header = List.of("policy", "TTFT p50 ms", "TTFT p99 ms", "E2E p50 ms", "E2E p99 ms",
                "cache hit", "shed", "failed", "retry ampl.", "churn /min/gw", "residency viol.", "requests",
                "wall s");
        List<List<String>> rows = new ArrayList<>();
        for (Simulator.Run r : runs) {
            Summary s = r.summary();
            rows.add(List.of(r.policy(), f0(s.ttftP50Ms()), f0(s.ttftP99Ms()), f0(s.e2eP50Ms()), f0(s.e2eP99Ms()),
                    pct(s.cacheHitRate()), pct(s.shedFraction()), Long.toString(s.failed()),
                    String.format(Locale.ROOT, "%.3f", s.retryAmplification()),
                    String.format(Locale.ROOT, "%.3f", s.weightChurnPerMin()), Long.toString(s.residencyViolations()),
                    String.format(Locale.ROOT, "%,d", r.metrics().generated),
                    String.format(Locale.ROOT, "%.1f", r.wallSeconds())));
        }
        b.add(table(header, rows));
        for (Simulator.Run r : runs) {
            if (r.simulation().policy instanceof SextantPolicy sp) {
                b.add(new String[] {"p", "Control plane of `" + r.policy() + "`: " + sp.controlPlaneSummary() + "."});
            }
        }
        b.add(new String[] {"p", "TTFT and E2E are seen by the client (network round trip included) over completed "
                + "requests. Cache hit = prompt tokens served from prefix caches / prompt tokens admitted. "
                + "Churn = Σ|Δw| per minute per gateway cluster (0 for policies without weights). Failed = errors "
                + "the client saw (crash mid-stream, unreachable after retries, client timeout)."});
        for (Simulator.Run r : runs) {
            if (r.metrics().unfinished() > 0) {
                b.add(new String[] {"p", String.format(Locale.ROOT, "`%s`: %,d requests were still in flight %.0f s "
                        + "after the traffic ended; the run stopped there and counts them as failed.", r.policy(),
                        r.metrics().unfinished(), Simulation.MAX_DRAIN_MS / 1000)});
            }
        }
        if (t.classes().size() > 1 && t.classes().size() <= 16) {
            b.add(new String[] {"h2", "By class: TTFT p50 / p99 ms, shed"});
            List<String> h = new ArrayList<>();
            h.add("policy");
            t.classes().forEach(c -> h.add(c.id() + " (prio " + c.priority() + ")"));
            List<List<String>> rs = new ArrayList<>();
            for (Simulator.Run r : runs) {
                List<String> row = new ArrayList<>();
                row.add(r.policy());
                for (int k = 0; k < t.classes().size(); k++) {
                    Histogram hh = r.metrics().ttftByClass[k];
                    long gen = r.metrics().generatedByClass[k];
                    row.add(f0(Metrics.ms(hh, 50)) + " / " + f0(Metrics.ms(hh, 99)) + ", "
                            + pct(gen == 0 ? Double.NaN : (double) r.metrics().shedByClass[k] / gen));
                }
                rs.add(row);
            }
            b.add(table(h, rs));
        }
        if (t.engines().size() <= 16) {
            b.add(new String[] {"h2", "By engine: share of the prompt tokens, cache hit"});
            b.add(new String[] {"p", "Over the run, each engine's part of all prompt tokens admitted and the share "
                    + "of its own served from its prefix cache: an engine given more conversations than its cache "
                    + "holds between their turns keeps fewer of them."});
            List<String> h = new ArrayList<>();
            h.add("policy");
            t.engines().forEach(e -> h.add(e.id()));
            List<List<String>> rs = new ArrayList<>();
            for (Simulator.Run r : runs) {
                long all = 0;
                for (EngineSim e : r.simulation().engines) {
                    all += e.promptTokens;
                }
                List<String> row = new ArrayList<>();
                row.add(r.policy());
                for (EngineSim e : r.simulation().engines) {
                    row.add(pct(all == 0 ? Double.NaN : (double) e.promptTokens / all) + ", "
                            + pct(e.promptTokens == 0 ? Double.NaN : (double) e.savedTokens / e.promptTokens));
                }
                rs.add(row);
            }
            b.add(table(h, rs));
        }
        b.add(new String[] {"h2", "Plots"});
        for (String img : images) {
            b.add(new String[] {"img", img});
        }
        b.add(new String[] {"h2", "Files"});
        b.add(new String[] {"p", "`summary.json` (per policy, the measures above), `series-POLICY.csv` (per sample "
                + "interval: completions, sheds, failures, cache hit rate, mean TTFT), `engines-POLICY.csv` (per "
                + "sample and engine: busy fraction, queue length, weight at the first gateway cluster for the "
                + "first class, prompt tokens admitted and the share of them served from its prefix cache); for "
                + "`sextant`, `control-sextant.csv` (every step of the control loop: published or not, and why), "
                + "`estimates-sextant.csv` (at every step, each engine's condition, estimated capacity, slow-down "
                + "and batch, with the evidence) and `demand-sextant.csv` (the demand it planned "
                + "for, per gateway cluster and class)."});
        return b;
    }

    private static String[] table(List<String> header, List<List<String>> rows) {
        String[] t = new String[1 + header.size() * (rows.size() + 1) + 1];
        t[0] = "table";
        t[1] = Integer.toString(header.size());
        int i = 2;
        for (String h : header) {
            t[i++] = h;
        }
        for (List<String> r : rows) {
            for (String c : r) {
                t[i++] = c;
            }
        }
        return java.util.Arrays.copyOf(t, i);
    }

    private static String f0(double v) {
        return Double.isFinite(v) ? String.format(Locale.ROOT, "%.0f", v) : "–";
    }

    private static String pct(double v) {
        return Double.isFinite(v) ? String.format(Locale.ROOT, "%.1f%%", 100 * v) : "–";
    }

    private static String markdown(List<String[]> blocks) {
        StringBuilder sb = new StringBuilder();
        for (String[] b : blocks) {
            switch (b[0]) {
                case "h1" -> sb.append("# ").append(b[1]).append("\n\n");
                case "h2" -> sb.append("## ").append(b[1]).append("\n\n");
                case "p" -> sb.append(b[1]).append("\n\n");
                case "img" -> sb.append("![").append(b[1]).append("](").append(b[1]).append(")\n\n");
                case "table" -> {
                    int cols = Integer.parseInt(b[1]);
                    for (int i = 2; i < b.length; i++) {
                        int c = (i - 2) % cols;
                        sb.append(c == 0 ? "| " : " ").append(b[i].replace("|", "\\|")).append(" |");
                        if (c == cols - 1) {
                            sb.append('\n');
                            if (i - 2 == cols - 1) {
                                sb.append("|").append(" --- |".repeat(cols)).append('\n');
                            }
                        }
                    }
                    sb.append('\n');
                }
                default -> throw new IllegalStateException(b[0]);
            }
        }
        return sb.toString();
    }

    private static String esc(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }

    private static String inline(String s) {
        return esc(s).replaceAll("`([^`]*)`", "<code>$1</code>");
    }

    private static String html(List<String[]> blocks) {
        StringBuilder sb = new StringBuilder("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
        sb.append(esc(blocks.get(0)[1])).append("</title><style>body{font-family:sans-serif;max-width:1100px;"
                + "margin:2em auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;"
                + "text-align:right}td:first-child,th:first-child{text-align:left}img{max-width:100%}</style>"
                + "</head><body>\n");
        for (String[] b : blocks) {
            switch (b[0]) {
                case "h1" -> sb.append("<h1>").append(esc(b[1])).append("</h1>\n");
                case "h2" -> sb.append("<h2>").append(esc(b[1])).append("</h2>\n");
                case "p" -> sb.append("<p>").append(inline(b[1])).append("</p>\n");
                case "img" -> sb.append("<p><img src=\"").append(esc(b[1])).append("\" alt=\"").append(esc(b[1]))
                        .append("\"></p>\n");
                case "table" -> {
                    int cols = Integer.parseInt(b[1]);
                    sb.append("<table>\n");
                    for (int i = 2; i < b.length; i++) {
                        int c = (i - 2) % cols;
                        boolean head = i - 2 < cols;
                        if (c == 0) {
                            sb.append("<tr>");
                        }
                        sb.append(head ? "<th>" : "<td>").append(esc(b[i])).append(head ? "</th>" : "</td>");
                        if (c == cols - 1) {
                            sb.append("</tr>\n");
                        }
                    }
                    sb.append("</table>\n");
                }
                default -> throw new IllegalStateException(b[0]);
            }
        }
        return sb.append("</body></html>\n").toString();
    }
}
