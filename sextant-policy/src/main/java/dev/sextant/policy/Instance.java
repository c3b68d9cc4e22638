package dev.sextant.policy;

import dev.sextant.snapshot.EngineGroup;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.snapshot.SortedEngineIds;
import dev.sextant.topology.Engine;
import dev.sextant.topology.EngineCluster;
import dev.sextant.topology.GatewayCluster;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * The topology as arrays: sources (gateway cluster, class), engine groups, and the arcs between them.
 *
 * <p>Engines of one engine cluster that serve the same set of models are interchangeable for every
 * class (same network latency, same model and residency constraints), so they form one group whose
 * cost is the infimal convolution of its engines' costs (docs/design.md §3): the problem is solved on
 * groups and each group's load is split among its engines at equal marginal cost.
 */
final class Instance {
    /** Base per-request cost of shedding, ms; far above any latency so demand is shed only when it must be. */
    static final double SHED_COST_BASE_MS = 1e7;
    /** Extra shed cost per priority level above the lowest, relative to the base. */
    static final double SHED_COST_STEP = 0.01;

    final Topology topology;
    /** The penalties the costs were made with. */
    private final Map<String, Double> penalties;
    final List<Engine> engines;
    /** Per engine; effective capacity may be 0 (out of service). */
    final EngineCost[] costs;
    final double[] penalty;
    final String[] engineRegion;

    final int groupCount;
    final int[][] groupEngines;
    final String[] groupCluster;
    /**
     * Per group, its id in snapshots: the engine cluster's id and the models' ids in order, joined by {@code |}
     * (a {@code |} or {@code \} inside an id escaped by {@code \}), so that a group keeps its id from one
     * snapshot to the next whichever of its engines are in service.
     */
    final String[] groupId;

    final int sourceCount;
    final GatewayCluster[] sourceGateway;
    final TrafficClass[] sourceClass;
    final double[] demand;
    final double[] shedCost;
    /**
     * Per source: allowed groups (with capacity; shared between sources like {@link #sourceEngines},
     * read only) and the network round trip to each.
     */
    final int[][] sourceGroups;
    final double[][] sourceRtt;
    /** Per source and allowed group: flow kept from the previous snapshot (affinity cap), req/s. */
    final double[][] sourceKept;
    final double discount;
    /** Per source: the previous snapshot's route of its (gateway cluster, class), or null; null without one. */
    final Route[] previousRoute;
    /**
     * Per source: allowed engines, with or without capacity (for explanations and baselines). Sources
     * of one model with the same allowed engine clusters share one array: read only.
     */
    final int[][] sourceEngines;
    final int[] sourceGatewayIndex;
    /** All engine ids in ascending order (shared by the snapshot's routes), and each engine's rank there. */
    final SortedEngineIds engineIds;
    /** Seals the snapshots made of this instance; shared with the instances of the same {@link Memory}. */
    final Snapshot.Hasher hasher;
    final int[] engineRank;
    /** Engine → index of its engine cluster; gateway index → cluster index → round trip (NaN: none). */
    final int[] engineCluster;
    final double[][] rttByCluster;

    /**
     * What a policy object remembers from one solve to the next, so that a control loop re-solving as demand moves
     * pays only for what changed: the last instance made, whose shape (everything but demand: engines, clusters,
     * classes, models, round trips, headroom, penalties) the next solve most likely shares, and the snapshot hasher
     * that keeps the engines' hashed texts. Each policy object owns one (docs/design.md §3, how it is solved); a
     * caller that wants warm re-solves holds on to its policy. Safe to share between threads: a race only costs
     * the reuse.
     */
    static final class Memory {
        private final Snapshot.Hasher hasher = new Snapshot.Hasher();
        private volatile Instance last;

        /**
         * The instance of {@code topology}: the arrays of the last one made where the topology has its shape, which
         * do not depend on demand, and built anew otherwise. On the L fleet that spares a warm re-solve ~3 ms of
         * its ~25.
         */
        Instance of(Topology topology, SolveOptions options) {
            Instance like = last;
            if (like != null && like.sameShape(topology, options)) {
                return new Instance(like, topology, options);
            }
            Instance built = new Instance(topology, options, hasher);
            last = built;
            return built;
        }
    }

    /** The instance of {@code topology}, built anew: nothing remembered from another solve. */
    static Instance of(Topology topology, SolveOptions options) {
        return new Instance(topology, options, new Snapshot.Hasher());
    }

    private boolean sameShape(Topology t, SolveOptions o) {
        return topology.headroom() == t.headroom() && topology.engines().equals(t.engines())
                && topology.engineClusters().equals(t.engineClusters())
                && topology.gatewayClusters().equals(t.gatewayClusters())
                && topology.classes().equals(t.classes()) && topology.models().equals(t.models())
                && topology.networkRttMs().equals(t.networkRttMs()) && penalties.equals(o.penalties());
    }

    /** {@code topology}'s instance with the demand-independent arrays of {@code like}, which has its shape. */
    private Instance(Instance like, Topology topology, SolveOptions options) {
        this.topology = topology;
        this.hasher = like.hasher;
        this.engines = topology.engines();
        penalties = like.penalties;
        costs = like.costs;
        penalty = like.penalty;
        engineRegion = like.engineRegion;
        groupCount = like.groupCount;
        groupEngines = like.groupEngines;
        groupCluster = like.groupCluster;
        groupId = like.groupId.clone(); // interned below against this solve's previous snapshot
        sourceCount = like.sourceCount;
        sourceGateway = like.sourceGateway;
        sourceClass = like.sourceClass;
        shedCost = like.shedCost;
        sourceGroups = like.sourceGroups;
        sourceRtt = like.sourceRtt;
        sourceEngines = like.sourceEngines;
        sourceGatewayIndex = like.sourceGatewayIndex;
        engineIds = like.engineIds;
        engineRank = like.engineRank;
        engineCluster = like.engineCluster;
        rttByCluster = like.rttByCluster;
        internGroupIds(options.previous());
        demand = new double[sourceCount];
        sourceKept = new double[sourceCount][];
        for (int k = 0; k < sourceCount; k++) {
            demand[k] = topology.demandRps().getOrDefault(sourceGateway[k].id(), Map.of())
                    .getOrDefault(sourceClass[k].id(), 0.0);
            sourceKept[k] = new double[sourceGroups[k].length];
        }
        discount = options.previous() == null ? 0 : topology.affinityDiscountMs();
        previousRoute = routesOf(options.previous());
        if (discount > 0) {
            fillKept(options.previous());
        }
    }

    private Instance(Topology topology, SolveOptions options, Snapshot.Hasher hasher) {
        this.topology = topology;
        this.hasher = hasher;
        this.penalties = options.penalties();
        this.engines = topology.engines();
        int n = engines.size();
        Map<String, EngineCluster> clusters = new HashMap<>();
        topology.engineClusters().forEach(c -> clusters.put(c.id(), c));
        Map<String, Integer> outputTokens = new HashMap<>();
        topology.models().forEach(m -> outputTokens.put(m.id(), m.outputTokens()));

        costs = new EngineCost[n];
        penalty = new double[n];
        engineRegion = new String[n];
        double maxMarginal = 0;
        for (int j = 0; j < n; j++) {
            Engine e = engines.get(j);
            penalty[j] = options.penalties().getOrDefault(e.id(), 1.0);
            engineRegion[j] = clusters.get(e.cluster()).region();
            // an engine serving several models is costed with the longest expected output (conservative)
            int tokens = 0;
            for (String m : e.models()) {
                tokens = Math.max(tokens, outputTokens.get(m));
            }
            tokens = e.models().isEmpty() ? 1 : tokens;
            costs[j] = new EngineCost(j, e.capacityRps(), e.effectiveCapacityRps(topology.headroom(), penalty[j]),
                    tokens, e.profile());
            if (costs[j].effectiveCapacity > 0) {
                maxMarginal = Math.max(maxMarginal, costs[j].marginalAtCapacity);
            }
        }

        Map<String, List<Integer>> byKey = new LinkedHashMap<>();
        for (int j = 0; j < n; j++) {
            if (costs[j].effectiveCapacity <= 0) {
                continue;
            }
            Engine e = engines.get(j);
            // the set of models: most engines serve one, which needs no sorted copy
            String key = e.cluster() + "\u0000" + (e.models().size() == 1 ? e.models().get(0)
                    : String.join("\u0001", new TreeSet<>(e.models())));
            byKey.computeIfAbsent(key, k -> new ArrayList<>()).add(j);
        }
        groupCount = byKey.size();
        groupEngines = new int[groupCount][];
        groupCluster = new String[groupCount];
        groupId = new String[groupCount];
        int gi = 0;
        for (List<Integer> members : byKey.values()) {
            groupEngines[gi] = members.stream().mapToInt(Integer::intValue).toArray();
            Engine first = engines.get(members.get(0));
            groupCluster[gi] = first.cluster();
            StringBuilder id = new StringBuilder(escapedId(first.cluster()));
            new TreeSet<>(first.models()).forEach(m -> id.append('|').append(escapedId(m)));
            groupId[gi] = id.toString();
            gi++;
        }
        internGroupIds(options.previous());

        TreeSet<Integer> priorities = new TreeSet<>();
        topology.classes().forEach(c -> priorities.add(c.priority()));
        double base = Math.max(SHED_COST_BASE_MS, 100 * maxMarginal);

        List<GatewayCluster> gateways = topology.gatewayClusters();
        List<TrafficClass> classes = topology.classes();
        sourceCount = gateways.size() * classes.size();
        sourceGateway = new GatewayCluster[sourceCount];
        sourceClass = new TrafficClass[sourceCount];
        demand = new double[sourceCount];
        shedCost = new double[sourceCount];
        sourceGroups = new int[sourceCount][];
        sourceRtt = new double[sourceCount][];
        sourceKept = new double[sourceCount][];
        sourceEngines = new int[sourceCount][];
        discount = options.previous() == null ? 0 : topology.affinityDiscountMs();
        previousRoute = routesOf(options.previous());

        // indices instead of map look-ups: sources × engines is large (2,048 × 4,096 on the L fleet)
        Map<String, Integer> clusterIndex = new HashMap<>();
        for (EngineCluster c : topology.engineClusters()) {
            clusterIndex.put(c.id(), clusterIndex.size());
        }
        engineCluster = new int[n];
        for (int j = 0; j < n; j++) {
            engineCluster[j] = clusterIndex.get(engines.get(j).cluster());
        }
        // engines in id order, so that every route's weights come out sorted as snapshots print them
        Integer[] byId = new Integer[n];
        for (int j = 0; j < n; j++) {
            byId[j] = j;
        }
        java.util.Arrays.sort(byId, java.util.Comparator.comparing(j -> engines.get(j).id()));
        engineRank = new int[n];
        List<String> sortedIds = new ArrayList<>(n);
        for (int r = 0; r < n; r++) {
            engineRank[byId[r]] = r;
            sortedIds.add(engines.get(byId[r]).id());
        }
        engineIds = SortedEngineIds.of(sortedIds);
        Map<String, int[]> servingModel = new HashMap<>();
        {
            Map<String, List<Integer>> serving = new HashMap<>();
            for (int j : byId) {
                for (String m : engines.get(j).models()) {
                    serving.computeIfAbsent(m, x -> new ArrayList<>()).add(j);
                }
            }
            serving.forEach((m, list) -> servingModel.put(m, list.stream().mapToInt(Integer::intValue).toArray()));
        }
        // many sources share a model and a set of allowed engine clusters: one group list and one engine
        // list for each such pair
        Map<String, int[][]> allowedByModelAndClusters = new HashMap<>();
        rttByCluster = new double[gateways.size()][clusterIndex.size()];
        for (int gi2 = 0; gi2 < gateways.size(); gi2++) {
            java.util.Arrays.fill(rttByCluster[gi2], Double.NaN);
            Map<String, Double> row = topology.networkRttMs().getOrDefault(gateways.get(gi2).id(), Map.of());
            for (Map.Entry<String, Double> e : row.entrySet()) {
                Integer ci = clusterIndex.get(e.getKey());
                if (ci != null) {
                    rttByCluster[gi2][ci] = e.getValue();
                }
            }
        }
        sourceGatewayIndex = new int[sourceCount];
        // per class, the engine clusters its residency allows (classes × clusters, not sources × clusters)
        boolean[][] regionAllowed = new boolean[classes.size()][clusterIndex.size()];
        for (int ci = 0; ci < classes.size(); ci++) {
            for (EngineCluster ec : topology.engineClusters()) {
                regionAllowed[ci][clusterIndex.get(ec.id())] = classes.get(ci).allowsRegion(ec.region());
            }
        }
        double[] classShedCost = new double[classes.size()];
        for (int ci = 0; ci < classes.size(); ci++) {
            classShedCost[ci] = base * (1 + SHED_COST_STEP * priorities.headSet(classes.get(ci).priority()).size());
        }
        int k = 0;
        for (int gIndex = 0; gIndex < gateways.size(); gIndex++) {
            GatewayCluster g = gateways.get(gIndex);
            double[] rtt = rttByCluster[gIndex];
            Map<String, Double> demandRow = topology.demandRps().getOrDefault(g.id(), Map.of());
            for (int ci = 0; ci < classes.size(); ci++) {
                TrafficClass c = classes.get(ci);
                sourceGateway[k] = g;
                sourceGatewayIndex[k] = gIndex;
                sourceClass[k] = c;
                demand[k] = demandRow.getOrDefault(c.id(), 0.0);
                shedCost[k] = classShedCost[ci];
                boolean[] clusterAllowed = new boolean[clusterIndex.size()];
                char[] bits = new char[(clusterAllowed.length + 15) / 16]; // the same set, 16 clusters a char
                for (int cl = 0; cl < clusterAllowed.length; cl++) {
                    clusterAllowed[cl] = regionAllowed[ci][cl] && !Double.isNaN(rtt[cl]);
                    if (clusterAllowed[cl]) {
                        bits[cl >> 4] |= (char) (1 << (cl & 15));
                    }
                }
                int[][] allowed = allowedByModelAndClusters.computeIfAbsent(
                        c.model() + "\u0000" + new String(bits),
                        x -> new int[][] {allowedGroups(c.model(), clusterAllowed),
                            allowedEngines(servingModel.getOrDefault(c.model(), new int[0]), clusterAllowed)});
                sourceGroups[k] = allowed[0];
                sourceRtt[k] = new double[sourceGroups[k].length];
                for (int a = 0; a < sourceGroups[k].length; a++) {
                    sourceRtt[k][a] = rtt[engineCluster[groupEngines[sourceGroups[k][a]][0]]];
                }
                sourceEngines[k] = allowed[1];
                sourceKept[k] = new double[sourceGroups[k].length];
                k++;
            }
        }
        if (discount > 0) {
            fillKept(options.previous());
        }
    }

    /** The groups (ascending) that serve {@code model} in an allowed engine cluster. */
    private int[] allowedGroups(String model, boolean[] clusterAllowed) {
        int[] out = new int[groupCount];
        int count = 0;
        for (int h = 0; h < groupCount; h++) {
            int first = groupEngines[h][0];
            if (clusterAllowed[engineCluster[first]] && engines.get(first).serves(model)) {
                out[count++] = h;
            }
        }
        return java.util.Arrays.copyOf(out, count);
    }

    /** The engines of {@code serving} (in id order) whose engine cluster is allowed. */
    private int[] allowedEngines(int[] serving, boolean[] clusterAllowed) {
        int[] out = new int[serving.length];
        int count = 0;
        for (int j : serving) {
            if (clusterAllowed[engineCluster[j]]) {
                out[count++] = j;
            }
        }
        return java.util.Arrays.copyOf(out, count);
    }

    /** Round trip from the source's gateway cluster to the engine, or NaN when not reachable. */
    double rtt(int source, int engine) {
        return rttByCluster[sourceGatewayIndex[source]][engineCluster[engine]];
    }

    /**
     * The previous snapshot's own id objects for the groups it has: comparing a route's groups with its previous
     * ones is then a comparison of references, for 3,072 routes of ~14 groups on a large fleet.
     */
    private void internGroupIds(Snapshot previous) {
        if (previous != null && previous.groups() instanceof java.util.SortedMap<String, ?> held) {
            for (int h = 0; h < groupCount; h++) {
                java.util.SortedMap<String, ?> from = held.tailMap(groupId[h]);
                if (!from.isEmpty() && from.firstKey().equals(groupId[h])) {
                    groupId[h] = from.firstKey();
                }
            }
        }
    }

    private static String escapedId(String id) {
        return id.indexOf('|') < 0 && id.indexOf('\\') < 0 ? id : id.replace("\\", "\\\\").replace("|", "\\|");
    }

    /**
     * A snapshot's route of each source (the previous one's, or another's from this fleet), in one walk over its routes
     * rather than a look-up by two ids per source: source k is gateway cluster k / classes, class k % classes, as the
     * sources are laid out.
     */
    Route[] routesOf(Snapshot previous) {
        if (previous == null) {
            return null;
        }
        List<TrafficClass> classes = topology.classes();
        Map<String, Integer> gatewayIndex = new HashMap<>();
        for (GatewayCluster g : topology.gatewayClusters()) {
            gatewayIndex.put(g.id(), gatewayIndex.size());
        }
        Map<String, Integer> classIndex = new HashMap<>();
        for (TrafficClass c : classes) {
            classIndex.put(c.id(), classIndex.size());
        }
        Route[] out = new Route[sourceCount];
        previous.routes().forEach((g, byClass) -> {
            Integer gi = gatewayIndex.get(g);
            if (gi != null) {
                byClass.forEach((c, r) -> {
                    Integer ci = classIndex.get(c);
                    if (ci != null) {
                        out[gi * classes.size() + ci] = r;
                    }
                });
            }
        });
        return out;
    }

    /** What a source's previous route sent to one of its allowed groups, as {@link #forEachPreviousUse} reports it. */
    @FunctionalInterface
    interface PreviousUse {
        /**
         * @param source  the source
         * @param slot    the group's position among the source's allowed groups ({@link #sourceGroups})
         * @param group   the group
         * @param weight  what the route sent there: a grouped route's fraction of the group, or a route's weight of
         *                one engine now in the group
         * @param ofGroup true for a group's fraction (by the group's id), false for one engine's weight
         */
        void accept(int source, int slot, int group, double weight, boolean ofGroup);
    }

    /**
     * Calls {@code action}, source by source, for what each source's previous route sent to a group that is one of
     * the source's allowed groups now: a grouped route once per group of the same id, a route weighted engine by
     * engine once per engine (by the group the engine is in now). What both the affinity caps and the warm start's
     * prices read from the previous snapshot.
     */
    void forEachPreviousUse(PreviousUse action) {
        forEachUse(previousRoute, action);
    }

    /** As {@link #forEachPreviousUse}, for the routes of another snapshot of this fleet ({@link #routesOf}). */
    void forEachUse(Route[] routes, PreviousUse action) {
        Map<String, Integer> groupIndex = new HashMap<>(groupCount * 2);
        for (int h = 0; h < groupCount; h++) {
            groupIndex.put(groupId[h], h);
        }
        int[] groupOfRank = new int[engines.size()];
        java.util.Arrays.fill(groupOfRank, -1);
        for (int h = 0; h < groupCount; h++) {
            for (int j : groupEngines[h]) {
                groupOfRank[engineRank[j]] = h;
            }
        }
        int[] slotOf = new int[groupCount];
        java.util.Arrays.fill(slotOf, -1);
        for (int k = 0; k < sourceCount; k++) {
            Route r = routes[k];
            if (r == null) {
                continue;
            }
            int[] groups = sourceGroups[k];
            for (int a = 0; a < groups.length; a++) {
                slotOf[groups[a]] = a;
            }
            int source = k;
            if (r.hasGroups()) {
                r.groups().forEach((id, fraction) -> {
                    int h = groupIndex.getOrDefault(id, -1);
                    if (h >= 0 && slotOf[h] >= 0) {
                        action.accept(source, slotOf[h], h, fraction, true);
                    }
                });
            } else {
                Route.RankedWeights each = (rank, w) -> {
                    int h = rank < 0 ? -1 : groupOfRank[rank];
                    if (h >= 0 && slotOf[h] >= 0) {
                        action.accept(source, slotOf[h], h, w, false);
                    }
                };
                // by rank when the route is held over these engine ids (a previous snapshot of this fleet), else by id
                if (!r.forEachRanked(engineIds, each)) {
                    r.weights().forEach((engine, w) -> each.accept(engineIds.rankOf(engine), w));
                }
            }
            for (int g : groups) {
                slotOf[g] = -1;
            }
        }
    }

    /** The affinity caps: last snapshot's flow of each source into each of its groups. */
    private void fillKept(Snapshot previous) {
        // a previous group's fraction counts for the group of the same id now, in the proportion of its share
        // held by engines that are still in it
        double[] retained = new double[groupCount];
        for (int h = 0; h < groupCount; h++) {
            EngineGroup g = previous.groups().get(groupId[h]);
            if (g != null) {
                for (int j : groupEngines[h]) {
                    Double share = g.shares().get(engines.get(j).id());
                    retained[h] += share == null ? 0 : share;
                }
            }
        }
        forEachPreviousUse((k, a, h, w, ofGroup) ->
                sourceKept[k][a] += (ofGroup ? w * retained[h] : w) * previousRoute[k].demandRps());
    }

    /** Lowest marginal cost at zero load among a group's engines: the group's price floor, ms. */
    double groupPriceFloor(int h) {
        double m = Double.POSITIVE_INFINITY;
        for (int j : groupEngines[h]) {
            m = Math.min(m, costs[j].marginalAtZero);
        }
        return m;
    }
}
