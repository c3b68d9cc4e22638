package dev.sextant.request;

import dev.sextant.snapshot.EngineState;
import dev.sextant.topology.PriorityScheduling;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.EngineGroup;
import dev.sextant.snapshot.GroupedTable;
import dev.sextant.snapshot.KeyOrder;
import dev.sextant.snapshot.SlotTable;
import dev.sextant.snapshot.Snapshot;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * A snapshot as the request path of one gateway cluster reads it: classes by model, per-class slot
 * tables and engine arrays, each class's retry budget and deposit. Immutable once built; published through
 * one volatile field, so a request sees one snapshot whole (invariant 4).
 */
final class Compiled {
    /** Added to each class's demand when weighing engine shares, so classes without demand count too. */
    private static final double DEMAND_EPSILON = 1e-9;

    final Snapshot snapshot;
    final long receivedAt;
    final Map<String, ClassRoute[]> byModel;
    final Map<String, ClassRoute> byId;
    /** Classes whose slot table this gateway built from the weights: the snapshot had none, or a bad one. */
    final int localTables;

    private Compiled(Snapshot snapshot, long receivedAt, Map<String, ClassRoute[]> byModel,
                     Map<String, ClassRoute> byId, int localTables) {
        this.snapshot = snapshot;
        this.receivedAt = receivedAt;
        this.byModel = byModel;
        this.byId = byId;
        this.localTables = localTables;
    }

    Compiled refreshed(long now) {
        return new Compiled(snapshot, now, byModel, byId, localTables);
    }

    /**
     * @param cells        the gateway's state of an engine, by engine id (kept across snapshots)
     * @param retryBudgets the gateway's retry budget of a class, by class id (kept across snapshots)
     */
    static Compiled compile(String gateway, Snapshot s, Compiled previous, long now,
                            Function<String, EngineCell> cells, Function<String, RetryTokens> retryBudgets,
                            Function<String, Pool> inFlight, DataPlaneOptions options) {
        Map<String, Route> routes = s.routes().getOrDefault(gateway, Map.of());
        EngineIndex engines = new EngineIndex(s, gateway, cells, options);
        Map<String, Allowed> allowedSets = new HashMap<>();

        // Each engine's share of this gateway's requests in flight within its pool: the rate the policy sends it
        // from here times how long a request stays in flight there (Little's law), so that engines whose requests
        // last longer (a larger model, longer answers, farther away) are compared with what they should hold, not
        // with their share of the rate; and over the models that share engines only, so that the requests of a
        // model served elsewhere do not move the bound (docs/request-path.md, "Bounded load").
        int n = engines.size();
        PerEngine pe = new PerEngine(n);
        Pools pools = new Pools();
        for (Route r : routes.values()) {
            double d = Math.max(0, r.demandRps()) + DEMAND_EPSILON;
            boolean[] mask = allowed(r, engines, allowedSets).mask;
            pools.model(r.model());
            for (Map.Entry<String, Double> w : r.weights().entrySet()) {
                Integer j = engines.index.get(w.getKey());
                if (w.getValue() > 0 && j != null && mask[j]) {
                    pe.rps[j] += d * w.getValue();
                    pe.load[j] += d * w.getValue() * engines.durationMs[j];
                    pools.engine(j, r.model());
                }
            }
        }
        Map<String, Double> totals = new HashMap<>();
        for (int j = 0; j < n; j++) {
            if (pe.load[j] > 0) {
                totals.merge(pools.ofEngine(j), pe.load[j], Double::sum);
            }
        }
        for (int j = 0; j < n; j++) {
            String pool = pools.ofEngine(j);
            pe.poolTotal[j] = pool == null ? 0 : totals.getOrDefault(pool, 0.0);
            // what the engine may take from here before it is over its expected load: what the policy sends it from
            // here plus its planned spare capacity (effective capacity less all its planned load), req/s
            // (docs/request-path.md, "Spill under load")
            EngineState e = engines.states[j];
            double spare = Math.max(0, e.effectiveCapacityRps() - e.loadRps());
            pe.allowanceRps[j] = pe.rps[j] + (Double.isFinite(spare) ? spare : 0);
            pe.othersRps[j] = Math.max(0, e.loadRps() - pe.rps[j]);
            pe.capacityRps[j] = e.effectiveCapacityRps() > 0 && Double.isFinite(e.capacityRps()) ? e.capacityRps() : 0;
            engines.cells[j].limit = engineLimit(e, pe.allowanceRps[j], engines.durationMs[j], options);
            engines.cells[j].errorsExpected = e.penalty() < 1;
        }

        Map<String, ClassRoute> byId = new HashMap<>();
        Map<String, List<ClassRoute>> byModelList = new HashMap<>();
        Map<String, SlotTable> decodedGroups = new HashMap<>(); // a group's table, shared by the routes using it
        int localTables = 0;
        for (Map.Entry<String, Route> entry : routes.entrySet()) {
            String classId = entry.getKey();
            Route r = entry.getValue();
            ClassRoute prev = previous == null ? null : previous.byId.get(classId);
            long deposit = Math.round(s.retryRatio(r) * RetryTokens.UNIT);
            ClassRoute k = compileClass(classId, r, prev, engines, allowed(r, engines, allowedSets), pe,
                    inFlight.apply(pools.ofModel(r.model())), s.groups(), decodedGroups, retryBudgets.apply(classId),
                    deposit, options);
            byId.put(classId, k);
            byModelList.computeIfAbsent(r.model(), m -> new ArrayList<>()).add(k);
            if (k.localTable != null) {
                localTables++;
                options.listener().onLocalSlotTable(classId, "snapshot " + s.version() + ", class '" + classId
                        + "': " + k.localTable + "; built the slot table from the weights alone, so other gateways"
                        + " may choose other engines for some keys");
            }
        }
        classLimits(byId.values(), options);
        levels(engines, byId.values());
        Map<String, ClassRoute[]> byModel = new HashMap<>();
        byModelList.forEach((m, list) -> {
            list.sort(Comparator.comparing(k -> k.id));
            byModel.put(m, list.toArray(new ClassRoute[0]));
        });
        return new Compiled(s, now, byModel, byId, localTables);
    }

    /**
     * Gives each engine the priorities this gateway sends it where it schedules by priority (so that each judges its
     * own queue), and ends every spill under way: a new snapshot, a new allowance (docs/request-path.md, "Spill under
     * load").
     */
    private static void levels(EngineIndex engines, Iterable<ClassRoute> classes) {
        Map<EngineCell, java.util.TreeSet<Integer>> sent = new HashMap<>();
        for (ClassRoute k : classes) {
            for (int i = 0; i < k.cells.length; i++) {
                if (k.enginePriority[i] != Decision.NO_ENGINE_PRIORITY) {
                    sent.computeIfAbsent(k.cells[i], c -> new java.util.TreeSet<>()).add(k.enginePriority[i]);
                }
            }
            for (int i = 0; i < k.near.length; i++) {
                if (k.nearEnginePriority[i] != Decision.NO_ENGINE_PRIORITY) {
                    sent.computeIfAbsent(k.near[i], c -> new java.util.TreeSet<>()).add(k.nearEnginePriority[i]);
                }
            }
        }
        for (EngineCell cell : engines.cells) {
            java.util.TreeSet<Integer> p = sent.get(cell);
            cell.levels(p == null ? new int[0] : p.stream().mapToInt(Integer::intValue).toArray());
        }
    }

    /**
     * How many of this gateway's requests of the lower priorities an engine may hold (the highest has the fixed limit:
     * {@link ClassRoute#limit}): {@link DataPlaneOptions#inFlightPerCapacity()} times what it holds from here when it
     * serves its allowance (allowance × planned duration, Little's law), so that the lower priorities queue at most
     * about two batches behind the one the engine runs, whatever the control plane has seen yet; between
     * {@link DataPlaneOptions#MIN_DERIVED_LIMIT} and {@link DataPlaneOptions#maxInFlightPerEngine()}. An engine
     * without a finite, positive effective capacity has only the fixed limit: nothing says what it holds
     * (docs/request-path.md §3).
     */
    static int engineLimit(EngineState e, double allowanceRps, double durationMs, DataPlaneOptions options) {
        int max = options.maxInFlightPerEngine();
        double cap = e.effectiveCapacityRps();
        if (!(cap > 0) || !Double.isFinite(cap) || !Double.isFinite(options.inFlightPerCapacity())
                || !(allowanceRps > 0) || !Double.isFinite(allowanceRps) || !(durationMs > 0)) {
            return max;
        }
        double held = options.inFlightPerCapacity() * allowanceRps * durationMs / 1000;
        // a cast saturates: a held count beyond int's range is Integer.MAX_VALUE, then max
        return Math.min(max, Math.max(DataPlaneOptions.MIN_DERIVED_LIMIT, (int) Math.ceil(held - 1e-9)));
    }

    /**
     * Each class's share of the per-engine limit: of the R distinct priorities, rank r (0 = highest) may fill an
     * engine up to ⌊limit × (1 − reserve × r / (R − 1))⌋, at least 1, so that when engines are full the lowest
     * priorities are refused first; the highest has the fixed limit on every engine, so it always finds room, and so
     * has a lower one on the engines no class above it may use ({@link ClassRoute#sharedAbove}).
     */
    private static void classLimits(java.util.Collection<ClassRoute> classes, DataPlaneOptions options) {
        int[] priorities = classes.stream().mapToInt(k -> k.priority).distinct().sorted().toArray(); // ascending
        int ranks = priorities.length;
        for (ClassRoute k : classes) {
            int rank = ranks - 1 - java.util.Arrays.binarySearch(priorities, k.priority);
            double keep = ranks == 1 ? 1 : 1 - options.priorityReserve() * rank / (ranks - 1);
            k.keep = keep;
            k.topLimit = options.maxInFlightPerEngine();
            k.rank = rank;
            k.ranks = ranks;
        }
        // from the highest priority down, the engines the classes above each level may use, gathered once
        java.util.Set<EngineCell> above = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (int r = ranks - 1; r >= 0; r--) {
            int p = priorities[r];
            List<ClassRoute> level = classes.stream().filter(k -> k.priority == p).toList();
            for (ClassRoute k : level) {
                java.util.Set<EngineCell> mine = engines(k);
                mine.retainAll(above);
                k.sharedAbove = mine;
            }
            level.forEach(k -> above.addAll(engines(k)));
        }
    }

    /** Every engine {@code k} may be sent to: its weighted ones and the allowed ones nearby, by identity. */
    private static java.util.Set<EngineCell> engines(ClassRoute k) {
        java.util.Set<EngineCell> s = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        s.addAll(java.util.Arrays.asList(k.near));
        s.addAll(java.util.Arrays.asList(k.cells));
        return s;
    }

    /** What the routes of one snapshot plan for each engine from this gateway, indexed like {@link EngineIndex}. */
    private static final class PerEngine {
        /** Requests per second sent from here. */
        final double[] rps;
        /** Requests in flight expected from here, × 1000: rps × duration in ms. */
        final double[] load;
        /** {@link #load} summed over the engine's pool. */
        final double[] poolTotal;
        /** What the engine may take from here before it is over its expected load, req/s. */
        final double[] allowanceRps;
        /** Its nominal capacity, req/s; 0 without effective capacity. */
        final double[] capacityRps;
        /** What the policy sends it from the other gateways: its planned load less this gateway's, req/s. */
        final double[] othersRps;

        PerEngine(int n) {
            rps = new double[n];
            load = new double[n];
            poolTotal = new double[n];
            allowanceRps = new double[n];
            capacityRps = new double[n];
            othersRps = new double[n];
        }
    }

    /**
     * The models of one gateway's routes that share engines, joined (union-find over models, an engine uniting the
     * models that weight it): requests in flight are counted per pool, named by its sorted model ids, and an engine's
     * bound is a share of its pool's count. Models on separate engines (a 70B and an 8B model) are separate pools, as
     * if separate gateways served them; adapters of one base model on the same engines are one pool.
     */
    private static final class Pools {
        private final Map<String, String> parent = new HashMap<>();
        private final Map<Integer, String> engineModel = new HashMap<>();
        private Map<String, String> names;

        void model(String m) {
            parent.putIfAbsent(m, m);
        }

        void engine(int j, String m) {
            model(m);
            String other = engineModel.putIfAbsent(j, m);
            if (other != null) {
                parent.put(root(m), root(other));
            }
        }

        private String root(String m) {
            String r = m;
            while (!parent.get(r).equals(r)) {
                r = parent.get(r);
            }
            return r;
        }

        /** The pool's name for a model of the routes. */
        String ofModel(String m) {
            if (names == null) {
                Map<String, TreeSet<String>> members = new HashMap<>();
                for (String x : parent.keySet()) {
                    members.computeIfAbsent(root(x), r -> new TreeSet<>()).add(x);
                }
                names = new HashMap<>();
                for (String x : parent.keySet()) {
                    names.put(x, String.join(",", members.get(root(x))));
                }
            }
            return names.get(m);
        }

        /** The pool of an engine some route weights; null when none does. */
        String ofEngine(int j) {
            String m = engineModel.get(j);
            return m == null ? null : ofModel(m);
        }
    }

    /** The snapshot's engines as arrays indexed in id order, built once per swap. */
    private static final class EngineIndex {
        final String[] ids;
        final EngineState[] states;
        final Map<String, Integer> index;
        /** Round trip from this gateway cluster, ms; NaN when the engine's cluster is unreachable. */
        final double[] rttMs;
        final double[] expectedTtftMs;
        /**
         * How long a request sent from this gateway stays in flight at the engine, ms: its latency at the planned load
         * plus the round trip. An engine planned beyond its capacity (infinite latency) or without a latency gets
         * the longest finite one; when no engine has one, every engine 1, so that shares follow the rate alone.
         */
        final double[] durationMs;
        final EngineCell[] cells;
        /** Model id → which engines serve it. */
        final Map<String, boolean[]> servers = new HashMap<>();
        /** Every reachable engine: those with effective capacity first, then by round trip, then by id. */
        final int[] nearOrder;

        EngineIndex(Snapshot s, String gateway, Function<String, EngineCell> cellOf, DataPlaneOptions options) {
            Map<String, Double> rtt = s.networkRttMs().getOrDefault(gateway, Map.of());
            int n = s.engines().size();
            ids = new String[n];
            states = new EngineState[n];
            index = new HashMap<>(n * 2);
            rttMs = new double[n];
            expectedTtftMs = new double[n];
            cells = new EngineCell[n];
            int j = 0;
            for (Map.Entry<String, EngineState> e : s.engines().entrySet()) { // sorted by id
                ids[j] = e.getKey();
                states[j] = e.getValue();
                index.put(e.getKey(), j);
                Double ms = rtt.get(e.getValue().cluster());
                rttMs[j] = ms == null ? Double.NaN : ms;
                expectedTtftMs[j] = expectedTtft(e.getKey(), e.getValue(), ms == null ? 0 : ms, options);
                cells[j] = cellOf.apply(e.getKey());
                cells[j].planned(expectedTtftMs[j]);
                for (String model : e.getValue().models()) {
                    servers.computeIfAbsent(model, m -> new boolean[n])[j] = true;
                }
                j++;
            }
            List<Integer> reachable = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                if (!Double.isNaN(rttMs[i])) {
                    reachable.add(i);
                }
            }
            reachable.sort(Comparator.<Integer>comparingInt(i -> states[i].effectiveCapacityRps() > 0 ? 0 : 1)
                    .thenComparingDouble(i -> rttMs[i])
                    .thenComparingInt(i -> i));
            nearOrder = reachable.stream().mapToInt(Integer::intValue).toArray();
            durationMs = new double[n];
            double longest = 0;
            for (int i = 0; i < n; i++) {
                double ms = states[i].latencyMs() + (Double.isNaN(rttMs[i]) ? 0 : rttMs[i]);
                durationMs[i] = Double.isFinite(ms) && states[i].latencyMs() > 0 ? ms : Double.NaN;
                cells[i].plannedDurationMs = durationMs[i];
                if (durationMs[i] > longest) {
                    longest = durationMs[i];
                }
            }
            for (int i = 0; i < n; i++) {
                if (Double.isNaN(durationMs[i])) {
                    durationMs[i] = longest > 0 ? longest : 1;
                }
            }
        }

        int size() {
            return ids.length;
        }
    }

    /** The allowed set of a (model, residency) pair, and its fallback order; shared by the classes that have it. */
    private static final class Allowed {
        final boolean[] mask;
        /** Allowed, reachable engines: healthy first, then by round trip, then by id. */
        final int[] near;

        Allowed(boolean[] mask, int[] near) {
            this.mask = mask;
            this.near = near;
        }
    }

    private static Allowed allowed(Route r, EngineIndex engines, Map<String, Allowed> cache) {
        List<String> residency = new ArrayList<>(r.residency());
        residency.sort(null);
        return cache.computeIfAbsent(r.model() + "\u0000" + residency, key -> {
            int n = engines.size();
            boolean[] serves = engines.servers.get(r.model());
            boolean[] mask = new boolean[n];
            int reachable = 0;
            for (int j = 0; j < n; j++) {
                mask[j] = serves != null && serves[j]
                        && (r.residency().isEmpty() || r.residency().contains(engines.states[j].region()));
                if (mask[j] && !Double.isNaN(engines.rttMs[j])) {
                    reachable++;
                }
            }
            int[] near = new int[reachable];
            int i = 0;
            for (int j : engines.nearOrder) {
                if (mask[j]) {
                    near[i++] = j;
                }
            }
            return new Allowed(mask, near);
        });
    }

    static boolean allowed(Route r, EngineState e) {
        return e.models().contains(r.model()) && (r.residency().isEmpty() || r.residency().contains(e.region()));
    }

    private static ClassRoute compileClass(String classId, Route r, ClassRoute prev, EngineIndex engines,
                                           Allowed allowed, PerEngine pe, Pool pool,
                                           Map<String, EngineGroup> groups, Map<String, SlotTable> decodedGroups,
                                           RetryTokens retryTokens, long depositMicro, DataPlaneOptions options) {
        int[] idx = new int[r.weights().size()];
        double[] ws = new double[idx.length];
        int n = 0;
        int positive = 0; // engines the snapshot's table indexes: every positive weight, allowed or not
        for (Map.Entry<String, Double> w : r.weights().entrySet()) { // sorted by engine id
            Integer j = engines.index.get(w.getKey());
            positive += w.getValue() > 0 ? 1 : 0;
            if (w.getValue() > 0 && j != null && allowed.mask[j]) {
                idx[n] = j;
                ws[n] = w.getValue();
                n++;
            }
        }
        double[] weights = Arrays.copyOf(ws, n);
        List<String> ids = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            ids.add(engines.ids[idx[i]]);
        }
        KeyOrder table = null;
        String localTable = null;
        if (n > 0) {
            KeyOrder before = prev == null ? null : prev.table;
            boolean sameRoute = before != null && !r.hasGroups() && !prev.route.hasGroups()
                    && r.slots().equals(prev.route.slots()) && r.weights().equals(prev.route.weights())
                    && before.engineIds().equals(ids);
            if (sameRoute) {
                table = before; // the same table as before: keep it, and keep saying where it came from
                localTable = prev.localTable;
            } else if (r.slots().isEmpty()) {
                localTable = "the snapshot carries no slot table";
            } else if (n != positive) {
                localTable = "the snapshot's slot table names " + (positive - n)
                        + " engine(s) outside the class's allowed set or not in the snapshot";
            } else if (r.hasGroups()) {
                // two levels: the route's table picks a group, the group's table an engine in it
                try {
                    table = GroupedTable.of(r, groups, decodedGroups);
                } catch (IllegalArgumentException e) {
                    localTable = "the snapshot's slot tables for its engine groups are invalid (" + e.getMessage()
                            + ")";
                }
            } else {
                try {
                    table = SlotTable.decode(r.slots(), ids, weights);
                } catch (IllegalArgumentException e) {
                    localTable = "the snapshot's slot table is invalid (" + e.getMessage() + ")";
                }
            }
            if (table == null) {
                table = SlotTable.of(ids, weights);
            }
        }
        EngineCell[] cells = new EngineCell[n];
        String[] endpoints = new String[n];
        int[] enginePriority = new int[n];
        double[] share = new double[n];
        double[] ttft = new double[n];
        double[] allowance = new double[n];
        double[] plannedRps = new double[n];
        double[] plannedMs = new double[n];
        double[] places = new double[n];
        long[] keptNanos = new long[n];
        double[] othersInFlight = new double[n];
        for (int i = 0; i < n; i++) {
            int j = idx[i];
            cells[i] = engines.cells[j];
            endpoints[i] = engines.states[j].endpoint();
            enginePriority[i] = enginePriority(engines.states[j], r.priority());
            share[i] = pe.poolTotal[j] > 0 ? pe.load[j] / pe.poolTotal[j] : 1.0 / n;
            ttft[i] = engines.expectedTtftMs[j];
            allowance[i] = pe.allowanceRps[j];
            plannedRps[i] = pe.rps[j];
            plannedMs[i] = engines.durationMs[j];
            places[i] = engines.states[j].batchPlaces();
            double kept = engines.states[j].contextKeptSeconds();
            keptNanos[i] = Double.isNaN(kept) || kept * 1e9 >= Long.MAX_VALUE ? Long.MAX_VALUE : (long) (kept * 1e9);
            othersInFlight[i] = pe.othersRps[j] * plannedMs[i] / 1000;
        }
        int maxEjected = n <= 1 ? 0 : Math.min(n - 1, Math.max(1, (int) Math.floor(options.maxEjectedFraction() * n)));

        int[] nearIdx = allowed.near;
        int m = nearIdx.length;
        EngineCell[] near = new EngineCell[m];
        String[] nearEndpoints = new String[m];
        int[] nearEnginePriority = new int[m];
        double[] nearTtft = new double[m];
        double[] nearCapacity = new double[m];
        double[] nearAllowance = new double[m];
        double[] nearPlannedMs = new double[m];
        double[] nearOthers = new double[m];
        int[] nearPosition = new int[engines.size()];
        Arrays.fill(nearPosition, -1);
        int[] groupEnd = new int[m];
        for (int i = 0; i < m; i++) {
            int j = nearIdx[i];
            near[i] = engines.cells[j];
            nearEndpoints[i] = engines.states[j].endpoint();
            nearEnginePriority[i] = enginePriority(engines.states[j], r.priority());
            nearTtft[i] = engines.expectedTtftMs[j];
            nearCapacity[i] = pe.capacityRps[j];
            nearAllowance[i] = pe.allowanceRps[j];
            nearPlannedMs[i] = engines.durationMs[j];
            nearOthers[i] = pe.othersRps[j];
            nearPosition[j] = i;
        }
        int[] nearOf = new int[n];
        for (int i = 0; i < n; i++) {
            nearOf[i] = nearPosition[idx[i]];
        }
        for (int i = m - 1; i >= 0; i--) {
            boolean tiedWithNext = i + 1 < m && sameGroup(engines, nearIdx[i], nearIdx[i + 1]);
            groupEnd[i] = tiedWithNext ? groupEnd[i + 1] : i + 1;
        }
        String[] residency = r.residency().toArray(new String[0]);
        Arrays.sort(residency);
        ClassRoute k = new ClassRoute(classId, r, residency, table, localTable, cells, endpoints, enginePriority, share,
                pool, ttft, allowance, plannedRps, plannedMs, places, keptNanos, othersInFlight, maxEjected, near, nearEndpoints, nearEnginePriority, nearTtft, nearCapacity, nearAllowance, nearPlannedMs,
                nearOthers, nearOf, groupEnd,
                retryTokens, depositMicro);
        for (int j : nearIdx) {
            k.nearInService += engines.states[j].effectiveCapacityRps() > 0 ? 1 : 0;
        }
        return k;
    }

    /**
     * What a request of a class of {@code classPriority} carries as its body's {@code priority} to {@code engine}:
     * nothing ({@link Decision#NO_ENGINE_PRIORITY}) for an engine that schedules first come, first served.
     */
    private static int enginePriority(EngineState engine, int classPriority) {
        PriorityScheduling s = engine.priorityScheduling();
        return s == PriorityScheduling.NONE ? Decision.NO_ENGINE_PRIORITY : s.value(classPriority);
    }

    private static boolean sameGroup(EngineIndex engines, int a, int b) {
        return (engines.states[a].effectiveCapacityRps() > 0) == (engines.states[b].effectiveCapacityRps() > 0)
                && engines.rttMs[a] == engines.rttMs[b];
    }

    private static double expectedTtft(String id, EngineState e, double rttMs, DataPlaneOptions options) {
        double engineMs = options.ttftPredictor().expectedTtftMs(id, e);
        if (!(engineMs > 0) || Double.isInfinite(engineMs)) {
            return Double.NaN;
        }
        return engineMs + rttMs;
    }

    /**
     * The class of a request, or null when none fits (see {@link #refusal}). Rules, in order: same
     * model; residency — a request that names regions only fits classes restricted to a non-empty
     * subset of them, and prefers the class with exactly its set, then larger sets; a request that
     * names none prefers the unrestricted class; priority — the highest class priority not above the
     * request's (default when absent), else the lowest class priority; ties by class id.
     */
    ClassRoute classify(RequestMeta m, int defaultPriority) {
        ClassRoute[] candidates = byModel.get(m.model());
        if (candidates == null) {
            return null;
        }
        List<String> want = m.residency();
        int p = m.priority() == RequestMeta.NO_PRIORITY ? defaultPriority : m.priority();
        ClassRoute best = null;
        boolean bestExact = false;
        for (ClassRoute k : candidates) {
            boolean exact;
            if (want.isEmpty()) {
                exact = k.residency.length == 0;
            } else {
                if (!k.residencyWithin(want)) {
                    continue;
                }
                exact = k.residency.length == want.size();
            }
            if (best == null || better(k, exact, best, bestExact, p)) {
                best = k;
                bestExact = exact;
            }
        }
        return best;
    }

    /** Candidates come sorted by id, so a tie keeps the earlier id. */
    private static boolean better(ClassRoute k, boolean exact, ClassRoute best, boolean bestExact, int p) {
        if (exact != bestExact) {
            return exact;
        }
        if (k.residency.length != best.residency.length) {
            return k.residency.length > best.residency.length;
        }
        boolean fits = k.priority <= p;
        boolean bestFits = best.priority <= p;
        if (fits != bestFits) {
            return fits;
        }
        return fits ? k.priority > best.priority : k.priority < best.priority;
    }

    /** Why {@link #classify} found no class: unknown model, or no class that fits the residency. */
    Decision refusal(String gateway, RequestMeta m, long unavailableNanos) {
        if (!byModel.containsKey(m.model())) {
            List<String> models = new ArrayList<>(byModel.keySet());
            models.sort(null);
            return Decision.refused(null, snapshot.version(), false, Refusal.UNKNOWN_MODEL, "model '" + m.model()
                    + "' is not served at gateway cluster '" + gateway + "' (known models: " + models + ")", 0);
        }
        return Decision.refused(null, snapshot.version(), false, Refusal.RESIDENCY_NOT_SERVED, "no class of model '"
                + m.model() + "' is restricted to regions within " + m.residency() + " at gateway cluster '" + gateway
                + "', so no engine may process this request's data", 0);
    }
}
