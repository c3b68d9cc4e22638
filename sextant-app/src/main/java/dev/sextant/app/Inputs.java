package dev.sextant.app;

import dev.sextant.config.ConfigException;
import dev.sextant.config.ConfigProblem;
import dev.sextant.config.SnapshotException;
import dev.sextant.config.SnapshotJson;
import dev.sextant.config.TopologyLoader;
import dev.sextant.policy.Policies;
import dev.sextant.policy.RoutingPolicy;
import dev.sextant.policy.SolveOptions;
import dev.sextant.server.internal.Versions;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** The inputs every solving command shares: topology, policy, previous snapshot, solver options. */
final class Inputs {

    @Parameters(index = "0", paramLabel = "TOPOLOGY.yaml", description = "The topology (docs/topology.md).")
    Path topologyFile;

    @Option(names = "--policy", paramLabel = "NAME", defaultValue = "optimal",
            description = "One of: optimal, nearest, waterfall, proportional (default: ${DEFAULT-VALUE}).")
    String policy;

    @Option(names = "--previous", paramLabel = "SNAPSHOT.json",
            description = "The previous snapshot: the new one keeps its traffic where it can and gets the next version.")
    Path previous;

    @Option(names = "--gap-tolerance", paramLabel = "X",
            description = "Stop when the certified relative optimality gap is at most X (default: 1e-6).")
    Double gapTolerance;

    @Option(names = "--affinity-discount-ms", paramLabel = "MS",
            description = "Overrides the topology's affinity_discount_ms.")
    Double affinityDiscountMs;

    /** The topology file, with the override applied. */
    Topology topology() throws ConfigException {
        Topology t = TopologyLoader.load(topologyFile);
        if (affinityDiscountMs == null) {
            return t;
        }
        if (!(affinityDiscountMs >= 0 && affinityDiscountMs <= Topology.MAX_MS)) { // the file's own bound
            throw new UsageException("--affinity-discount-ms: " + affinityDiscountMs + " (expected: a number from 0 to "
                    + (long) Topology.MAX_MS + ", like affinity_discount_ms in a topology file)");
        }
        try {
            return new Topology(t.gatewayClusters(), t.engineClusters(), t.networkRttMs(), t.models(), t.engines(),
                    t.classes(), t.demandRps(), t.headroom(), affinityDiscountMs, t.retryBudget());
        } catch (IllegalArgumentException e) {
            throw new UsageException("--affinity-discount-ms: " + affinityDiscountMs + " (expected: a finite number >= 0)");
        }
    }

    SolveOptions options() throws ConfigException {
        SolveOptions o = SolveOptions.defaults();
        if (previous != null) {
            Snapshot prev = SnapshotJson.read(previous);
            if (prev.version() > Versions.MAX_ADOPTED) {
                // the next version would be beyond any a control plane reaches, and Long.MAX_VALUE's overflows
                throw new SnapshotException(List.of(new ConfigProblem(previous.toString(), versionLine(), "version",
                        Versions.refusal("a previous snapshot's", prev.version()))));
            }
            o = o.after(prev);
        }
        if (gapTolerance != null) {
            try {
                o = o.withGapTolerance(gapTolerance);
            } catch (IllegalArgumentException e) {
                throw new UsageException("--gap-tolerance: " + gapTolerance + " (expected: > 0)");
            }
        }
        return o;
    }

    /** The line of the previous snapshot's {@code version} field, 0 when it cannot be told. */
    private int versionLine() {
        try {
            List<String> lines = Files.readAllLines(previous);
            for (int i = 0; i < lines.size(); i++) {
                if (lines.get(i).contains("\"version\"")) {
                    return i + 1;
                }
            }
        } catch (IOException | RuntimeException e) {
            // read a moment ago; the problem is still named, without a line
        }
        return 0;
    }

    /** The snapshot of {@code topology} (read by {@link #topology()}) by {@code --policy}, with {@link #options()}. */
    Snapshot solve(Services services, Topology topology) throws ConfigException {
        return policy(services, policy).solve(topology, options());
    }

    static RoutingPolicy policy(Services services, String name) {
        if (!Policies.NAMES.contains(name)) {
            throw new UsageException("--policy: '" + name + "' (expected one of " + Policies.NAMES + ")");
        }
        return services.policies().apply(name);
    }
}
