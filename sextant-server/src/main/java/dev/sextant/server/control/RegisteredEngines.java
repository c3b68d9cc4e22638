package dev.sextant.server.control;

import dev.sextant.config.TopologyFile;
import dev.sextant.topology.Engine;
import dev.sextant.topology.EngineCluster;
import dev.sextant.topology.HardwareKind;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The topology in force: the file's, with the engines registered in the registry that fit it (docs/etcd.md, "Engine
 * registration"). A registration that does not fit is refused, with its reason, and the others are taken: one bad
 * registrar never keeps the fleet from changing. Pure: the control plane logs and counts the refusals.
 */
final class RegisteredEngines {
    private RegisteredEngines() {
    }

    /** Why a registration was refused, as the metric's {@code reason} label says it. */
    enum Reason {
        /** Its value is not a registration (not JSON, a field missing or wrong). */
        INVALID,
        /** The topology file lists an engine with its id; the file wins. */
        DUPLICATE,
        /** Its engine cluster is not one of the file's. */
        UNKNOWN_CLUSTER,
        /** Its hardware kind is not one the file rates. */
        UNKNOWN_HARDWARE,
        /** A model it serves is not one of the file's. */
        UNKNOWN_MODEL,
        /** A gateway cluster with demand for a class it would serve has no round trip to its engine cluster. */
        NO_ROUND_TRIP;

        String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /** A registration not taken. */
    record Refusal(String id, Reason reason, String why) {
    }

    /**
     * The merge.
     *
     * @param topology    the file's topology with the registered engines that fit, after the file's own
     * @param metricsPath each registered engine's metrics path, or null for one without metrics (an engine of the file
     *                    has none here: its path is {@code /metrics})
     * @param refused     the registrations refused, by id
     */
    record Merged(Topology topology, Map<String, String> metricsPath, List<Refusal> refused) {
        int registered() {
            return metricsPath.size();
        }
    }

    static Merged merge(TopologyFile file, EngineRegistry.Entries entries) {
        Topology base = file.topology();
        if (entries.values().isEmpty()) {
            return new Merged(base, Map.of(), List.of());
        }
        Set<String> listed = new HashSet<>();
        base.engines().forEach(e -> listed.add(e.id()));
        Map<String, EngineCluster> clusters = new HashMap<>();
        base.engineClusters().forEach(c -> clusters.put(c.id(), c));
        Set<String> models = new HashSet<>();
        base.models().forEach(m -> models.add(m.id()));
        Fit fit = new Fit(base);
        List<Engine> engines = new ArrayList<>(base.engines());
        Map<String, String> metrics = new LinkedHashMap<>();
        List<Refusal> refused = new ArrayList<>();
        entries.values().forEach((id, value) -> {
            Registration r;
            try {
                r = Registration.parse(id, value);
            } catch (IllegalArgumentException e) {
                refused.add(new Refusal(id, Reason.INVALID, e.getMessage()));
                return;
            }
            HardwareKind kind = file.hardware().get(r.hardware());
            String unknownModel = r.models().stream().filter(m -> !models.contains(m)).findFirst().orElse(null);
            if (listed.contains(id)) {
                refused.add(new Refusal(id, Reason.DUPLICATE, "the topology file lists an engine '" + id
                        + "', which wins"));
            } else if (!clusters.containsKey(r.cluster())) {
                refused.add(new Refusal(id, Reason.UNKNOWN_CLUSTER, "cluster: unknown engine cluster '" + r.cluster()
                        + "' (expected one of " + new java.util.TreeSet<>(clusters.keySet()) + ")"));
            } else if (kind == null) {
                refused.add(new Refusal(id, Reason.UNKNOWN_HARDWARE, "hardware: unknown hardware kind '" + r.hardware()
                        + "' (expected one of " + new java.util.TreeSet<>(file.hardware().keySet()) + ")"));
            } else if (unknownModel != null) {
                refused.add(new Refusal(id, Reason.UNKNOWN_MODEL, "models: unknown model '" + unknownModel
                        + "' (expected one of " + new java.util.TreeSet<>(models) + ")"));
            } else {
                String gap = fit.missingRoundTrip(clusters.get(r.cluster()), r.models());
                if (gap != null) {
                    refused.add(new Refusal(id, Reason.NO_ROUND_TRIP, gap));
                    return;
                }
                engines.add(new Engine(id, r.cluster(), r.endpoint(), r.models(), kind.capacityRps(), kind.profile(),
                        1.0, r.priorityScheduling(), kind.maxNumSeqs()));
                metrics.put(id, r.metricsPath());
            }
        });
        Topology merged = new Topology(base.gatewayClusters(), base.engineClusters(), base.networkRttMs(),
                base.models(), engines, base.classes(), base.demandRps(), base.headroom(), base.affinityDiscountMs(),
                base.retryBudget());
        return new Merged(merged, metrics, refused);
    }

    /** The round trips a registered engine needs: the rule {@link Topology#problems} holds every engine to. */
    private static final class Fit {
        private final Topology base;
        private final Map<String, String> gaps = new HashMap<>();

        Fit(Topology base) {
            this.base = base;
        }

        /** Why an engine of {@code cluster} serving {@code models} lacks a round trip, or null when none is lacking. */
        String missingRoundTrip(EngineCluster cluster, List<String> models) {
            for (String m : models) {
                String gap = gaps.computeIfAbsent(cluster.id() + "\n" + m, k -> gap(cluster, m));
                if (!gap.isEmpty()) {
                    return gap;
                }
            }
            return null;
        }

        private String gap(EngineCluster cluster, String model) {
            for (TrafficClass c : base.classes()) {
                if (!c.model().equals(model) || !c.allowsRegion(cluster.region())) {
                    continue;
                }
                for (var row : base.demandRps().entrySet()) {
                    Double rps = row.getValue().get(c.id());
                    if (rps != null && rps > 0
                            && !base.networkRttMs().getOrDefault(row.getKey(), Map.of()).containsKey(cluster.id())) {
                        return "network_rtt_ms." + row.getKey() + ": missing round trip to engine cluster '"
                                + cluster.id() + "', which would serve class '" + c.id() + "' demanded there";
                    }
                }
            }
            return "";
        }
    }
}
