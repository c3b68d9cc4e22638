package dev.sextant.app;

import dev.sextant.sim.Clients;
import dev.sextant.sim.ScenarioException;
import dev.sextant.sim.Simulator;
import dev.sextant.sim.Summary;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code sextant simulate}: runs a scenario in the discrete-event simulator for each policy and writes
 * report.md, report.html, plots, CSV and summary.json (docs/evaluation.md).
 */
@Command(name = "simulate", mixinStandardHelpOptions = true, versionProvider = Sextant.Version.class,
        description = "Simulate a scenario under several routing policies and write a report (docs/evaluation.md).")
final class SimulateCommand implements Callable<Integer> {
    private final PrintWriter out;
    private final PrintStream progress;

    @Parameters(index = "0", paramLabel = "SCENARIO.yaml", description = "Scenario file (examples/scenarios/).")
    Path scenario;

    /**
     * How a list of policies is split: at commas outside brackets, since a comma inside them belongs to the policy
     * ({@code sextant[space_prefills=false,spread_shared_prefixes=true]}). Also {@code sweep}'s.
     */
    static final String POLICY_LIST = ",(?![^\\[]*\\])";

    @Option(names = "--policies", split = POLICY_LIST, splitSynopsisLabel = ",", paramLabel = "NAME",
            description = "Policies to run, comma-separated (default: the scenario's own list): sextant, "
                    + "legacy-feedback, nearest, waterfall, round-robin, least-request, prefix-aware, random, "
                    + "legacy-feedback[gain=G], sextant[space_prefills=B,spread_shared_prefixes=B,keep_in_region=B,"
                    + "demand_hold=S] (B: true or false; S: seconds).")
    List<String> policies = List.of();

    @Option(names = "--seed", paramLabel = "N", description = "Random seed (default: ${DEFAULT-VALUE}).")
    long seed = 1;

    @Option(names = "--out", required = true, paramLabel = "DIR", description = "Output folder.")
    Path outDir;

    @Option(names = "--keyed-share", paramLabel = "SHARE", description = "Every class's clients: this share of "
            + "conversations sends an explicit key, the rest none (overrides the scenario's keyed_share; with "
            + "--system-prompts and --system-prompt-tokens, default 0.2, 4 and 1500 when one of them is given).")
    Double keyedShare;

    @Option(names = "--system-prompts", paramLabel = "N", description = "Every class's clients: N shared system "
            + "prompts, the i-th drawn with probability proportional to 1/(i + 1).")
    Integer systemPrompts;

    @Option(names = "--system-prompt-tokens", paramLabel = "T", description = "Every class's clients: each shared "
            + "system prompt is T tokens long.")
    Double systemPromptTokens;

    /**
     * The clients of {@code keyless-shared-prompts.yaml}, for the options not given: most send no key, and four
     * system prompts of a typical assistant's length are shared (docs/evaluation.md, "Keyless clients on every scenario").
     */
    static final double DEFAULT_KEYED_SHARE = 0.2;
    static final int DEFAULT_SYSTEM_PROMPTS = 4;
    static final double DEFAULT_SYSTEM_PROMPT_TOKENS = 1500;

    SimulateCommand(PrintWriter out, PrintStream progress) {
        this.out = out;
        this.progress = progress;
    }

    @Override
    public Integer call() throws Exception {
        if (!java.nio.file.Files.isRegularFile(scenario)) {
            throw new UsageException(scenario + (java.nio.file.Files.isDirectory(scenario) ? ": a folder (expected: a"
                    + " scenario file)" : java.nio.file.Files.exists(scenario) ? ": not a regular file (expected: a"
                    + " scenario file)" : ": no such file"));
        }
        Map<String, Summary> results;
        try {
            Clients clients = keyedShare == null && systemPrompts == null && systemPromptTokens == null ? null
                    : new Clients(systemPromptTokens == null ? DEFAULT_SYSTEM_PROMPT_TOKENS : systemPromptTokens,
                            systemPrompts == null ? DEFAULT_SYSTEM_PROMPTS : systemPrompts,
                            keyedShare == null ? DEFAULT_KEYED_SHARE : keyedShare);
            results = Simulator.run(scenario, clients, policies, seed, outDir, progress);
        } catch (ScenarioException e) {
            throw new UsageException(e.getMessage());
        } catch (IllegalArgumentException e) {
            throw new UsageException(e.getMessage());
        }
        // the name column as wide as the longest name ("legacy-feedback[gain=0.1]" and the like)
        int width = Math.max("policy".length(), results.keySet().stream().mapToInt(String::length).max().orElse(0));
        out.printf(Locale.ROOT, "%-" + width + "s %11s %11s %11s %8s %8s%n", "policy", "ttft p50", "ttft p99",
                "e2e p99", "shed", "failed");
        results.forEach((name, s) -> out.printf(Locale.ROOT, "%-" + width + "s %11s %11s %11s %7.2f%% %8d%n",
                name, ms(s.ttftP50Ms()), ms(s.ttftP99Ms()), ms(s.e2eP99Ms()), 100 * s.shedFraction(), s.failed()));
        out.println("Report: " + outDir.resolve("report.md"));
        out.flush();
        return 0;
    }

    /** A latency for the summary line; "–" where no request completed (the report's mark for it, null in JSON). */
    private static String ms(double v) {
        return Double.isNaN(v) ? "–" : String.format(Locale.ROOT, "%.0f ms", v);
    }
}
