package dev.sextant.policy;

import dev.sextant.snapshot.KeyOrder;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.SlotTable;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;

/** Every snapshot's routes carry the slot table gateways route by, computed from the previous snapshot's. */
class RouteSlotsTest {

    @ParameterizedTest
    @ValueSource(strings = {"optimal", "nearest", "waterfall", "proportional"})
    void solve_everyRouteCarriesATableOfItsOwnWeights(String policy) {
        for (long seed = 1; seed <= 20; seed++) {
            Topology t = Topologies.random(seed);
            Snapshot s = Policies.byName(policy).solve(t, SolveOptions.defaults());
            s.routes().forEach((g, byClass) -> byClass.forEach((c, r) -> {
                if (r.slotEngines().isEmpty()) {
                    assertThat(r.slots()).isEmpty();
                } else {
                    assertThat(r.hasGroups()).as("the optimal policy weights routes over engine groups")
                            .isEqualTo(policy.equals("optimal"));
                    KeyOrder table = r.keyOrder(s.groups());
                    assertThat(table.engineIds()).isEqualTo(r.slotEngines());
                }
            }));
        }
    }

    @Test
    void solve_sameTopologyAndPrevious_sameTables() {
        Topology t = Topologies.talk(150, 60);
        Snapshot first = Policies.optimal().solve(Topologies.talk(), SolveOptions.defaults());
        Snapshot a = Policies.optimal().solve(t, SolveOptions.defaults().after(first));
        Snapshot b = Policies.optimal().solve(t, SolveOptions.defaults().after(first));
        assertThat(a.routes()).isEqualTo(b.routes());
        assertThat(a.hash()).isEqualTo(b.hash());
    }

    @Test
    void solve_afterPrevious_rebalancesItsTableSoFewKeysMove() {
        Snapshot prev = Policies.optimal().solve(Topologies.talk(120, 40), SolveOptions.defaults());
        Snapshot next = Policies.optimal().solve(Topologies.talk(170, 30), SolveOptions.defaults().after(prev));
        Route before = prev.route("east", "chat");
        Route after = next.route("east", "chat");
        double tv = tv(before.weights(), after.weights());
        double moved = moved(before.keyOrder(prev.groups()), after.keyOrder(next.groups()));
        System.out.printf("talk, east demand 120 -> 170: TV %.4f, moved %.4f (%.3f x TV)%n", tv, moved, moved / tv);
        assertThat(tv).isGreaterThan(0.02);
        assertThat(moved).isLessThanOrEqualTo(1.1 * tv);
    }

    @Test
    void slots_previousTableThatDoesNotMatchItsWeights_isIgnored() {
        Route bad = new Route("m", List.of(), 0, 10, Map.of("a", 0.5, "b", 0.5), 0, Double.NaN,
                SlotTable.of(List.of("a", "b"), new double[] {1, 3}).encode());
        String slots = Assembler.slots(bad, new TreeMap<>(Map.of("a", 0.6, "b", 0.4)));
        assertThat(slots).isEqualTo(SlotTable.of(List.of("a", "b"), new double[] {0.6, 0.4}).encode());
    }

    @Test
    void solve_afterPrevious_groupedRoutesMoveNoMoreKeysThanTheirTwoLevelsChange() {
        int checked = 0;
        for (long seed = 1; seed <= 40; seed++) {
            Topology t = Topologies.random(seed);
            Snapshot prev = Policies.optimal().solve(t, SolveOptions.defaults());
            Map<String, Map<String, Double>> more = new TreeMap<>();
            t.demandRps().forEach((g, row) -> row.forEach((c, v) -> more.computeIfAbsent(g, x -> new TreeMap<>())
                    .put(c, v * (c.hashCode() % 2 == 0 ? 1.3 : 0.8))));
            Snapshot next = Policies.optimal().solve(t.withDemand(more), SolveOptions.defaults().after(prev));
            for (var byClass : next.routes().entrySet()) {
                for (var e : byClass.getValue().entrySet()) {
                    Route b = e.getValue();
                    Route a = prev.route(byClass.getKey(), e.getKey());
                    if (a == null || !a.hasGroups() || !b.hasGroups()) {
                        continue;
                    }
                    // a key moves when its group changes, or its engine within a group it stays in
                    double bound = tv(a.groups(), b.groups());
                    for (var g : b.groups().entrySet()) {
                        if (prev.groups().containsKey(g.getKey())) {
                            bound += g.getValue() * tv(prev.groups().get(g.getKey()).shares(),
                                    next.groups().get(g.getKey()).shares());
                        }
                    }
                    double moved = moved(a.keyOrder(prev.groups()), b.keyOrder(next.groups()));
                    assertThat(moved).as("seed %d, %s/%s", seed, byClass.getKey(), e.getKey())
                            .isLessThanOrEqualTo(bound + 0.01);
                    checked++;
                }
            }
        }
        assertThat(checked).isGreaterThan(20);
    }

    static double moved(KeyOrder x, KeyOrder y) {
        SplittableRandom rnd = new SplittableRandom(9);
        int keys = 200_000;
        int moved = 0;
        for (int i = 0; i < keys; i++) {
            long key = rnd.nextLong();
            if (!x.engineIds().get(x.first(key)).equals(y.engineIds().get(y.first(key)))) {
                moved++;
            }
        }
        return moved / (double) keys;
    }

    /** Total variation distance between the normalized weights. */
    static double tv(Map<String, Double> a, Map<String, Double> b) {
        double sa = a.values().stream().mapToDouble(Double::doubleValue).sum();
        double sb = b.values().stream().mapToDouble(Double::doubleValue).sum();
        Set<String> ids = new TreeSet<>(a.keySet());
        ids.addAll(b.keySet());
        double d = 0;
        for (String id : ids) {
            d += Math.abs(a.getOrDefault(id, 0.0) / sa - b.getOrDefault(id, 0.0) / sb);
        }
        return d / 2;
    }
}
