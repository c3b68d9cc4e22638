package dev.sextant.request;

import dev.sextant.snapshot.EngineGroup;
import dev.sextant.snapshot.GroupedTable;
import dev.sextant.snapshot.KeyOrder;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.SlotCodec;
import dev.sextant.snapshot.SlotRuns;
import dev.sextant.snapshot.SlotTable;
import dev.sextant.snapshot.Snapshot;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/** The data plane routes by the slot table the snapshot carries, so gateways agree whatever their history. */
class SnapshotSlotTableTest {
    private static final int ENGINES = 12;

    @Test
    void route_planesWithDifferentHistories_chooseTheSameEngineForEveryKeyOfTheSameSnapshot() {
        SplittableRandom rnd = new SplittableRandom(17);
        List<Snapshot> published = new ArrayList<>();
        SlotTable table = null;
        for (long v = 1; v <= 3; v++) {
            Snapshot s = Fixtures.simple(v, 0, weights(rnd));
            Route r = s.route("g", "k");
            // The control plane's tables depend on its history (each is rebalanced from the one before), so
            // they need not be the tables the weights alone give: here, the engines' blocks in reverse order.
            table = reversed(r.slotEngines(), r.slotWeights());
            published.add(withSlots(s, table.encode()));
        }
        Snapshot v3 = published.get(2);
        Route r3 = v3.route("g", "k");
        SlotTable fresh = SlotTable.of(r3.slotEngines(), r3.slotWeights());

        DataPlane sawAll = plane(published.get(0));
        sawAll.swap(published.get(1));
        sawAll.swap(v3);
        DataPlane startedAtV3 = plane(v3);

        int differFromFresh = 0;
        for (int i = 0; i < 100_000; i++) {
            long key = rnd.nextLong();
            String a = routeOnce(sawAll, key);
            String b = routeOnce(startedAtV3, key);
            assertThat(b).isEqualTo(a);
            assertThat(a).isEqualTo(table.engineIds().get(table.first(key)));
            if (!a.equals(fresh.engineIds().get(fresh.first(key)))) {
                differFromFresh++;
            }
        }
        // The history matters: a table built from v3's weights alone would send these keys elsewhere.
        assertThat(differFromFresh).isGreaterThan(1000);
        assertThat(sawAll.status().localSlotTables()).isZero();
        assertThat(startedAtV3.status().localSlotTables()).isZero();
    }

    @Test
    void swap_snapshotWithoutTable_buildsOneFromTheWeightsAndSaysSo() {
        List<String> events = new ArrayList<>();
        Snapshot s = Fixtures.simple(3, 0, weights(new SplittableRandom(2)));
        DataPlane p = DataPlane.create("g", s, new Fixtures.ManualTicker(),
                DataPlaneOptions.builder().listener(recorder(events)).build());
        Route r = s.route("g", "k");
        assertFollows(p, SlotTable.of(r.slotEngines(), r.slotWeights()));
        assertThat(p.status().localSlotTables()).isEqualTo(1);
        assertThat(events).singleElement().asString()
                .startsWith("k: snapshot 3, class 'k': the snapshot carries no slot table; built the slot table"
                        + " from the weights alone");
    }

    @Test
    void swap_corruptTable_isRejectedInFavourOfTheWeightsAndSaysWhy() {
        SplittableRandom rnd = new SplittableRandom(5);
        Snapshot v1 = Fixtures.simple(1, 0, weights(rnd));
        Route good = v1.route("g", "k");
        SlotTable t = SlotTable.of(good.slotEngines(), good.slotWeights());
        List<String> events = new ArrayList<>();
        DataPlane p = DataPlane.create("g", withSlots(v1, t.encode()), new Fixtures.ManualTicker(),
                DataPlaneOptions.builder().listener(recorder(events)).build());
        assertThat(p.status().localSlotTables()).isZero();
        assertThat(events).isEmpty();

        // Version 2: new weights, but the table of the old ones (well formed, wrong shares).
        double[] w2 = weights(rnd);
        Snapshot v2 = Fixtures.simple(2, 0, w2);
        Route changed = v2.route("g", "k");
        SlotTable right = SlotTable.of(changed.slotEngines(), changed.slotWeights());
        p.swap(withSlots(v2, t.encode()));
        assertFollows(p, right);
        assertThat(p.status().localSlotTables()).isEqualTo(1);
        assertThat(events).singleElement().asString().contains("the snapshot's slot table is invalid (slots: engine ");

        // Version 3: not even a table. Version 4: a good one again.
        p.swap(withSlots(Fixtures.simple(3, 0, w2), "AQ"));
        assertThat(events).hasSize(2).last().asString().contains("is invalid (slots: truncated");
        p.swap(withSlots(Fixtures.simple(4, 0, w2), right.encode()));
        assertThat(p.status().localSlotTables()).isZero();
        assertThat(events).hasSize(2);
    }

    @Test
    void swap_tableOverAnEngineOutsideTheAllowedSet_isNotUsed() {
        Snapshot s = new Fixtures.SnapshotBuilder("g").version(1).rtt("c", 1)
                .engine("a", "c", "eu", 100, "m")
                .engine("b", "c", "us", 100, "m")
                .route("k", "m", List.of("eu"), 0, 0, Map.of("a", 0.5, "b", 0.5))
                .build();
        Route r = s.route("g", "k");
        List<String> events = new ArrayList<>();
        DataPlane p = DataPlane.create("g", withSlots(s, SlotTable.of(r.slotEngines(), r.slotWeights()).encode()),
                new Fixtures.ManualTicker(), DataPlaneOptions.builder().listener(recorder(events)).build());
        assertThat(events).singleElement().asString().contains("names 1 engine(s) outside the class's allowed set");
        for (long key = 0; key < 1000; key++) {
            assertThat(routeOnce(p, key)).isEqualTo("a");
        }
    }

    @Test
    void route_groupedRoute_followsItsTwoLevelTable_andABadGroupTableFallsBackToTheWeights() {
        Snapshot flat = new Fixtures.SnapshotBuilder("g").version(1).rtt("A", 1).rtt("B", 20)
                .engine("a1", "A", "eu", 100, "m").engine("a2", "A", "eu", 100, "m").engine("a3", "A", "eu", 100, "m")
                .engine("b1", "B", "eu", 100, "m").engine("b2", "B", "eu", 100, "m")
                .route("k", "m", List.of(), 0, 0, Map.of("a1", 1.0))
                .build();
        Map<String, EngineGroup> groups = Map.of(
                "A|m", group(List.of("a1", "a2", "a3"), new double[] {0.5, 0.3, 0.2}),
                "B|m", group(List.of("b1", "b2"), new double[] {0.25, 0.75}));
        Snapshot s = withGroupedRoute(flat, groups, 0.7, 0.3);
        List<String> events = new ArrayList<>();
        DataPlane p = DataPlane.create("g", s, new Fixtures.ManualTicker(),
                DataPlaneOptions.builder().listener(recorder(events)).build());
        assertThat(p.status().localSlotTables()).isZero();
        KeyOrder order = s.route("g", "k").keyOrder(s.groups());
        assertThat(order).isInstanceOf(GroupedTable.class);
        int[] counts = new int[5];
        for (long i = 0; i < 20_000; i++) {
            long key = i * 0x9E3779B97F4A7C15L;
            String engine = routeOnce(p, key);
            assertThat(engine).isEqualTo(order.engineIds().get(order.first(key)));
            counts[order.engineIds().indexOf(engine)]++;
        }
        assertThat(counts[0] / 20_000.0).as("a1: 0.7 × 0.5").isCloseTo(0.35, org.assertj.core.data.Offset.offset(0.02));
        assertThat(counts[4] / 20_000.0).as("b2: 0.3 × 0.75").isCloseTo(0.225, org.assertj.core.data.Offset.offset(0.02));

        Map<String, EngineGroup> bad = new java.util.TreeMap<>(groups);
        bad.put("B|m", new EngineGroup(groups.get("B|m").shares(),
                SlotTable.of(List.of("b1", "b2"), new double[] {0.9, 0.1}).encode()));
        Snapshot later = new Snapshot(5, "", flat.policy(), flat.fleetUtilization(), flat.retryBudget(), flat.routes(),
                flat.engines(), flat.networkRttMs(), flat.objective());
        p.swap(withGroupedRoute(later, bad, 0.7, 0.3));
        assertThat(p.status().localSlotTables()).isEqualTo(1);
        assertThat(events).singleElement().asString()
                .contains("the snapshot's slot tables for its engine groups are invalid (groups.B|m.slots: engine 0");
    }

    // ------------------------------------------------------------------ helpers

    private static EngineGroup group(List<String> ids, double[] shares) {
        Map<String, Double> m = new java.util.TreeMap<>();
        for (int i = 0; i < ids.size(); i++) {
            m.put(ids.get(i), shares[i]);
        }
        return new EngineGroup(m, SlotTable.of(ids, shares).encode());
    }

    /** {@code s} with the route of class "k" at "g" sent over groups A|m and B|m in the fractions given. */
    private static Snapshot withGroupedRoute(Snapshot s, Map<String, EngineGroup> groups, double fa, double fb) {
        Route r = s.route("g", "k");
        Route grouped = Route.grouped(r.model(), r.residency(), r.priority(), r.demandRps(),
                new String[] {"A|m", "B|m"}, new double[] {fa, fb},
                new EngineGroup[] {groups.get("A|m"), groups.get("B|m")}, 0, r.priceMs(),
                SlotTable.of(List.of("A|m", "B|m"), new double[] {fa, fb}).encode());
        return new Snapshot(s.version() + 1, "", s.policy(), s.fleetUtilization(), s.retryBudget(),
                Map.of("g", Map.of("k", grouped)), s.engines(), s.networkRttMs(), s.objective(), groups)
                .sealed(s.version() + 1);
    }

    private static DataPlane plane(Snapshot s) {
        return DataPlane.create("g", s, new Fixtures.ManualTicker(), DataPlaneOptions.defaults());
    }

    private static String routeOnce(DataPlane p, long key) {
        Decision d = p.route(RequestMeta.of(p.snapshot().route("g", "k").model(), key, key));
        p.onFinish(d, Outcome.SUCCESS, -1);
        return d.engineId();
    }

    private static void assertFollows(DataPlane p, SlotTable t) {
        for (long key = 0; key < 5_000; key++) {
            assertThat(routeOnce(p, key * 0x9E3779B97F4A7C15L)).isEqualTo(t.engineIds().get(t.first(key
                    * 0x9E3779B97F4A7C15L)));
        }
    }

    private static double[] weights(SplittableRandom rnd) {
        double[] w = new double[ENGINES];
        double sum = 0;
        for (int i = 0; i < ENGINES; i++) {
            w[i] = 0.1 + rnd.nextDouble();
            sum += w[i];
        }
        for (int i = 0; i < ENGINES; i++) {
            w[i] /= sum;
        }
        return w;
    }

    private static DataPlaneListener recorder(List<String> events) {
        return new DataPlaneListener() {
            @Override
            public void onLocalSlotTable(String classId, String reason) {
                events.add(classId + ": " + reason);
            }
        };
    }

    /** {@code s} with the route of class "k" at gateway "g" carrying {@code slots}. */
    static Snapshot withSlots(Snapshot s, String slots) {
        Route r = s.route("g", "k");
        Route withTable = new Route(r.model(), r.residency(), r.priority(), r.demandRps(), r.weights(),
                r.shedFraction(), r.priceMs(), slots);
        return new Snapshot(s.version(), "", s.policy(), s.fleetUtilization(), s.retryBudget(),
                Map.of("g", Map.of("k", withTable)), s.engines(), s.networkRttMs(), s.objective()).sealed(s.version());
    }

    /** A valid table for {@code weights} (each engine its exact slot count) laid out unlike {@link SlotTable#of}. */
    private static SlotTable reversed(List<String> ids, double[] weights) {
        int m = SlotTable.slotCountFor(ids.size());
        int[] counts = SlotCodec.slotCounts(weights, SlotCodec.checkWeights(ids.size(), weights), m);
        SlotRuns runs = new SlotRuns(ids.size());
        for (int j = ids.size() - 1; j >= 0; j--) {
            runs.add(j, counts[j]);
        }
        return SlotTable.decode(SlotCodec.encode(Integer.numberOfTrailingZeros(m), ids.size(), runs), ids, weights);
    }
}
