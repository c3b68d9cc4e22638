package dev.sextant.sim;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.DoubleConsumer;

/**
 * The simulator's entry point: runs a scenario once per policy and writes the report.
 *
 * <pre>{@code
 * Map<String, Summary> s = Simulator.run(Path.of("examples/scenarios/talk-example.yaml"),
 *         List.of("sextant", "nearest"), 1L, Path.of("out"), System.err);
 * }</pre>
 */
public final class Simulator {
    private Simulator() {
    }

    /**
     * Runs {@code scenario} under each policy (the scenario's own list when {@code policies} is empty; a
     * {@code legacy-feedback} entry brings the scenario's gain sweep with it) and writes into {@code outDir}
     * (created if missing): {@code report.md}, {@code report.html}, {@code summary.json}, PNG plots and CSV
     * series.
     *
     * @param scenario path of the scenario YAML file
     * @param policies policy names ({@code sextant}, {@code legacy-feedback}, {@code nearest},
     *                 {@code waterfall}, {@code round-robin}, {@code least-request}, {@code prefix-aware},
     *                 {@code random}, {@code legacy-feedback[gain=G]}), or empty for the scenario's list
     * @param seed     the random seed; the same scenario, policies and seed give identical output
     * @param outDir   output directory
     * @param progress where to draw a progress bar (a terminal), or null for none
     * @return policy name → summary, in run order (the content of {@code summary.json})
     * @throws ScenarioException        when the scenario file is wrong (message names file and field)
     * @throws IllegalArgumentException for an unknown policy name, a run asked twice, or an {@code outDir} that cannot
     *                                  be made a writable folder (all before any simulation)
     * @throws UncheckedIOException     when the output cannot be written
     */
    public static Map<String, Summary> run(Path scenario, List<String> policies, long seed, Path outDir,
                                           PrintStream progress) throws ScenarioException {
        return run(scenario, null, policies, seed, outDir, progress);
    }

    /**
     * As {@link #run(Path, List, long, Path, PrintStream)}, with {@code clients} in every class's workload instead of
     * what the scenario says of its clients (null: as written); the report says so.
     */
    public static Map<String, Summary> run(Path scenario, Clients clients, List<String> policies, long seed,
                                           Path outDir, PrintStream progress) throws ScenarioException {
        Scenario s = ScenarioLoader.load(scenario);
        if (clients != null) {
            s = s.withClients(clients);
        }
        boolean asked = policies != null && !policies.isEmpty();
        List<String> names = SimPolicies.expand(asked ? policies : s.policies(), s, asked ? "--policies" : "policies");
        for (String n : names) {
            SimPolicies.create(n, s); // fail on a bad name before hours of simulation
        }
        outputFolder(outDir); // and on a folder that cannot take the report
        List<Run> runs = new ArrayList<>();
        for (String n : names) {
            runs.add(simulate(s, n, seed, progress));
        }
        try {
            new Report(s, runs, seed, scenario.getFileName().toString()
                    + (clients == null ? "" : " " + clients.options())).write(outDir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Map<String, Summary> out = new LinkedHashMap<>();
        runs.forEach(r -> out.put(r.policy(), r.summary()));
        return out;
    }

    /**
     * {@code SCENARIO.yaml [--policies a,b,…] [--seed N] --out DIR}, the same arguments as
     * {@code bin/sextant simulate}. Exit status 0 on success, 2 on bad arguments or a bad scenario file.
     */
    public static void main(String[] args) {
        System.setProperty("java.awt.headless", "true");
        Path scenario = null;
        Path out = null;
        List<String> policies = List.of();
        long seed = 1;
        try {
            for (int i = 0; i < args.length; i++) {
                switch (args[i]) {
                    case "--policies" -> policies = List.of(args[++i].split(","));
                    case "--seed" -> seed = Long.parseLong(args[++i]);
                    case "--out" -> out = Path.of(args[++i]);
                    default -> {
                        if (args[i].startsWith("--") || scenario != null) {
                            throw new IllegalArgumentException("unexpected argument '" + args[i] + "'");
                        }
                        scenario = Path.of(args[i]);
                    }
                }
            }
            if (scenario == null || out == null) {
                throw new IllegalArgumentException("expected: SCENARIO.yaml [--policies a,b] [--seed N] --out DIR");
            }
            Map<String, Summary> result = run(scenario, policies, seed, out, System.err);
            System.out.println("wrote " + out.resolve("report.md") + " (" + result.size() + " policies)");
        } catch (ScenarioException | IllegalArgumentException | ArrayIndexOutOfBoundsException e) {
            System.err.println("simulate: " + (e instanceof ArrayIndexOutOfBoundsException ? "missing value" : e.getMessage()));
            System.exit(2);
        }
    }

    /** One finished run. */
    record Run(String policy, Simulation simulation, Metrics metrics, Summary summary, double wallSeconds) {
    }

    /**
     * Whether progress bars are redrawn in place: only on a terminal. Into a file or a pipe (a CI log) a bar
     * redrawn a hundred times is one line of thousands of characters, so there only the line per finished policy
     * is written.
     */
    private static final boolean REDRAW = System.console() != null;

    /** Runs one policy over a loaded scenario. */
    static Run simulate(Scenario s, String policy, long seed, PrintStream progress) {
        SimPolicy p = SimPolicies.create(policy, s);
        DoubleConsumer bar = progress == null || !REDRAW ? null : new ProgressBar(progress, policy);
        long t0 = System.nanoTime();
        Simulation sim = new Simulation(s, p, seed, bar);
        Metrics m = sim.run();
        double wall = (System.nanoTime() - t0) / 1e9;
        if (progress != null) {
            progress.printf((REDRAW ? "\r" : "") + "%-28s done: %,d requests in %.1f s wall (%,.0f simulated requests/s)%n", policy,
                    m.generated, wall, m.generated / Math.max(wall, 1e-9));
        }
        return new Run(policy, sim, m, m.summary(), wall);
    }

    /** A one-line progress bar redrawn in place. */
    private static final class ProgressBar implements DoubleConsumer {
        private final PrintStream out;
        private final String label;
        private int last = -1;

        ProgressBar(PrintStream out, String label) {
            this.out = out;
            this.label = label;
        }

        @Override
        public void accept(double fraction) {
            int pct = (int) Math.floor(fraction * 100);
            if (pct == last) {
                return;
            }
            last = pct;
            int filled = pct / 4;
            out.printf("\r%-28s [%s%s] %3d%%", label, "#".repeat(filled), ".".repeat(25 - filled), pct);
            out.flush();
        }
    }

    /**
     * Makes the output folder, or finds it writable.
     *
     * @throws IllegalArgumentException when {@code outDir} is a file, cannot be made, or is not writable
     */
    private static void outputFolder(Path outDir) {
        if (Files.exists(outDir) && !Files.isDirectory(outDir)) {
            throw new IllegalArgumentException("--out: " + outDir + ": not a folder (a file of that name exists)");
        }
        try {
            Files.createDirectories(outDir);
        } catch (IOException e) {
            String why = e instanceof java.nio.file.FileSystemException f && f.getReason() != null ? f.getReason()
                    : e instanceof java.nio.file.NoSuchFileException ? "no such file" : e.getClass().getSimpleName();
            throw new IllegalArgumentException("--out: " + outDir + ": cannot make the folder (" + why + ")");
        }
        if (!Files.isWritable(outDir)) {
            throw new IllegalArgumentException("--out: " + outDir + ": not writable");
        }
    }
}
