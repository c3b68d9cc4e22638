package dev.sextant.policy;

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
                    SlotTable table = SlotTable.decode(r.slots(), r.slotEngines(), r.slotWeights());
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
        double moved = moved(before, after);
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

    static double moved(Route a, Route b) {
        SlotTable x = SlotTable.decode(a.slots(), a.slotEngines(), a.slotWeights());
        SlotTable y = SlotTable.decode(b.slots(), b.slotEngines(), b.slotWeights());
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
