package dev.sextant.bench.fleet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.topology.Engine;
import dev.sextant.topology.EngineCluster;
import dev.sextant.topology.ParametricProfile;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;

class FleetsTest {

    @Test
    void talk_isTheWorkedExampleOfTheDesign() {
        Topology t = Fleets.talk();

        assertThat(t.demandRps()).isEqualTo(Map.of("east", Map.of("chat", 120.0), "west", Map.of("chat", 40.0)));
        assertThat(t.engines()).extracting(Engine::id, Engine::cluster, Engine::capacityRps)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("east-1", "gpu-east", 100.0),
                        org.assertj.core.groups.Tuple.tuple("west-1", "gpu-west", 80.0));
        assertThat(t.engines()).allSatisfy(e -> {
            assertThat(e.profile()).isEqualTo(new ParametricProfile(150, 20, 1.0));
            assertThat(e.health()).isEqualTo(1.0);
        });
        assertThat(t.networkRttMs().get("east")).containsEntry("gpu-east", 2.0).containsEntry("gpu-west", 60.0);
        assertThat(t.networkRttMs().get("west")).containsEntry("gpu-east", 60.0).containsEntry("gpu-west", 2.0);
        assertThat(t.model("llama-3.1-70b").outputTokens()).isEqualTo(200);
        assertThat(t.headroom()).isEqualTo(0.1);
    }

    @Test
    void medium_hasTheShapeOfM_andLoadBetween60And80Percent() {
        Topology t = Fleets.medium(7);

        assertThat(t.gatewayClusters()).hasSize(16);
        assertThat(t.engines()).hasSize(256);
        assertThat(t.models()).hasSize(4);
        assertThat(t.engineClusters()).hasSize(8);
        assertThat(Fleets.totalDemandRps(t) / Fleets.totalEffectiveCapacityRps(t)).isBetween(0.6, 0.8);
        assertRealistic(t);
    }

    @Test
    void large_hasTheShapeOfL() {
        Topology t = Fleets.large(3);

        assertThat(t.gatewayClusters()).hasSize(64);
        assertThat(t.engines()).hasSize(4096);
        assertThat(t.engineClusters()).hasSize(32);
        assertThat(t.models()).hasSize(8);
        assertThat(Fleets.totalDemandRps(t) / Fleets.totalEffectiveCapacityRps(t)).isBetween(0.6, 0.8);
        assertRealistic(t);
    }

    @Test
    void medium_aboveCapacity_demandsMoreThanTheFleetCanCarry() {
        Topology t = Fleets.medium(7, 1.2);

        assertThat(Fleets.totalDemandRps(t) / Fleets.totalEffectiveCapacityRps(t)).isCloseTo(1.2, within(1e-9));
    }

    @Test
    void sameSeed_givesEqualTopology_otherSeed_another() {
        assertThat(Fleets.medium(11)).isEqualTo(Fleets.medium(11));
        assertThat(Fleets.medium(11)).isNotEqualTo(Fleets.medium(12));
        assertThat(Fleets.random(5, 8)).isEqualTo(Fleets.random(5, 8));
    }

    @Test
    void withDemandScaled_changesEveryEntryByAtMostTheGivenFraction_deterministically() {
        Topology t = Fleets.medium(2);
        Topology changed = Fleets.withDemandScaled(t, 99, 0.05);

        assertThat(changed).isEqualTo(Fleets.withDemandScaled(t, 99, 0.05));
        assertThat(changed.engines()).isEqualTo(t.engines());
        assertThat(changed.demandRps().keySet()).isEqualTo(t.demandRps().keySet());
        int moved = 0;
        for (var g : t.demandRps().entrySet()) {
            for (var k : g.getValue().entrySet()) {
                double after = changed.demandRps().get(g.getKey()).get(k.getKey());
                assertThat(after).isBetween(0.95 * k.getValue(), 1.05 * k.getValue());
                moved += after != k.getValue() ? 1 : 0;
            }
        }
        assertThat(moved).isGreaterThan(0);
        assertThatThrownBy(() -> Fleets.withDemandScaled(t, 1, 1.5)).hasMessageContaining("change: 1.5");
    }

    @Test
    void withAffinityDiscount_changesOnlyTheDiscount() {
        Topology t = Fleets.withAffinityDiscount(Fleets.talk(), 0);

        assertThat(t.affinityDiscountMs()).isZero();
        assertThat(t.withDemand(Fleets.talk().demandRps())).isNotEqualTo(Fleets.talk());
        assertThat(Fleets.withAffinityDiscount(t, Topology.DEFAULT_AFFINITY_DISCOUNT_MS)).isEqualTo(Fleets.talk());
    }

    @Property(tries = 50)
    void random_isSmallAndEveryClassHasAnAllowedEngine(@ForAll @LongRange(min = 0, max = 1_000_000) long seed,
                                                      @ForAll @IntRange(min = 3, max = 12) int engines) {
        Topology t = Fleets.random(seed, engines);

        assertThat(t.engines()).hasSize(engines);
        assertThat(t.gatewayClusters().size()).isBetween(2, 4);
        assertThat(t.models().size()).isBetween(1, 3);
        assertThat(Fleets.totalDemandRps(t)).isPositive();
        for (TrafficClass c : t.classes()) {
            assertThat(t.engines()).anyMatch(e -> t.allowed(c, e));
        }
    }

    /** What the design expects of a fleet: residency classes have engines, RTTs grow with distance. */
    private static void assertRealistic(Topology t) {
        Set<String> regions = new HashSet<>();
        for (EngineCluster c : t.engineClusters()) {
            regions.add(c.region());
        }
        assertThat(regions).containsExactlyInAnyOrderElementsOf(Fleets.REGIONS);
        for (var g : t.demandRps().entrySet()) {
            String gatewayRegion = t.gatewayClusters().stream().filter(x -> x.id().equals(g.getKey())).findFirst()
                    .orElseThrow().region();
            for (var k : g.getValue().entrySet()) {
                TrafficClass c = t.trafficClass(k.getKey());
                assertThat(k.getValue()).isPositive();
                assertThat(c.residency()).isSubsetOf(Set.of(gatewayRegion));
                assertThat(t.engines()).anyMatch(e -> t.allowed(c, e) && e.health() > 0);
            }
            for (var rtt : t.networkRttMs().get(g.getKey()).entrySet()) {
                boolean local = t.engineCluster(rtt.getKey()).region().equals(gatewayRegion);
                if (local) {
                    assertThat(rtt.getValue()).isBetween(2.0, 20.0);
                } else {
                    assertThat(rtt.getValue()).isBetween(60.0, 250.0);
                }
            }
        }
        assertThat(t.classes()).extracting(TrafficClass::priority).contains(0, 1, 2);
        assertThat(t.engines().stream().map(e -> e.profile()).distinct().count()).isGreaterThan(3);
        assertThat(t.engines()).anyMatch(e -> e.models().size() > 1);
    }
}
