package dev.sextant.app;

import dev.sextant.config.TopologyLoader;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/** {@code sextant compare}: every policy on one topology, side by side. */
@Command(name = "compare", mixinStandardHelpOptions = true, versionProvider = Sextant.Version.class,
        description = "Solve a topology with every policy and compare latency, utilization and shedding.")
final class CompareCommand implements Callable<Integer> {
    private final Services services;
    private final PrintWriter out;
    private final PrintWriter err;

    @Parameters(index = "0", paramLabel = "TOPOLOGY.yaml", description = "The topology (docs/topology.md).")
    Path topologyFile;

    @Mixin
    Common common;

    CompareCommand(Services services, PrintWriter out, PrintWriter err) {
        this.services = services;
        this.out = out;
        this.err = err;
    }

    @Override
    public Integer call() throws Exception {
        Topology topology = TopologyLoader.load(topologyFile);
        Map<String, Object> results = new LinkedHashMap<>();
        boolean failed = false;
        for (String name : Policies.NAMES) {
            try {
                Snapshot s = Inputs.policy(services, name).solve(topology, SolveOptions.defaults());
                results.put(name, s);
            } catch (RuntimeException e) {
                results.put(name, e);
                failed = true;
                if (common.verbose) {
                    e.printStackTrace(err);
                }
            }
        }
        out.print(CompareTable.render(results));
        out.flush();
        return failed ? 1 : 0;
    }
}
