package dev.sextant.request;

import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * A snapshot as the request path of one gateway cluster reads it: classes by model, per-class slot
 * tables and engine arrays, the retry deposit. Immutable once built; published through one volatile
 * field, so a request sees one snapshot whole (invariant 4).
 */
final class Compiled {
    /** Added to each class's demand when weighing engine shares, so classes without demand count too. */
    private static final double DEMAND_EPSILON = 1e-9;

    final Snapshot snapshot;
    final long receivedAt;
    final Map<String, ClassRoute[]> byModel;
    final Map<String, ClassRoute> byId;
    /** r(u) in millionths of a retry, deposited by every admitted request. */
    final long depositMicro;

    private Compiled(Snapshot snapshot, long receivedAt, Map<String, ClassRoute[]> byModel,
                     Map<String, ClassRoute> byId, long depositMicro) {
        this.snapshot = snapshot;
        this.receivedAt = receivedAt;
        this.byModel = byModel;
        this.byId = byId;
        this.depositMicro = depositMicro;
    }

    Compiled refreshed(long now) {
        return new Compiled(snapshot, now, byModel, byId, depositMicro);
    }

    static Compiled compile(String gateway, Snapshot s, Compiled previous, long now,
                            Function<String, EngineCell> cells, DataPlaneOptions options) {
        Map<String, Route> routes = s.routes().getOrDefault(gateway, Map.of());
        EngineIndex engines = new EngineIndex(s, gateway, cells, options);
        Map<String, Allowed> allowedSets = new HashMap<>();

        // One pass over every class's weights: the allowed engines with positive weight, and each
        // engine's share of this gateway's requests over all classes, weighted by demand.
        double[] load = new double[engines.size()];
        double total = 0;
        List<ClassWeights> classes = new ArrayList<>(routes.size());
        for (Map.Entry<String, Route> entry : routes.entrySet()) {
            Route r = entry.getValue();
            Allowed allowed = allowed(r, engines, allowedSets);
            ClassWeights cw = new ClassWeights(entry.getKey(), r, allowed, r.weights().size());
            double d = Math.max(0, r.demandRps()) + DEMAND_EPSILON;
            for (Map.Entry<String, Double> w : r.weights().entrySet()) { // sorted by engine id
                Integer j = engines.index.get(w.getKey());
                double weight = w.getValue();
                if (weight > 0 && j != null && allowed.mask[j]) {
                    cw.idx[cw.n] = j;
                    cw.weights[cw.n] = weight;
                    cw.n++;
                    load[j] += d * weight;
                    total += d * weight;
                }
            }
            classes.add(cw);
        }

        Map<String, ClassRoute> byId = new HashMap<>();
        Map<String, List<ClassRoute>> byModelList = new HashMap<>();
        for (ClassWeights cw : classes) {
            ClassRoute prev = previous == null ? null : previous.byId.get(cw.id);
            ClassRoute k = compileClass(cw, prev, engines, load, total, options);
            byId.put(cw.id, k);
            byModelList.computeIfAbsent(cw.route.model(), m -> new ArrayList<>()).add(k);
        }
        Map<String, ClassRoute[]> byModel = new HashMap<>();
        byModelList.forEach((m, list) -> {
            list.sort(Comparator.comparing(k -> k.id));
            byModel.put(m, list.toArray(new ClassRoute[0]));
        });
        long deposit = Math.round(s.retryBudget().ratio(s.fleetUtilization()) * RetryTokens.UNIT);
        return new Compiled(s, now, byModel, byId, deposit);
    }

    /** The snapshot's engines as arrays indexed in id order, built once per swap. */
    private static final class EngineIndex {
        final String[] ids;
        final EngineState[] states;
        final Map<String, Integer> index;
        /** Round trip from this gateway cluster, ms; NaN when the engine's cluster is unreachable. */
        final double[] rttMs;
        final double[] expectedTtftMs;
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

    /** A class's allowed engines with positive weight, in engine id order: indices and weights. */
    private static final class ClassWeights {
        final String id;
        final Route route;
        final Allowed allowed;
        final int[] idx;
        final double[] weights;
        int n;

        ClassWeights(String id, Route route, Allowed allowed, int capacity) {
            this.id = id;
            this.route = route;
            this.allowed = allowed;
            this.idx = new int[capacity];
            this.weights = new double[capacity];
        }
    }

    private static ClassRoute compileClass(ClassWeights cw, ClassRoute prev, EngineIndex engines, double[] load,
                                           double total, DataPlaneOptions options) {
        String classId = cw.id;
        Route r = cw.route;
        Allowed allowed = cw.allowed;
        int n = cw.n;
        int[] idx = cw.idx;
        double[] weights = Arrays.copyOf(cw.weights, n);
        List<String> ids = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            ids.add(engines.ids[idx[i]]);
        }
        WeightedSlotTable table = null;
        if (n > 0) {
            int[] target = WeightedSlotTable.largestRemainder(weights, sum(weights), WeightedSlotTable.slotCountFor(n));
            WeightedSlotTable before = prev == null ? null : prev.table;
            table = before != null && sameCounts(before, ids, target)
                    ? before
                    : WeightedSlotTable.build(before, ids, weights, target);
        }
        EngineCell[] cells = new EngineCell[n];
        String[] endpoints = new String[n];
        double[] share = new double[n];
        double[] ttft = new double[n];
        for (int i = 0; i < n; i++) {
            int j = idx[i];
            cells[i] = engines.cells[j];
            endpoints[i] = engines.states[j].endpoint();
            share[i] = total > 0 ? load[j] / total : 1.0 / n;
            ttft[i] = engines.expectedTtftMs[j];
        }
        int maxEjected = n <= 1 ? 0 : Math.min(n - 1, Math.max(1, (int) Math.floor(options.maxEjectedFraction() * n)));

        int[] nearIdx = allowed.near;
        int m = nearIdx.length;
        EngineCell[] near = new EngineCell[m];
        String[] nearEndpoints = new String[m];
        double[] nearTtft = new double[m];
        int[] groupEnd = new int[m];
        for (int i = 0; i < m; i++) {
            int j = nearIdx[i];
            near[i] = engines.cells[j];
            nearEndpoints[i] = engines.states[j].endpoint();
            nearTtft[i] = engines.expectedTtftMs[j];
        }
        for (int i = m - 1; i >= 0; i--) {
            boolean tiedWithNext = i + 1 < m && sameGroup(engines, nearIdx[i], nearIdx[i + 1]);
            groupEnd[i] = tiedWithNext ? groupEnd[i + 1] : i + 1;
        }
        String[] residency = r.residency().toArray(new String[0]);
        Arrays.sort(residency);
        return new ClassRoute(classId, r.model(), residency, r.priority(), r.shedFraction(), table, cells, endpoints,
                share, ttft, maxEjected, near, nearEndpoints, nearTtft, groupEnd);
    }

    private static boolean sameGroup(EngineIndex engines, int a, int b) {
        return (engines.states[a].effectiveCapacityRps() > 0) == (engines.states[b].effectiveCapacityRps() > 0)
                && engines.rttMs[a] == engines.rttMs[b];
    }

    private static boolean sameCounts(WeightedSlotTable before, List<String> ids, int[] target) {
        if (before.slotCount() != WeightedSlotTable.slotCountFor(ids.size()) || !before.engineIds().equals(ids)) {
            return false;
        }
        for (int i = 0; i < target.length; i++) {
            if (target[i] != before.slots(i)) {
                return false;
            }
        }
        return true;
    }

    private static double sum(double[] a) {
        double s = 0;
        for (double v : a) {
            s += v;
        }
        return s;
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
        return Decision.refused(null, snapshot.version(), false, Refusal.NO_ALLOWED_ENGINE, "no class of model '"
                + m.model() + "' is restricted to regions within " + m.residency()
                + ", so no engine may process this request's data", unavailableNanos);
    }
}
