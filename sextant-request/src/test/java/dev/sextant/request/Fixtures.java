package dev.sextant.request;

import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Objective;
import dev.sextant.snapshot.RetryBudget;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

/** Snapshots built directly from the records, and a hand-driven clock. */
final class Fixtures {
    static final Objective OBJECTIVE = new Objective(0, 0, Double.NaN, Double.NaN, 0, 0);

    private Fixtures() {
    }

    /** A clock the test moves by hand. */
    static final class ManualTicker implements Ticker {
        private final AtomicLong now = new AtomicLong(1_000_000_000L);

        @Override
        public long nanos() {
            return now.get();
        }

        void advanceMillis(long ms) {
            now.addAndGet(ms * 1_000_000L);
        }

        void advanceSeconds(double s) {
            now.addAndGet((long) (s * 1e9));
        }
    }

    static EngineState engine(String cluster, String region, List<String> models, double latencyMs) {
        return new EngineState(cluster, region, "http://" + cluster + ".invalid", models, 10, 100, 90, 0.1,
                latencyMs, latencyMs, 0, 1);
    }

    static Route route(String model, List<String> residency, int priority, Map<String, Double> weights,
                       double shed) {
        return new Route(model, residency, priority, 10, weights, shed, Double.NaN);
    }

    /** A builder for one gateway cluster's snapshot. */
    static final class SnapshotBuilder {
        final String gateway;
        long version = 1;
        double utilization = 0.5;
        RetryBudget budget = RetryBudget.DEFAULT;
        final Map<String, EngineState> engines = new TreeMap<>();
        final Map<String, Route> routes = new TreeMap<>();
        final Map<String, Double> rtt = new TreeMap<>();

        SnapshotBuilder(String gateway) {
            this.gateway = gateway;
        }

        SnapshotBuilder version(long v) {
            version = v;
            return this;
        }

        SnapshotBuilder utilization(double u) {
            utilization = u;
            return this;
        }

        SnapshotBuilder budget(RetryBudget b) {
            budget = b;
            return this;
        }

        SnapshotBuilder engine(String id, String cluster, String region, double latencyMs, String... models) {
            engines.put(id, Fixtures.engine(cluster, region, List.of(models), latencyMs));
            return this;
        }

        /** Engine {@code id} (added before) with the outlier penalty {@code p}. */
        SnapshotBuilder penalty(String id, double p) {
            EngineState e = engines.get(id);
            engines.put(id, new EngineState(e.cluster(), e.region(), e.endpoint(), e.models(), e.loadRps(),
                    e.capacityRps(), e.effectiveCapacityRps(), e.utilization(), e.latencyMs(), e.marginalCostMs(),
                    e.shadowPriceMs(), p));
            return this;
        }

        SnapshotBuilder rtt(String cluster, double ms) {
            rtt.put(cluster, ms);
            return this;
        }

        SnapshotBuilder route(String classId, String model, List<String> residency, int priority, double shed,
                              Map<String, Double> weights) {
            routes.put(classId, Fixtures.route(model, residency, priority, weights, shed));
            return this;
        }

        /** A class of its own model, without residency or shedding, whose allowed engines are {@code u} used. */
        SnapshotBuilder routeAt(String classId, String model, double allowedUtilization, Map<String, Double> weights) {
            routes.put(classId, new Route(model, List.of(), 0, 10, weights, 0, Double.NaN, "", Map.of(),
                    allowedUtilization));
            return this;
        }

        Snapshot build() {
            return new Snapshot(version, "", "test", utilization, budget, Map.of(gateway, routes), engines,
                    Map.of(gateway, rtt), OBJECTIVE).sealed(version);
        }
    }

    /** Weights {@code e0..e(n-1)} from the values given, in order. */
    static Map<String, Double> weights(double... w) {
        Map<String, Double> m = new LinkedHashMap<>();
        for (int i = 0; i < w.length; i++) {
            m.put("e" + i, w[i]);
        }
        return m;
    }

    /** One gateway "g", one model "m", n engines in one cluster "c" (rtt 1 ms), one class "k". */
    static Snapshot simple(long version, double shed, double... w) {
        SnapshotBuilder b = new SnapshotBuilder("g").version(version).rtt("c", 1);
        for (int i = 0; i < w.length; i++) {
            b.engine("e" + i, "c", "r", 100, "m");
        }
        return b.route("k", "m", List.of(), 0, shed, weights(w)).build();
    }

    static List<String> ids(int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(String.format("e%05d", i));
        }
        return out;
    }
}
