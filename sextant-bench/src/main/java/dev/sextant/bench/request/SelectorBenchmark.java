package dev.sextant.bench.request;

import dev.sextant.request.DataPlane;
import dev.sextant.request.DataPlaneOptions;
import dev.sextant.request.Decision;
import dev.sextant.request.Outcome;
import dev.sextant.request.RequestMeta;
import dev.sextant.request.Ticker;
import dev.sextant.snapshot.EngineGroup;
import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.GroupedTable;
import dev.sextant.snapshot.Objective;
import dev.sextant.snapshot.RetryBudget;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.SlotTable;
import dev.sextant.snapshot.Snapshot;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * The request path's engine choice (docs/request-path.md §4): first-engine selection for a key among 16, 1,000 and
 * 10,000 weighted engines with the slot table, beside the naive alternatives measured in the same
 * run (weighted random by binary search, a plain ring with 100 virtual nodes per engine, weighted
 * rendezvous hashing); the whole {@link DataPlane#route} + {@link DataPlane#onFinish} round trip;
 * and the snapshot swap's precomputation with 64 classes × 1,000 engines.
 *
 * {@code groupedTable} is the same choice for a grouped route (groups of 16 engines, two tables).
 *
 * <p>Targets: {@code slotTable} ≤ 150 ns median and 0 B/op ({@code gc.alloc.rate.norm}) at every
 * size; {@code swap64x1000} ≤ 50 ms.
 *
 * <p>Run (on a quiet machine; the averages bound the medians from above for these tight
 * distributions, add {@code -bm sample} for percentiles):
 * <pre>
 * mvn -B -q -pl sextant-bench -am package -DskipTests
 * java -jar sextant-bench/target/benchmarks.jar SelectorBenchmark -f 2 -wi 3 -i 5 -w 2s -r 2s -prof gc
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class SelectorBenchmark {

    /** One class's weighted engines and a stream of keys. */
    @State(Scope.Thread)
    public static class Selection {
        @Param({"16", "1000", "10000"})
        public int engines;

        SlotTable table;
        GroupedTable grouped;
        NaiveSelectors.WeightedRandom weightedRandom;
        NaiveSelectors.VirtualNodeRing ring;
        NaiveSelectors.WeightedRendezvous rendezvous;
        long[] keys;
        int next;
        final int[] order = new int[3];

        @Setup
        public void setup() {
            SplittableRandom rnd = new SplittableRandom(42);
            double[] w = new double[engines];
            List<String> ids = new ArrayList<>();
            for (int i = 0; i < engines; i++) {
                w[i] = 0.2 + rnd.nextDouble();
                ids.add("engine-" + i);
            }
            table = SlotTable.of(ids, w);
            grouped = grouped(ids, w);
            weightedRandom = new NaiveSelectors.WeightedRandom(w);
            ring = new NaiveSelectors.VirtualNodeRing(w);
            rendezvous = new NaiveSelectors.WeightedRendezvous(w);
            keys = new long[1 << 16];
            for (int i = 0; i < keys.length; i++) {
                keys[i] = rnd.nextLong();
            }
        }

        long key() {
            return keys[next++ & (keys.length - 1)];
        }

        /** The same engines as a grouped route: groups of 16 consecutive engines, each group's fraction its sum. */
        static GroupedTable grouped(List<String> ids, double[] w) {
            int n = ids.size();
            int count = (n + 15) / 16;
            String[] groupIds = new String[count];
            double[] fractions = new double[count];
            EngineGroup[] groups = new EngineGroup[count];
            Map<String, EngineGroup> byId = new TreeMap<>();
            double total = java.util.Arrays.stream(w).sum();
            for (int g = 0; g < count; g++) {
                groupIds[g] = String.format("group-%05d", g);
                List<String> members = ids.subList(16 * g, Math.min(n, 16 * g + 16));
                double[] shares = java.util.Arrays.copyOfRange(w, 16 * g, 16 * g + members.size());
                double sum = java.util.Arrays.stream(shares).sum();
                Map<String, Double> byEngine = new TreeMap<>();
                for (int i = 0; i < shares.length; i++) {
                    shares[i] /= sum;
                    byEngine.put(members.get(i), shares[i]);
                }
                groups[g] = new EngineGroup(byEngine, SlotTable.of(new ArrayList<>(byEngine.keySet()),
                        byEngine.values().stream().mapToDouble(Double::doubleValue).toArray()).encode());
                byId.put(groupIds[g], groups[g]);
                fractions[g] = sum / total;
            }
            Route r = Route.grouped("m", List.of(), 0, 1, groupIds, fractions, groups, 0, 1,
                    SlotTable.of(List.of(groupIds), fractions).encode());
            return GroupedTable.of(r, byId, new HashMap<>());
        }
    }

    /** The same choice for a grouped route (the optimal policy's): the route's table, then the group's. */
    @Benchmark
    public int groupedTable(Selection s) {
        return s.grouped.first(s.key());
    }

    @Benchmark
    public int slotTable(Selection s) {
        return s.table.first(s.key());
    }

    /** The key's first three engines (first choice plus the retry order), into a reused array. */
    @Benchmark
    public int slotTableOrderOf3(Selection s) {
        return s.table.fill(s.key(), s.order);
    }

    @Benchmark
    public int naiveWeightedRandom(Selection s) {
        return s.weightedRandom.pick(s.key());
    }

    @Benchmark
    public int naiveRingVirtualNodes(Selection s) {
        return s.ring.pick(s.key());
    }

    @Benchmark
    public int naiveWeightedRendezvous(Selection s) {
        return s.rendezvous.pick(s.key());
    }

    /** A data plane over one class of 1,000 engines: classification, admission, selection, release. */
    @State(Scope.Thread)
    public static class Plane {
        DataPlane plane;
        long[] keys;
        int next;

        @Setup
        public void setup() {
            Snapshot s = snapshot(1, 1000, new SplittableRandom(7), 1);
            plane = DataPlane.create("g", s, System::nanoTime, DataPlaneOptions.defaults());
            SplittableRandom rnd = new SplittableRandom(8);
            keys = new long[1 << 16];
            for (int i = 0; i < keys.length; i++) {
                keys[i] = rnd.nextLong();
            }
        }
    }

    @Benchmark
    public Decision routeAndFinish(Plane p) {
        long key = p.keys[p.next++ & (p.keys.length - 1)];
        Decision d = p.plane.route(RequestMeta.of("model-0", key, key));
        p.plane.onFinish(d, Outcome.SUCCESS, -1);
        return d;
    }

    /** As {@link #routeAndFinish}, every request with a prefix key shared by 64 conversations (the prefix spread). */
    @Benchmark
    public Decision routeAndFinishWithPrefix(Plane p) {
        long key = p.keys[p.next++ & (p.keys.length - 1)];
        Decision d = p.plane.route(new RequestMeta("model-0", List.of(), RequestMeta.NO_PRIORITY, key,
                p.keys[(int) (key >>> 58)], key));
        p.plane.onFinish(d, Outcome.SUCCESS, -1);
        return d;
    }

    /** Two snapshots of 64 classes × 1,000 engines with different weights, swapped in turn. */
    @State(Scope.Thread)
    public static class Swap {
        DataPlane plane;
        Snapshot a;
        Snapshot b;
        Snapshot next;
        boolean flip;
        long version = 1;

        @Setup(Level.Trial)
        public void setup() {
            a = snapshot(1, 1000, new SplittableRandom(1), 64);
            b = snapshot(1, 1000, new SplittableRandom(2), 64);
            Ticker ticker = System::nanoTime;
            plane = DataPlane.create("g", a, ticker, DataPlaneOptions.defaults());
        }

        /** The other snapshot under the next version (a data plane refuses a version it holds with other content). */
        @Setup(Level.Invocation)
        public void nextVersion() {
            flip = !flip;
            Snapshot s = flip ? b : a;
            next = new Snapshot(++version, s.hash(), s.policy(), s.fleetUtilization(), s.retryBudget(), s.routes(),
                    s.engines(), s.networkRttMs(), s.objective());
        }
    }

    @Benchmark
    @BenchmarkMode(Mode.AverageTime)
    @OutputTimeUnit(TimeUnit.MILLISECONDS)
    public boolean swap64x1000(Swap s) {
        return s.plane.swap(s.next);
    }

    /** {@code classes} classes of one model each over the same {@code engines} engines, random weights. */
    static Snapshot snapshot(long version, int engines, SplittableRandom rnd, int classes) {
        Map<String, EngineState> states = new HashMap<>();
        Map<String, Double> rtt = new HashMap<>();
        List<String> models = new ArrayList<>();
        for (int k = 0; k < classes; k++) {
            models.add("model-" + k);
        }
        for (int c = 0; c < 10; c++) {
            rtt.put("cluster-" + c, 1.0 + c * 10);
        }
        for (int i = 0; i < engines; i++) {
            states.put("engine-" + i, new EngineState("cluster-" + (i % 10), "region", "http://engine-" + i,
                    models, 1, 10, 9, 0.5, 200, 200, 0, 1));
        }
        Map<String, Route> routes = new HashMap<>();
        for (int k = 0; k < classes; k++) {
            Map<String, Double> w = new HashMap<>();
            double sum = 0;
            double[] raw = new double[engines];
            for (int i = 0; i < engines; i++) {
                raw[i] = 0.2 + rnd.nextDouble();
                sum += raw[i];
            }
            for (int i = 0; i < engines; i++) {
                w.put("engine-" + i, raw[i] / sum);
            }
            Route r = new Route("model-" + k, List.of(), 0, 100, w, 0, Double.NaN);
            // The table the control plane would publish, so a swap measures decoding and checking it.
            String slots = SlotTable.of(r.slotEngines(), r.slotWeights()).encode();
            routes.put("class-" + k, new Route("model-" + k, List.of(), 0, 100, w, 0, Double.NaN, slots));
        }
        return new Snapshot(version, "", "bench", 0.5, RetryBudget.DEFAULT, Map.of("g", routes), states,
                Map.of("g", rtt), new Objective(0, 0, Double.NaN, Double.NaN, 0, 0));
    }
}
