package dev.sextant.app;

import dev.sextant.config.Json;
import dev.sextant.policy.Explanation;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.GatewayCluster;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code sextant explain}: why one gateway cluster's class is routed as it is. */
@Command(name = "explain", mixinStandardHelpOptions = true, versionProvider = Sextant.Version.class,
        description = "Solve, then explain how one gateway cluster routes one class, engine by engine.")
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
        Snapshot snapshot = inputs.policy(services).solve(topology, inputs.options());
        Explanation e = services.explain().explain(topology, snapshot, gateway, classId);
        String text = json ? Json.write(e) : services.toText().apply(e);
        out.print(text.endsWith("\n") ? text : text + "\n");
        out.flush();
        return 0;
    }
}
