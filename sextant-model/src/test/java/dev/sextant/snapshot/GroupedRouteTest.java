package dev.sextant.snapshot;

import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Routes weighted over engine groups: their weights, their checks in a snapshot, their hash and two-level table. */
class GroupedRouteTest {
    private static final List<String> ENGINES = List.of("a1", "a2", "a3", "b1", "b2");

    private static EngineGroup group(Map<String, Double> shares) {
        List<String> ids = List.copyOf(new TreeMap<>(shares).keySet());
        double[] w = ids.stream().mapToDouble(shares::get).toArray();
        return new EngineGroup(new TreeMap<>(shares), SlotTable.of(ids, w).encode());
    }

    private static Map<String, EngineGroup> groups() {
        Map<String, EngineGroup> g = new TreeMap<>();
        g.put("A|m", group(Map.of("a1", 0.5, "a2", 0.3, "a3", 0.2)));
        g.put("B|m", group(Map.of("b1", 0.25, "b2", 0.75)));
        return g;
    }

    private static Route grouped(Map<String, EngineGroup> groups, double fa, double fb) {
        EngineGroup[] members = {groups.get("A|m"), groups.get("B|m")};
        return Route.grouped("m", List.of(), 1, 10, new String[] {"A|m", "B|m"}, new double[] {fa, fb}, members, 0,
                5.0, SlotTable.of(List.of("A|m", "B|m"), new double[] {fa, fb}).encode());
    }

    private static Snapshot snapshot(Route r, Map<String, EngineGroup> groups) {
        Map<String, EngineState> engines = new TreeMap<>();
        for (String id : ENGINES) {
            engines.put(id, new EngineState(id.substring(0, 1), "us", "http://" + id, List.of("m"), 1, 10, 9, 0.1, 3,
                    4, 0, 1));
        }
        return new Snapshot(0, "", "optimal", 0.5, RetryBudget.DEFAULT, Map.of("g", Map.of("c", r)), engines,
                Map.of("g", Map.of("A", 2.0, "B", 9.0)), new Objective(5, 50, 49.99, 2e-4, 0, 3), groups).sealed(1);
    }

    @Test
    void weights_areEachGroupsFractionTimesTheEnginesShare_inEngineIdOrder() {
        Route r = grouped(groups(), 0.6, 0.4);
        assertThat(r.weights()).containsExactly(Map.entry("a1", 0.6 * 0.5), Map.entry("a2", 0.6 * 0.3),
                Map.entry("a3", 0.6 * 0.2), Map.entry("b1", 0.4 * 0.25), Map.entry("b2", 0.4 * 0.75));
        assertThat(r.slotGroups()).containsExactly("A|m", "B|m");
        assertThat(r.slotEngines()).isEqualTo(ENGINES);
    }

    @Test
    void snapshot_sameRouteHeldAsPlainMaps_isEqualAndHashesAlike() {
        Snapshot built = snapshot(grouped(groups(), 0.6, 0.4), groups());
        Route r = built.route("g", "c");
        Map<String, EngineGroup> plainGroups = new HashMap<>();
        built.groups().forEach((id, g) -> plainGroups.put(id, new EngineGroup(new HashMap<>(g.shares()), g.slots())));
        Route plain = new Route(r.model(), r.residency(), r.priority(), r.demandRps(), new HashMap<>(r.weights()),
                r.shedFraction(), r.priceMs(), r.slots(), new HashMap<>(r.groups()));
        Snapshot read = snapshot(plain, plainGroups);
        assertThat(read).isEqualTo(built);
        assertThat(read.hash()).isEqualTo(built.hash());
    }

    @Test
    void snapshot_weightsThatAreNotTheProduct_orAnUnknownGroup_areRefusedNamingTheField() {
        Route r = grouped(groups(), 0.6, 0.4);
        Map<String, Double> off = new TreeMap<>(r.weights());
        off.put("a2", 0.2);
        Route wrong = new Route("m", List.of(), 1, 10, off, 0, 5.0, r.slots(), r.groups());
        assertThatThrownBy(() -> snapshot(wrong, groups())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("routes.g.c.weights.a2: 0.2 (expected: " + (0.6 * 0.3));
        Map<String, EngineGroup> onlyA = new TreeMap<>(groups());
        onlyA.remove("B|m");
        assertThatThrownBy(() -> snapshot(grouped(groups(), 0.6, 0.4), onlyA))
                .hasMessageContaining("routes.g.c.groups.B|m: unknown group");
    }

    /** A snapshot of another's very maps takes them as they are; its routes with other groups are checked again. */
    @Test
    void snapshot_anothersRoutes_withItsGroupsAreTaken_withOtherGroupsCheckedAgain() {
        Snapshot built = snapshot(grouped(groups(), 0.6, 0.4), groups());
        Snapshot again = new Snapshot(2, "", built.policy(), built.fleetUtilization(), built.retryBudget(),
                built.routes(), built.engines(), built.networkRttMs(), built.objective(), built.groups());
        assertThat(again.routes()).isSameAs(built.routes());

        Map<String, EngineGroup> onlyA = new TreeMap<>(built.groups());
        onlyA.remove("B|m");
        assertThatThrownBy(() -> new Snapshot(2, "", built.policy(), built.fleetUtilization(), built.retryBudget(),
                built.routes(), built.engines(), built.networkRttMs(), built.objective(), onlyA))
                .hasMessageContaining("routes.g.c.groups.B|m: unknown group");
    }

    @Test
    void snapshot_anEngineInTwoOfARoutesGroups_isRefused() {
        Map<String, EngineGroup> overlapping = new TreeMap<>(groups());
        overlapping.put("B|m", group(Map.of("a1", 0.25, "b2", 0.75)));
        Route r = grouped(overlapping, 0.6, 0.4);
        Route plain = new Route(r.model(), r.residency(), r.priority(), r.demandRps(), new HashMap<>(Map.of("a1", 0.3)),
                r.shedFraction(), r.priceMs(), r.slots(), new HashMap<>(r.groups()));
        assertThatThrownBy(() -> snapshot(plain, overlapping)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("routes.g.c.groups: engine a1 is in groups A|m and B|m (expected: each engine in one group)");
    }

    @Test
    void contentHash_oneGroupObjectUnderTwoIds_hashesAsTwoEqualObjects() {
        EngineGroup shared = group(Map.of("a1", 1.0));
        Map<String, EngineGroup> once = new TreeMap<>(Map.of("A|m", shared, "B|m", shared));
        Map<String, EngineGroup> twice = new TreeMap<>(Map.of("A|m", shared, "B|m", group(Map.of("a1", 1.0))));
        Route r = Route.grouped("m", List.of(), 1, 10, new String[] {"A|m"}, new double[] {1.0},
                new EngineGroup[] {shared}, 0, 5.0, SlotTable.of(List.of("A|m"), new double[] {1.0}).encode());
        assertThat(snapshot(r, once).hash()).isEqualTo(snapshot(r, twice).hash());
    }

    @Test
    void contentHash_coversFractionsSharesAndTables() {
        String base = snapshot(grouped(groups(), 0.6, 0.4), groups()).hash();
        assertThat(snapshot(grouped(groups(), 0.5, 0.5), groups()).hash()).isNotEqualTo(base);
        Map<String, EngineGroup> moved = new TreeMap<>(groups());
        moved.put("B|m", group(Map.of("b1", 0.5, "b2", 0.5)));
        assertThat(snapshot(grouped(moved, 0.6, 0.4), moved).hash()).isNotEqualTo(base);
        Map<String, EngineGroup> otherTable = new TreeMap<>(groups());
        EngineGroup b = otherTable.get("B|m");
        // the table that two rebalances (to 0.75/0.25 and back) make of b's: same shares, other slots
        SlotRuns rebalanced = new SlotRuns(3);
        rebalanced.add(1, 2048);
        rebalanced.add(0, 1024);
        rebalanced.add(1, 1024);
        otherTable.put("B|m", new EngineGroup(b.shares(), SlotCodec.encode(12, 2, rebalanced)));
        assertThat(otherTable.get("B|m").slots()).isNotEqualTo(b.slots());
        assertThat(snapshot(grouped(otherTable, 0.6, 0.4), otherTable).hash()).isNotEqualTo(base);
    }

    @Test
    void forGateway_keepsTheGroupsItsRoutesUse() {
        Map<String, EngineGroup> withSpare = new TreeMap<>(groups());
        withSpare.put("C|m", group(Map.of("c1", 1.0)));
        Snapshot s = snapshot(grouped(withSpare, 0.6, 0.4), withSpare);
        assertThat(s.forGateway("g").groups()).containsOnlyKeys("A|m", "B|m");
    }

    @Test
    void groupedTable_firstChoicesFollowTheWeights_andEveryKeysOrderListsEachEngineOnce() {
        Snapshot s = snapshot(grouped(groups(), 0.6, 0.4), groups());
        Route r = s.route("g", "c");
        KeyOrder t = r.keyOrder(s.groups());
        assertThat(t).isInstanceOf(GroupedTable.class);
        int[] first = new int[ENGINES.size()];
        int[] order = new int[ENGINES.size()];
        SplittableRandom rnd = new SplittableRandom(3);
        int keys = 400_000;
        for (int i = 0; i < keys; i++) {
            long key = rnd.nextLong();
            int f = t.first(key);
            first[f]++;
            assertThat(t.fill(key, order)).isEqualTo(ENGINES.size());
            assertThat(order[0]).isEqualTo(f);
            assertThat(java.util.Arrays.stream(order).distinct().count()).isEqualTo(ENGINES.size());
        }
        for (int e = 0; e < ENGINES.size(); e++) {
            double expected = r.weights().get(ENGINES.get(e));
            assertThat(first[e] / (double) keys).as(ENGINES.get(e)).isCloseTo(expected,
                    org.assertj.core.data.Offset.offset(0.005));
        }
    }

    @Test
    void groupedTable_aGroupTableThatDoesNotMatchItsShares_isRefused() {
        Map<String, EngineGroup> bad = new TreeMap<>(groups());
        bad.put("B|m", new EngineGroup(bad.get("B|m").shares(), SlotTable.of(List.of("b1", "b2"),
                new double[] {0.9, 0.1}).encode()));
        Snapshot s = snapshot(grouped(bad, 0.6, 0.4), bad);
        assertThatThrownBy(() -> s.route("g", "c").keyOrder(s.groups()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("groups.B|m.slots: engine 0 (b1)");
    }
}
