package dev.sextant.app;

import dev.sextant.sim.ScenarioException;
import dev.sextant.sim.Sweep;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code sextant sweep}: the simulator on random fleets nobody wrote by hand, Sextant beside the best other policy on
 * each (docs/evaluation.md, "Random fleets").
 */
@Command(name = "sweep", mixinStandardHelpOptions = true, versionProvider = Sextant.Version.class,
        description = "Simulate random fleets under every policy and set Sextant beside the best other on each "
                + "(docs/evaluation.md, \"Random fleets\").")
final class SweepCommand implements Callable<Integer> {
    private final PrintWriter out;
    private final PrintStream progress;

    @Option(names = "--fleets", paramLabel = "N", description = "How many fleets (default: ${DEFAULT-VALUE}).")
    int fleets = 80;

    @Option(names = "--first", paramLabel = "I", description = "The first fleet's number; fleet I is the same "
            + "file whatever else is given (default: ${DEFAULT-VALUE}).")
    long first = 0;

    @Option(names = "--seed", paramLabel = "N", description = "The simulations' random seed (default: "
            + "${DEFAULT-VALUE}).")
    long seed = 1;

    @Option(names = "--policies", split = SimulateCommand.POLICY_LIST, splitSynopsisLabel = ",", paramLabel = "NAME",
            description = "Policies to run, comma-separated (default: all seven); a fleet's row needs sextant and "
                    + "one other.")
    List<String> policies = List.of();

    @Option(names = "--out", required = true, paramLabel = "DIR", description = "Output folder.")
    Path outDir;

    SweepCommand(PrintWriter out, PrintStream progress) {
        this.out = out;
        this.progress = progress;
    }

    @Override
    public Integer call() throws Exception {
        List<Sweep.Row> rows;
        try {
            rows = Sweep.run(first, fleets, policies, seed, outDir, progress);
        } catch (ScenarioException | IllegalArgumentException e) {
            throw new UsageException(e.getMessage());
        }
        out.println(Sweep.totals(rows));
        out.println("Report: " + outDir.resolve("sweep.md"));
        out.flush();
        return 0;
    }
}
