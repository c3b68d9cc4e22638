package dev.sextant.policy;

import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What a policy remembers between solves is its own: no process-wide cache decides how warm a solve is. */
class PolicyMemoryTest {

    @Test
    void memory_sameShapeNewDemand_reusesTheDemandFreeArrays_onlyWithinOneMemory() {
        Instance.Memory memory = new Instance.Memory();
        Instance first = memory.of(Topologies.talk(120, 40), SolveOptions.defaults());
        Instance again = memory.of(Topologies.talk(90, 60), SolveOptions.defaults());
        Instance elsewhere = new Instance.Memory().of(Topologies.talk(90, 60), SolveOptions.defaults());

        assertThat(again.costs).isSameAs(first.costs);
        assertThat(again.hasher).isSameAs(first.hasher);
        assertThat(elsewhere.costs).isNotSameAs(first.costs);
        assertThat(elsewhere.hasher).isNotSameAs(first.hasher);
        assertThat(again.demand).isNotEqualTo(first.demand);
    }

    @Test
    void solve_warmPolicyOrFreshOne_givesTheSameSnapshot() {
        RoutingPolicy warm = Policies.optimal();
        warm.solve(Topologies.talk(120, 40), SolveOptions.defaults());
        Topology moved = Topologies.talk(100, 50);

        Snapshot fromWarm = warm.solve(moved, SolveOptions.defaults());
        Snapshot fromFresh = Policies.optimal().solve(moved, SolveOptions.defaults());

        assertThat(fromWarm).isEqualTo(fromFresh);
        assertThat(fromWarm.hash()).isEqualTo(fromFresh.hash()).isEqualTo(fromFresh.contentHash());
        assertThat(Policies.optimalSolution(warm, moved, SolveOptions.defaults()).snapshot()).isEqualTo(fromFresh);
    }

    @Test
    void optimalSolution_withABaseline_isRefusedNamingIt() {
        assertThatThrownBy(() -> Policies.optimalSolution(Policies.nearest(), Topologies.talk(), SolveOptions.defaults()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'nearest'");
    }
}
