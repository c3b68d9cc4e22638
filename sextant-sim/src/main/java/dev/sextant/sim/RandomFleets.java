package dev.sextant.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Scenarios of fleets nobody wrote by hand (docs/evaluation.md, "Random fleets"): fleet {@code i} is drawn from a
 * stream seeded by {@code i} alone, so the same number always gives the same file. Each has two or three regions (a
 * gateway cluster and an engine cluster in each, 1–3 ms within a region, 10–80 ms between), two to six engines per
 * cluster of one or two of three kinds of GPU, one model, one class, a workload and an arrival shape drawn from a few
 * common ones, a demand of 35–88% of what the engines carry split unevenly over the gateways, now and then engines
 * rated wrongly in the file, and up to two faults of any kind the simulator has. The ranges are wide on purpose: they
 * are where a rule tuned to the hand-written scenarios would show it.
 */
public final class RandomFleets {
    /** The kinds of GPU, as in the hand-written scenarios: an H100-, an A100- and an L4-like engine. */
    private static final String[] KINDS = {"h100", "a100", "l4"};
    private static final EngineParams[] PARAMS = {
        new EngineParams(5.0, 0.006, 0.030, 64, 1_200_000, 4096),
        new EngineParams(7.0, 0.009, 0.045, 48, 800_000, 4096),
        new EngineParams(9.0, 0.012, 0.060, 32, 500_000, 4096),
    };
    /** Seconds of new conversations in each fleet. */
    static final int DURATION_S = 360;

    private RandomFleets() {
    }

    /** A fleet: its scenario file (YAML) and the description written in it. */
    record Fleet(String description, String yaml) {
    }

    /** Fleet {@code i}'s scenario file, YAML. */
    public static String scenario(long i) {
        return draw(i).yaml();
    }

    /** Fleet {@code i}. */
    static Fleet draw(long i) {
        SplittableRandom r = new SplittableRandom(0x5EC7A17L * 31 + i);
        int regions = pick(r, 2, 2, 3);
        int turns = pick(r, 2, 3, 4, 6);
        int think = pick(r, 5, 10, 20);
        int firstPrompt = pick(r, 200, 500, 1000, 2000);
        int newTokens = pick(r, 40, 80, 200);
        int output = pick(r, 60, 120, 250, 400);
        double prompt = (firstPrompt + (turns - 1.0) * newTokens) / turns; // as the simulator derives capacity
        int[][] rtt = new int[regions][regions];
        for (int a = 0; a < regions; a++) {
            for (int b = a; b < regions; b++) {
                rtt[a][b] = rtt[b][a] = a == b ? pick(r, 1, 2, 3) : pick(r, 10, 20, 30, 50, 80);
            }
        }
        List<String[]> engines = new ArrayList<>(); // id, cluster, kind, capacity_rps or null
        List<Double> capacities = new ArrayList<>();
        double total = 0;
        for (int g = 0; g < regions; g++) {
            int n = 2 + r.nextInt(5);
            int kinds = pick(r, 1, 1, 2);
            int first = r.nextInt(KINDS.length);
            int second = (first + 1 + r.nextInt(KINDS.length - 1)) % KINDS.length;
            for (int k = 0; k < n; k++) {
                int kind = kinds == 1 || k % 2 == 0 ? first : second;
                double cap = 0.85 * PARAMS[kind].saturationRps(prompt, output);
                engines.add(new String[] {"r" + g + "-" + (k + 1), "gpu-r" + g, KINDS[kind], null});
                capacities.add(cap);
                total += cap;
            }
        }
        List<String> wrong = new ArrayList<>();
        if (r.nextDouble() < 0.35) {
            int count = pick(r, 1, 2);
            for (int c = 0; c < count; c++) {
                int e = r.nextInt(engines.size());
                double factor = any(r, 1 / 3.0, 0.5, 2.0, 3.0);
                engines.get(e)[3] = fmt(capacities.get(e) * factor);
                wrong.add(engines.get(e)[0] + " rated " + fmt(factor) + "×");
            }
        }
        double utilization = 0.35 + 0.53 * r.nextDouble();
        double[] shares = new double[regions];
        double sum = 0;
        for (int g = 0; g < regions; g++) {
            shares[g] = 0.5 + r.nextDouble();
            sum += shares[g];
        }
        String arrivals = any(r, "{shape: poisson}", "{shape: poisson}",
                "{shape: bursty, factor: 3, period_s: 60, burst_s: 10}",
                "{shape: diurnal, amplitude: 0.5, period_s: 300}");
        List<String> faults = new ArrayList<>();
        int faultCount = pick(r, 0, 1, 1, 2);
        for (int f = 0; f < faultCount; f++) {
            String fault = fault(r, regions, engines);
            if (fault != null) {
                faults.add(fault);
            }
        }

        String description = regions + " regions, " + engines.size() + " engines; demand "
                + Math.round(100 * utilization) + "% of what they carry; " + arrivals.replaceAll("[{}]", "")
                + (wrong.isEmpty() ? "" : "; " + String.join(", ", wrong))
                + (faults.isEmpty() ? "; no fault" : "; " + String.join(", ", faults.stream()
                        .map(f -> f.substring("{kind: ".length(), f.indexOf(','))).toList()));
        StringBuilder y = new StringBuilder();
        y.append("# Random fleet ").append(i).append(" (bin/sextant sweep; docs/evaluation.md, \"Random fleets\")\n");
        y.append("name: fleet-").append(i).append('\n');
        y.append("description: >\n  ").append(description).append('\n');
        y.append("duration_s: ").append(DURATION_S).append("\nclient_timeout_s: 60\nsample_s: 10\n");
        y.append("hardware:\n");
        for (int k = 0; k < KINDS.length; k++) {
            EngineParams h = PARAMS[k];
            y.append(String.format(Locale.ROOT, "  %s: {step_ms: %.1f, prefill_ms_per_token: %.3f, decode_ms_per_seq: "
                            + "%.3f, max_seqs: %d, kv_cache_tokens: %d, chunk_tokens: %d}%n", KINDS[k], h.stepMs(),
                    h.prefillMsPerToken(), h.decodeMsPerSeq(), h.maxSeqs(), h.kvCacheTokens(), h.chunkTokens()));
        }
        y.append(String.format(Locale.ROOT, "workload:%n  default: {turns_mean: %d, think_s: %d, first_prompt_tokens: "
                + "%d, new_tokens_per_turn: %d, output_tokens: %d}%n", turns, think, firstPrompt, newTokens, output));
        y.append("arrivals:\n  default: ").append(arrivals).append('\n');
        y.append("topology:\n  gateway_clusters:\n");
        for (int g = 0; g < regions; g++) {
            y.append("    - {id: r").append(g).append(", region: r").append(g).append("}\n");
        }
        y.append("  engine_clusters:\n");
        for (int g = 0; g < regions; g++) {
            y.append("    - {id: gpu-r").append(g).append(", region: r").append(g).append("}\n");
        }
        y.append("  network_rtt_ms:\n");
        for (int a = 0; a < regions; a++) {
            y.append("    r").append(a).append(": {");
            for (int b = 0; b < regions; b++) {
                y.append(b == 0 ? "" : ", ").append("gpu-r").append(b).append(": ").append(rtt[a][b]);
            }
            y.append("}\n");
        }
        y.append("  models:\n    - {id: m, output_tokens: ").append(output).append("}\n  engines:\n");
        for (String[] e : engines) {
            y.append("    - {id: ").append(e[0]).append(", cluster: ").append(e[1]).append(", models: [m], hardware: ")
                    .append(e[2]).append(e[3] == null ? "" : ", capacity_rps: " + e[3]).append("}\n");
        }
        y.append("  classes:\n    - {id: chat, model: m, priority: 0}\n  demand_rps:\n");
        for (int g = 0; g < regions; g++) {
            y.append("    r").append(g).append(": {chat: ").append(fmt(utilization * total * shares[g] / sum))
                    .append("}\n");
        }
        y.append("  headroom: 0.1\n");
        if (!faults.isEmpty()) {
            y.append("faults:\n");
            faults.forEach(f -> y.append("  - ").append(f).append('\n'));
        }
        return new Fleet(description, y.toString());
    }

    /** One fault, or null for none. */
    private static String fault(SplittableRandom r, int regions, List<String[]> engines) {
        int at = pick(r, 60, 90, 120);
        int duration = pick(r, 60, 120, 180);
        String engine = engines.get(r.nextInt(engines.size()))[0];
        int g = r.nextInt(regions);
        int other = (g + 1 + r.nextInt(regions - 1)) % regions;
        String when = "at_s: " + at + ", duration_s: " + duration;
        return switch (r.nextInt(9)) {
            case 0 -> "{kind: engine_slowdown, " + when + ", engines: [" + engine + "], factor: " + pick(r, 2, 4, 8, 30)
                    + "}";
            case 1 -> "{kind: engine_errors, " + when + ", engines: [" + engine + "], factor: "
                    + any(r, "0.2", "0.5", "1.0") + "}";
            case 2 -> r.nextDouble() < 0.3 ? "{kind: engine_crash, " + when + ", engine_cluster: gpu-r" + g + "}"
                    : "{kind: engine_crash, " + when + ", engines: [" + engine + "]}";
            case 3 -> "{kind: partition, " + when + ", gateway: r" + g + ", engine_cluster: gpu-r" + other + "}";
            case 4 -> "{kind: link_slowdown, " + when + ", gateway: r" + g + ", engine_cluster: gpu-r" + other
                    + ", factor: 4}";
            case 5 -> "{kind: control_plane_outage, " + when + "}";
            case 6 -> "{kind: demand_surge, " + when + ", gateway: r" + g + ", factor: " + any(r, "1.5", "2") + "}";
            case 7 -> "{kind: request_burst, at_s: " + at + ", gateway: r" + g + ", requests: " + pick(r, 300, 1000)
                    + ", prompt_tokens: 300, output_tokens: 100}";
            default -> null;
        };
    }

    private static int pick(SplittableRandom r, int... options) {
        return options[r.nextInt(options.length)];
    }

    @SafeVarargs
    private static <T> T any(SplittableRandom r, T... options) {
        return options[r.nextInt(options.length)];
    }

    private static String fmt(double v) {
        return String.format(Locale.ROOT, "%.1f", v);
    }
}
