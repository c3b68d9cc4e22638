package dev.sextant.app;

import dev.sextant.sim.Accuracy;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code sextant accuracy}: how well the control loop learns simulated engines it was told wrong ratings about
 * (docs/control-loop.md, "Accuracy").
 */
@Command(name = "accuracy", mixinStandardHelpOptions = true, versionProvider = Sextant.Version.class,
        description = "Measure the control loop's estimates of capacity and latency against simulated engines of "
                + "known truth, rated half, exactly and twice right (docs/control-loop.md).")
final class AccuracyCommand implements Callable<Integer> {
    private final PrintWriter out;
    private final PrintStream progress;

    @Option(names = "--step", paramLabel = "SECONDS", description = "How long each of the ten loads lasts "
            + "(default: ${DEFAULT-VALUE}).")
    double stepSeconds = 60;

    @Option(names = "--seed", paramLabel = "N", description = "Random seed (default: ${DEFAULT-VALUE}).")
    long seed = 7;

    @Option(names = "--profiles", description = "Also print every case's true and estimated TTFT and TBT at each "
            + "compared load.")
    boolean profiles;

    AccuracyCommand(PrintWriter out, PrintStream progress) {
        this.out = out;
        this.progress = progress;
    }

    @Override
    public Integer call() {
        if (!(stepSeconds >= 10 && stepSeconds <= 3600)) {
            throw new UsageException("--step: " + stepSeconds + " (expected: 10 to 3600 seconds)");
        }
        Accuracy.report(stepSeconds, seed, profiles, progress).forEach(out::println);
        out.flush();
        return 0;
    }
}
