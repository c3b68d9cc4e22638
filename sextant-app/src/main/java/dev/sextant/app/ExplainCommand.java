package dev.sextant.app;

import dev.sextant.control.ControlLoop;
import dev.sextant.control.ControlOptions;
import dev.sextant.control.Estimates;
import dev.sextant.policy.Explanation;
import dev.sextant.server.control.ExplainEstimates;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.GatewayCluster;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code sextant explain}: why one gateway cluster's class is routed as it is, and the estimates behind it (those of
 * a control loop that has observed nothing yet, so that it reads as the control plane's {@code /v1/explain} does).
 */
@Command(name = "explain", mixinStandardHelpOptions = true, versionProvider = Sextant.Version.class,
        description = "Solve, then explain how one gateway cluster routes one class, engine by engine, and the "
                + "estimates behind it (as configured: no control plane is asked).")
final class ExplainCommand implements Callable<Integer> {
    private final Services services;
    private final PrintWriter out;

    @Mixin
    Inputs inputs;

    @Mixin
    Common common;

    @Option(names = "--gateway", required = true, paramLabel = "G", description = "Gateway cluster id.")
    String gateway;

    @Option(names = "--class", required = true, paramLabel = "C", description = "Class id.")
    String classId;

    @Option(names = "--json", description = "Print the explanation as JSON.")
    boolean json;

    ExplainCommand(Services services, PrintWriter out) {
        this.services = services;
        this.out = out;
    }

    @Override
    public Integer call() throws Exception {
        Topology topology = inputs.topology();
        if (topology.gatewayClusters().stream().map(GatewayCluster::id).noneMatch(gateway::equals)) {
            throw new UsageException("--gateway: unknown gateway cluster '" + gateway + "' (expected one of "
                    + topology.gatewayClusters().stream().map(GatewayCluster::id).toList() + ")");
        }
        if (topology.classes().stream().map(TrafficClass::id).noneMatch(classId::equals)) {
            throw new UsageException("--class: unknown class '" + classId + "' (expected one of "
                    + topology.classes().stream().map(TrafficClass::id).toList() + ")");
        }
        Snapshot snapshot = inputs.solve(services, topology);
        Explanation e = services.explain().explain(topology, snapshot, gateway, classId);
        // the estimates behind it, as the control plane's explain shows them: here a fresh control loop's, which has
        // observed nothing yet (everything as configured)
        Estimates estimates = ControlLoop.create(topology, ControlOptions.defaults(), () -> 0L, null).estimates();
        String text = json ? ExplainEstimates.json(e, estimates, null)
                : services.toText().apply(e) + ExplainEstimates.text(e, estimates, null);
        out.print(text.endsWith("\n") ? text : text + "\n");
        out.flush();
        return 0;
    }
}
