package dev.sextant.bench.fleet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.config.TopologyLoader;
import dev.sextant.topology.Engine;
import dev.sextant.topology.Topology;
import java.util.List;
import org.junit.jupiter.api.Test;

class FleetYamlTest {

    @Test
    void yaml_loadsBackToTheSameFleet_withEveryEngineAtTheGivenEndpoint() throws Exception {
        Topology fleet = Fleets.withDemandScaled(Fleets.medium(1), 42, 0.05);
        Topology loaded = TopologyLoader.load(FleetYaml.yaml(fleet, "http://127.0.0.1:9"), "m.yaml");

        List<Engine> atEndpoint = fleet.engines().stream().map(e -> new Engine(e.id(), e.cluster(),
                "http://127.0.0.1:9", e.models(), e.capacityRps(), e.profile(), e.health())).toList();
        assertThat(loaded).isEqualTo(fleet.withEngines(atEndpoint));
    }
}
