package dev.sextant.app;

import dev.sextant.config.SnapshotJson;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** {@code sextant solve}: prints the snapshot of a topology as JSON. */
@Command(name = "solve", mixinStandardHelpOptions = true, versionProvider = Sextant.Version.class,
        description = "Compute the routing snapshot of a topology and print it as JSON (docs/snapshot.md).")
final class SolveCommand implements Callable<Integer> {
    private final Services services;
    private final PrintWriter out;

    @Mixin
    Inputs inputs;

    @Mixin
    Common common;

    SolveCommand(Services services, PrintWriter out) {
        this.services = services;
        this.out = out;
    }

    @Override
    public Integer call() throws Exception {
        out.print(SnapshotJson.write(inputs.solve(services, inputs.topology())));
        out.flush();
        return 0;
    }
}
