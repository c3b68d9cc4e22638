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
    /** Engine id → classes that route to it by weight, for the ejection cap. */
    final Map<String, List<ClassRoute>> classesOf;
    /** r(u) in millionths of a retry, deposited by every admitted request. */
    final long depositMicro;

    private Compiled(Snapshot snapshot, long receivedAt, Map<String, ClassRoute[]> byModel,
                     Map<String, ClassRoute> byId, Map<String, List<ClassRoute>> classesOf, long depositMicro) {
        this.snapshot = snapshot;
        this.receivedAt = receivedAt;
        this.byModel = byModel;
        this.byId = byId;
        this.classesOf = classesOf;
        this.depositMicro = depositMicro;
    }

    Compiled refreshed(long now) {
        return new Compiled(snapshot, now, byModel, byId, classesOf, depositMicro);
    }

    static Compiled compile(String gateway, Snapshot s, Compiled previous, long now,
                            Function<String, EngineCell> cells, DataPlaneOptions options) {
        Map<String, Route> routes = s.routes().getOrDefault(gateway, Map.of());
        Map<String, Double> rtt = s.networkRttMs().getOrDefault(gateway, Map.of());
        Map<String, EngineState> engines = s.engines();

        // Each engine's share of this gateway's requests, over all classes, weighted by demand.
        Map<String, Double> load = new HashMap<>();
        double total = 0;
        for (Route r : routes.values()) {
            double d = Math.max(0, r.demandRps()) + DEMAND_EPSILON;
            for (Map.Entry<String, Double> w : r.weights().entrySet()) {
                EngineState e = engines.get(w.getKey());
                if (w.getValue() > 0 && e != null && allowed(r, e)) {
                    load.merge(w.getKey(), d * w.getValue(), Double::sum);
                    total += d * w.getValue();
                }
            }
        }

        Map<String, ClassRoute> byId = new HashMap<>();
        Map<String, List<ClassRoute>> byModelList = new HashMap<>();
        Map<String, List<ClassRoute>> classesOf = new HashMap<>();
        for (Map.Entry<String, Route> entry : routes.entrySet()) {
            String classId = entry.getKey();
            Route r = entry.getValue();
            ClassRoute prev = previous == null ? null : previous.byId.get(classId);
            ClassRoute k = compileClass(classId, r, prev, engines, rtt, load, total, cells, options);
            byId.put(classId, k);
            byModelList.computeIfAbsent(r.model(), m -> new ArrayList<>()).add(k);
            for (EngineCell c : k.cells) {
                classesOf.computeIfAbsent(c.id, x -> new ArrayList<>()).add(k);
            }
        }
        Map<String, ClassRoute[]> byModel = new HashMap<>();
        byModelList.forEach((m, list) -> {
            list.sort(Comparator.comparing(k -> k.id));
            byModel.put(m, list.toArray(new ClassRoute[0]));
        });
        long deposit = Math.round(s.retryBudget().ratio(s.fleetUtilization()) * RetryTokens.UNIT);
        return new Compiled(s, now, byModel, byId, classesOf, deposit);
    }

    static boolean allowed(Route r, EngineState e) {
        return e.models().contains(r.model()) && (r.residency().isEmpty() || r.residency().contains(e.region()));
    }

    private static ClassRoute compileClass(String classId, Route r, ClassRoute prev, Map<String, EngineState> engines,
                                           Map<String, Double> rtt, Map<String, Double> load, double total,
                                           Function<String, EngineCell> cellOf, DataPlaneOptions options) {
        List<String> ids = new ArrayList<>();
        List<Double> ws = new ArrayList<>();
        for (Map.Entry<String, Double> w : r.weights().entrySet()) { // sorted by engine id
            EngineState e = engines.get(w.getKey());
            if (w.getValue() > 0 && e != null && allowed(r, e)) {
                ids.add(w.getKey());
                ws.add(w.getValue());
            }
        }
        int n = ids.size();
        double[] weights = new double[n];
        for (int i = 0; i < n; i++) {
            weights[i] = ws.get(i);
        }
        WeightedSlotTable table = null;
        if (n > 0) {
            if (prev != null && prev.table != null && sameWeights(prev, ids, weights)) {
                table = prev.table;
            } else if (prev != null && prev.table != null) {
                table = WeightedSlotTable.build(prev.table, ids, weights);
            } else {
                table = WeightedSlotTable.build(null, ids, weights);
            }
        }
        EngineCell[] cells = new EngineCell[n];
        String[] endpoints = new String[n];
        double[] share = new double[n];
        double[] ttft = new double[n];
        for (int i = 0; i < n; i++) {
            String id = ids.get(i);
            EngineState e = engines.get(id);
            cells[i] = cellOf.apply(id);
            endpoints[i] = e.endpoint();
            share[i] = total > 0 ? load.getOrDefault(id, 0.0) / total : 1.0 / n;
            ttft[i] = expectedTtft(id, e, rtt, options);
        }
        int maxEjected = n <= 1 ? 0 : Math.min(n - 1, Math.max(1, (int) Math.floor(options.maxEjectedFraction() * n)));

        // Fallback order over the whole allowed set, reachable engines only.
        List<String> nearIds = new ArrayList<>();
        for (Map.Entry<String, EngineState> e : engines.entrySet()) {
            if (allowed(r, e.getValue()) && rtt.containsKey(e.getValue().cluster())) {
                nearIds.add(e.getKey());
            }
        }
        Comparator<String> order = Comparator.<String>comparingInt(id -> engines.get(id).effectiveCapacityRps() > 0 ? 0 : 1)
                .thenComparingDouble(id -> rtt.get(engines.get(id).cluster()))
                .thenComparing(Comparator.naturalOrder());
        nearIds.sort(order);
        int m = nearIds.size();
        EngineCell[] near = new EngineCell[m];
        String[] nearEndpoints = new String[m];
        double[] nearTtft = new double[m];
        int[] groupEnd = new int[m];
        for (int i = 0; i < m; i++) {
            String id = nearIds.get(i);
            EngineState e = engines.get(id);
            near[i] = cellOf.apply(id);
            nearEndpoints[i] = e.endpoint();
            nearTtft[i] = expectedTtft(id, e, rtt, options);
        }
        for (int i = m - 1; i >= 0; i--) {
            boolean tiedWithNext = i + 1 < m
                    && sameGroup(engines.get(nearIds.get(i)), engines.get(nearIds.get(i + 1)), rtt);
            groupEnd[i] = tiedWithNext ? groupEnd[i + 1] : i + 1;
        }
        String[] residency = r.residency().toArray(new String[0]);
        Arrays.sort(residency);
        return new ClassRoute(classId, r.model(), residency, r.priority(), r.shedFraction(), table, cells, endpoints,
                share, ttft, maxEjected, near, nearEndpoints, nearTtft, groupEnd);
    }

    private static boolean sameGroup(EngineState a, EngineState b, Map<String, Double> rtt) {
        return (a.effectiveCapacityRps() > 0) == (b.effectiveCapacityRps() > 0)
                && rtt.get(a.cluster()).doubleValue() == rtt.get(b.cluster()).doubleValue();
    }

    private static boolean sameWeights(ClassRoute prev, List<String> ids, double[] weights) {
        if (!prev.table.engineIds().equals(ids)) {
            return false;
        }
        int[] target = WeightedSlotTable.largestRemainder(weights, sum(weights), prev.table.slotCount());
        for (int i = 0; i < target.length; i++) {
            if (target[i] != prev.table.slots(i)) {
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

    private static double expectedTtft(String id, EngineState e, Map<String, Double> rtt, DataPlaneOptions options) {
        double engineMs = options.ttftPredictor().expectedTtftMs(id, e);
        if (!(engineMs > 0) || Double.isInfinite(engineMs)) {
            return Double.NaN;
        }
        return engineMs + rtt.getOrDefault(e.cluster(), 0.0);
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
