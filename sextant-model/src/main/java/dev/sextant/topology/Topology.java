package dev.sextant.topology;

import dev.sextant.snapshot.RetryBudget;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * Everything the optimizer knows: where requests come from, where they can go, what the network
 * costs and how engines behave under load. Immutable and consistent: every reference resolves.
 *
 * @param gatewayClusters    sources of demand, ids distinct
 * @param engineClusters     network locations of engines, ids distinct
 * @param networkRttMs       gateway cluster id → engine cluster id → round trip in ms, ≥ 0, paid once
 *                           per request; a missing pair means "not reachable"
 * @param models             ids distinct
 * @param engines            ids distinct
 * @param classes            traffic classes, ids distinct
 * @param demandRps          gateway cluster id → class id → req/s, ≥ 0
 * @param headroom           fraction of capacity held back, in [0, 1)
 * @param affinityDiscountMs ms credited per request that stays on the engine it used in the previous
 *                           snapshot, ≥ 0 (used only when a previous snapshot is given)
 * @param retryBudget        the retry budget curve and floor every snapshot of this topology carries to the
 *                           gateways; {@link RetryBudget#DEFAULT} unless the topology says otherwise
 */
public record Topology(List<GatewayCluster> gatewayClusters, List<EngineCluster> engineClusters,
                       Map<String, Map<String, Double>> networkRttMs, List<Model> models, List<Engine> engines,
                       List<TrafficClass> classes, Map<String, Map<String, Double>> demandRps, double headroom,
                       double affinityDiscountMs, RetryBudget retryBudget) {

    /** The default of {@code headroom}. */
    public static final double DEFAULT_HEADROOM = 0.1;
    /** The default of {@code affinity_discount_ms}. */
    public static final double DEFAULT_AFFINITY_DISCOUNT_MS = 25.0;
    /**
     * The largest rate a topology is given (a capacity, a demand): a billion requests a second. Its file says no more
     * (the loader refuses it), and the control loop's estimates take no more.
     */
    public static final double MAX_RPS = 1e9;
    /**
     * The longest time a topology is given (a round trip, a profile's TTFT or TBT, the affinity discount): 1e8 ms, about
     * 28 hours. Its file says no more, and the control loop's estimates take no more: the solve's arithmetic on
     * 1e14 ms or a discount of 1e40 ms gave NaN.
     */
    public static final double MAX_MS = 1e8;

    /** A topology with the default retry budget, {@link RetryBudget#DEFAULT}. */
    public Topology(List<GatewayCluster> gatewayClusters, List<EngineCluster> engineClusters,
                    Map<String, Map<String, Double>> networkRttMs, List<Model> models, List<Engine> engines,
                    List<TrafficClass> classes, Map<String, Map<String, Double>> demandRps, double headroom,
                    double affinityDiscountMs) {
        this(gatewayClusters, engineClusters, networkRttMs, models, engines, classes, demandRps, headroom,
                affinityDiscountMs, RetryBudget.DEFAULT);
    }

    public Topology {
        if (retryBudget == null) {
            throw new IllegalArgumentException("retry_budget: missing (expected: a retry budget, or the default)");
        }
        gatewayClusters = List.copyOf(gatewayClusters);
        engineClusters = List.copyOf(engineClusters);
        networkRttMs = copy(networkRttMs);
        models = List.copyOf(models);
        engines = List.copyOf(engines);
        classes = List.copyOf(classes);
        demandRps = copy(demandRps);
        List<Problem> problems = problems(gatewayClusters, engineClusters, networkRttMs, models, engines, classes,
                demandRps, headroom, affinityDiscountMs);
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException(problems.get(0).toString());
        }
    }

    /**
     * Checks references and value ranges across the whole topology and lists every problem found, in
     * a stable order. The record constructors already check single fields; this checks what needs the
     * whole picture (duplicate ids, unknown references, missing network latencies for demand).
     */
    public static List<Problem> problems(List<GatewayCluster> gatewayClusters, List<EngineCluster> engineClusters,
                                         Map<String, Map<String, Double>> networkRttMs, List<Model> models,
                                         List<Engine> engines, List<TrafficClass> classes,
                                         Map<String, Map<String, Double>> demandRps, double headroom,
                                         double affinityDiscountMs) {
        List<Problem> out = new ArrayList<>();
        Set<String> gateways = ids("gateway_clusters", gatewayClusters, GatewayCluster::id, out);
        Set<String> clusters = ids("engine_clusters", engineClusters, EngineCluster::id, out);
        Set<String> modelIds = ids("models", models, Model::id, out);
        ids("engines", engines, Engine::id, out);
        Set<String> classIds = ids("classes", classes, TrafficClass::id, out);
        Set<String> regions = new HashSet<>();
        gatewayClusters.forEach(g -> regions.add(g.region()));
        engineClusters.forEach(c -> regions.add(c.region()));

        for (int i = 0; i < engines.size(); i++) {
            Engine e = engines.get(i);
            if (!clusters.contains(e.cluster())) {
                out.add(new Problem("engines[" + i + "].cluster", "unknown engine cluster '" + e.cluster()
                        + "' (expected one of " + sorted(clusters) + ")"));
            }
            for (int m = 0; m < e.models().size(); m++) {
                if (!modelIds.contains(e.models().get(m))) {
                    out.add(new Problem("engines[" + i + "].models[" + m + "]", "unknown model '" + e.models().get(m)
                            + "' (expected one of " + sorted(modelIds) + ")"));
                }
            }
        }
        for (int i = 0; i < classes.size(); i++) {
            TrafficClass c = classes.get(i);
            if (!modelIds.contains(c.model())) {
                out.add(new Problem("classes[" + i + "].model", "unknown model '" + c.model()
                        + "' (expected one of " + sorted(modelIds) + ")"));
            }
            for (int r = 0; r < c.residency().size(); r++) {
                if (!regions.contains(c.residency().get(r))) {
                    out.add(new Problem("classes[" + i + "].residency[" + r + "]", "unknown region '"
                            + c.residency().get(r) + "' (expected one of " + sorted(regions) + ")"));
                }
            }
        }
        networkRttMs.forEach((g, row) -> {
            if (!gateways.contains(g)) {
                out.add(new Problem("network_rtt_ms." + g, "unknown gateway cluster '" + g + "' (expected one of "
                        + sorted(gateways) + ")"));
            }
            row.forEach((c, ms) -> {
                if (!clusters.contains(c)) {
                    out.add(new Problem("network_rtt_ms." + g + "." + c, "unknown engine cluster '" + c
                            + "' (expected one of " + sorted(clusters) + ")"));
                } else if (ms == null || !(ms >= 0) || ms.isInfinite()) {
                    out.add(new Problem("network_rtt_ms." + g + "." + c, ms + " (expected: a finite number >= 0)"));
                }
            });
        });
        Map<String, TrafficClass> classById = new HashMap<>();
        classes.forEach(c -> classById.putIfAbsent(c.id(), c));
        Map<String, String> regionOfCluster = new HashMap<>();
        engineClusters.forEach(c -> regionOfCluster.putIfAbsent(c.id(), c.region()));
        // per model, the (known) engine clusters with an engine that serves it: the check of round trips
        // below then visits clusters, not engines, per (gateway cluster, class) with demand
        Map<String, Set<String>> clustersServing = new HashMap<>();
        for (Engine e : engines) {
            if (regionOfCluster.containsKey(e.cluster())) {
                for (String m : e.models()) {
                    clustersServing.computeIfAbsent(m, x -> new java.util.TreeSet<>()).add(e.cluster());
                }
            }
        }
        demandRps.forEach((g, row) -> {
            if (!gateways.contains(g)) {
                out.add(new Problem("demand_rps." + g, "unknown gateway cluster '" + g + "' (expected one of "
                        + sorted(gateways) + ")"));
                return;
            }
            row.forEach((k, rps) -> {
                if (!classIds.contains(k)) {
                    out.add(new Problem("demand_rps." + g + "." + k, "unknown class '" + k + "' (expected one of "
                            + sorted(classIds) + ")"));
                    return;
                }
                if (rps == null || !(rps >= 0) || rps.isInfinite()) {
                    out.add(new Problem("demand_rps." + g + "." + k, rps + " (expected: a finite number >= 0)"));
                    return;
                }
                if (rps == 0) {
                    return;
                }
                TrafficClass c = classById.get(k);
                Map<String, Double> rtt = networkRttMs.getOrDefault(g, Map.of());
                for (String cluster : clustersServing.getOrDefault(c.model(), Set.of())) {
                    if (!c.allowsRegion(regionOfCluster.get(cluster)) || rtt.containsKey(cluster)) {
                        continue;
                    }
                    out.add(new Problem("network_rtt_ms." + g, "missing round trip to engine cluster '" + cluster
                            + "', which serves class '" + k + "' demanded at gateway cluster '" + g
                            + "' (expected: " + cluster + ": <ms>)"));
                }
            });
        });
        if (!(headroom >= 0 && headroom < 1)) {
            out.add(new Problem("headroom", headroom + " (expected: in [0, 1))"));
        }
        if (!(affinityDiscountMs >= 0) || Double.isInfinite(affinityDiscountMs)) {
            out.add(new Problem("affinity_discount_ms", affinityDiscountMs + " (expected: a finite number >= 0)"));
        }
        return out;
    }

    private static <T> Set<String> ids(String list, List<T> items, Function<T, String> id, List<Problem> out) {
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < items.size(); i++) {
            String v = id.apply(items.get(i));
            if (!seen.add(v)) {
                out.add(new Problem(list + "[" + i + "].id", "duplicate id '" + v + "' (expected: ids unique within "
                        + list + ")"));
            }
        }
        return seen;
    }

    private static List<String> sorted(Set<String> s) {
        List<String> l = new ArrayList<>(s);
        Collections.sort(l);
        return l;
    }

    private static Map<String, Map<String, Double>> copy(Map<String, Map<String, Double>> m) {
        Map<String, Map<String, Double>> out = new LinkedHashMap<>();
        m.forEach((k, v) -> out.put(k, Collections.unmodifiableMap(new LinkedHashMap<>(v))));
        return Collections.unmodifiableMap(out);
    }

    /** The engine cluster with this id, or throws {@link IllegalArgumentException}. */
    public EngineCluster engineCluster(String id) {
        for (EngineCluster c : engineClusters) {
            if (c.id().equals(id)) {
                return c;
            }
        }
        throw new IllegalArgumentException("engine cluster: unknown id '" + id + "'");
    }

    /** The model with this id, or throws {@link IllegalArgumentException}. */
    public Model model(String id) {
        for (Model m : models) {
            if (m.id().equals(id)) {
                return m;
            }
        }
        throw new IllegalArgumentException("model: unknown id '" + id + "'");
    }

    /** The class with this id, or throws {@link IllegalArgumentException}. */
    public TrafficClass trafficClass(String id) {
        for (TrafficClass c : classes) {
            if (c.id().equals(id)) {
                return c;
            }
        }
        throw new IllegalArgumentException("class: unknown id '" + id + "'");
    }

    /** Region of the engine's cluster. */
    public String regionOf(Engine e) {
        return engineCluster(e.cluster()).region();
    }

    /** True when class {@code c} may be served by engine {@code e}: model served, region allowed. */
    public boolean allowed(TrafficClass c, Engine e) {
        return e.serves(c.model()) && c.allowsRegion(regionOf(e));
    }

    /** The same topology with other demand. */
    public Topology withDemand(Map<String, Map<String, Double>> newDemand) {
        return new Topology(gatewayClusters, engineClusters, networkRttMs, models, engines, classes, newDemand,
                headroom, affinityDiscountMs, retryBudget);
    }

    /** The same topology with other engines (e.g. after a health change). */
    public Topology withEngines(List<Engine> newEngines) {
        return new Topology(gatewayClusters, engineClusters, networkRttMs, models, newEngines, classes, demandRps,
                headroom, affinityDiscountMs, retryBudget);
    }

    /** The same topology with another retry budget. */
    public Topology withRetryBudget(RetryBudget newRetryBudget) {
        return new Topology(gatewayClusters, engineClusters, networkRttMs, models, engines, classes, demandRps,
                headroom, affinityDiscountMs, newRetryBudget);
    }
}
