package dev.sextant.control;

import dev.sextant.topology.Engine;
import dev.sextant.topology.EngineCluster;
import dev.sextant.topology.GatewayCluster;
import dev.sextant.topology.LatencyProfile;
import dev.sextant.topology.Model;
import dev.sextant.topology.ParametricProfile;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Small topologies for the control loop's tests. */
final class Fleets {
    private Fleets() {
    }

    /** The configured profile of the engines of {@link #oneCluster}. */
    static final LatencyProfile PROFILE = new ParametricProfile(8, 5, 0.4);
    static final int OUTPUT_TOKENS = 120;

    /**
     * One gateway cluster "gw" 2 ms from one engine cluster "gpu" of {@code engines} engines e1…eN, rated
     * {@code capacity} each with {@link #PROFILE}, and a second engine cluster "far" 40 ms away with the same; one
     * class "chat" with {@code demand} req/s.
     */
    static Topology oneCluster(int engines, double capacity, double demand) {
        List<Engine> es = new ArrayList<>();
        for (int i = 1; i <= engines; i++) {
            es.add(new Engine("e" + i, "gpu", "http://10.0.0." + i + ":8000", List.of("m"), capacity, PROFILE, 1));
        }
        for (int i = 1; i <= engines; i++) {
            es.add(new Engine("f" + i, "far", "http://10.0.1." + i + ":8000", List.of("m"), capacity, PROFILE, 1));
        }
        Map<String, Map<String, Double>> rtt = new LinkedHashMap<>();
        rtt.put("gw", Map.of("gpu", 2.0, "far", 40.0));
        return new Topology(List.of(new GatewayCluster("gw", "r1")),
                List.of(new EngineCluster("gpu", "r1"), new EngineCluster("far", "r2")), rtt,
                List.of(new Model("m", OUTPUT_TOKENS)), es, List.of(new TrafficClass("chat", "m", List.of(), 0)),
                Map.of("gw", Map.of("chat", demand)), 0.1, 25);
    }

    /** The true engine behind {@link #oneCluster}'s configuration: what the prior says, made physical. */
    static Batching truthOf(Topology t, String engine) {
        Engine e = t.engines().stream().filter(x -> x.id().equals(engine)).findFirst().orElseThrow();
        GroupModel g = new GroupModel(GroupModel.key(e), e, OUTPUT_TOKENS, ControlOptions.defaults());
        return g.prior();
    }

    /** A truth like {@code b} but with uncached prompts of {@code prompt} tokens. */
    static Batching withPrompt(Batching b, double prompt) {
        return new Batching(b.alpha(), b.gamma(), b.beta(), b.base(), b.perToken(), b.perStep(), b.slots(),
                b.outputTokens(), prompt);
    }
}
