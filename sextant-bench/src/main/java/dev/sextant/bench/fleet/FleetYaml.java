package dev.sextant.bench.fleet;

import dev.sextant.topology.Engine;
import dev.sextant.topology.ParametricProfile;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.Locale;
import java.util.Map;

/**
 * Writes a benchmark fleet as a topology file, for whole-process runs of the control plane on it:
 * {@code FleetYaml M|L ENDPOINT [CHANGE_SEED]} prints the fleet of {@link Fleets#medium}/{@link Fleets#large}
 * (seed 1) with every engine's endpoint set to {@code ENDPOINT}, and with a change seed its demand changed by
 * ±5% as in the optimizer's warm-start benchmark ({@link Fleets#withDemandScaled}).
 */
public final class FleetYaml {
    private FleetYaml() {
    }

    public static void main(String[] args) {
        if (args.length < 2 || args.length > 3 || !(args[0].equals("M") || args[0].equals("L"))) {
            System.err.println("usage: FleetYaml M|L ENDPOINT [CHANGE_SEED]");
            System.exit(2);
        }
        Topology t = args[0].equals("L") ? Fleets.large(1) : Fleets.medium(1);
        if (args.length == 3) {
            t = Fleets.withDemandScaled(t, Long.parseLong(args[2]), 0.05);
        }
        System.out.print(yaml(t, args[1]));
    }

    /** The topology in the YAML form of docs/topology.md, every engine at {@code endpoint}. */
    static String yaml(Topology t, String endpoint) {
        StringBuilder y = new StringBuilder();
        y.append("gateway_clusters:\n");
        t.gatewayClusters().forEach(g -> y.append("  - {id: ").append(g.id()).append(", region: ").append(g.region())
                .append("}\n"));
        y.append("engine_clusters:\n");
        t.engineClusters().forEach(c -> y.append("  - {id: ").append(c.id()).append(", region: ").append(c.region())
                .append("}\n"));
        y.append("network_rtt_ms:\n");
        t.networkRttMs().forEach((g, row) -> y.append("  ").append(g).append(": ").append(flow(row)).append('\n'));
        y.append("models:\n");
        t.models().forEach(m -> y.append("  - {id: ").append(m.id()).append(", output_tokens: ")
                .append(m.outputTokens()).append("}\n"));
        y.append("engines:\n");
        for (Engine e : t.engines()) {
            if (!(e.profile() instanceof ParametricProfile p)) {
                throw new IllegalStateException("engine " + e.id() + ": only parametric profiles are written");
            }
            y.append("  - {id: ").append(e.id()).append(", cluster: ").append(e.cluster()).append(", endpoint: '")
                    .append(endpoint).append("', models: ").append(e.models()).append(", capacity_rps: ")
                    .append(number(e.capacityRps())).append(", health: ").append(number(e.health()))
                    .append(", profile: {ttft_ms: ").append(number(p.ttftMs())).append(", tbt_ms: ")
                    .append(number(p.tbtMs())).append(", tbt_slope: ").append(number(p.tbtSlope())).append("}}\n");
        }
        y.append("classes:\n");
        for (TrafficClass c : t.classes()) {
            y.append("  - {id: ").append(c.id()).append(", model: ").append(c.model()).append(", priority: ")
                    .append(c.priority());
            if (!c.residency().isEmpty()) {
                y.append(", residency: ").append(c.residency());
            }
            y.append("}\n");
        }
        y.append("demand_rps:\n");
        t.demandRps().forEach((g, row) -> y.append("  ").append(g).append(": ").append(flow(row)).append('\n'));
        y.append("headroom: ").append(number(t.headroom())).append('\n');
        y.append("affinity_discount_ms: ").append(number(t.affinityDiscountMs())).append('\n');
        return y.toString();
    }

    private static String flow(Map<String, Double> row) {
        StringBuilder b = new StringBuilder("{");
        row.forEach((k, v) -> b.append(b.length() > 1 ? ", " : "").append(k).append(": ").append(number(v)));
        return b.append('}').toString();
    }

    /** Exactly the double (Java's shortest text for it), so the file loads back to the same topology. */
    private static String number(double v) {
        return String.format(Locale.ROOT, "%s", v);
    }
}
