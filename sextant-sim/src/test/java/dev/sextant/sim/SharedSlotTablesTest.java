package dev.sextant.sim;

import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.request.DataPlane;
import dev.sextant.request.DataPlaneOptions;
import dev.sextant.request.Decision;
import dev.sextant.request.Outcome;
import dev.sextant.request.RequestMeta;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Engine;
import dev.sextant.topology.EngineCluster;
import dev.sextant.topology.GatewayCluster;
import dev.sextant.topology.LatencyProfile;
import dev.sextant.topology.Model;
import dev.sextant.topology.ParametricProfile;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The optimizer's snapshots and the data plane together: the slot table the control plane computes
 * (with the previous snapshot) makes every gateway agree, and still moves few keys.
 */
class SharedSlotTablesTest {
    private static final String MODEL = "llama-3.1-70b";
    private static final List<String> GATEWAYS = List.of("east", "west");
    /** Demand (east, west) of each snapshot, req/s, against about 1,400 req/s of capacity. */
    private static final double[][] DEMAND = {{500, 300}, {800, 250}, {600, 600}};

    @Test
    void route_optimizerSnapshots_gatewaysWithDifferentHistoriesAgree_fewKeysMove_sharesFollowWeights() {
        List<Snapshot> snapshots = new ArrayList<>();
        Snapshot prev = null;
        for (double[] d : DEMAND) {
            SolveOptions options = prev == null ? SolveOptions.defaults() : SolveOptions.defaults().after(prev);
            prev = Policies.optimal().solve(talkLike(d[0], d[1]), options);
            snapshots.add(prev);
        }
        Snapshot v3 = snapshots.get(2);
        assertThat(v3.version()).isEqualTo(3);
        for (String g : GATEWAYS) {
            assertThat(v3.route(g, "chat").slots()).isNotEmpty();
            DataPlane sawAll = plane(g, snapshots.get(0));
            List<Map<Long, String>> choices = new ArrayList<>();
            choices.add(firstChoices(sawAll, 100_000));
            sawAll.swap(snapshots.get(1));
            choices.add(firstChoices(sawAll, 100_000));
            sawAll.swap(v3);
            choices.add(firstChoices(sawAll, 100_000));
            DataPlane startedAtV3 = plane(g, v3);
            assertThat(firstChoices(startedAtV3, 100_000)).isEqualTo(choices.get(2));
            assertThat(startedAtV3.status().localSlotTables()).isZero();

            for (int v = 1; v < snapshots.size(); v++) {
                double tv = tv(snapshots.get(v - 1).route(g, "chat"), snapshots.get(v).route(g, "chat"));
                double moved = moved(choices.get(v - 1), choices.get(v));
                System.out.printf("gateway %s, v%d -> v%d: TV %.4f, moved %.4f (%.3f x TV)%n", g, v, v + 1, tv,
                        moved, moved / tv);
                assertThat(moved).isLessThanOrEqualTo(1.1 * tv + 0.002); // + sampling noise and 1/M quantization
            }
            double worst = worstShareErrorPp(startedAtV3, v3.route(g, "chat"), 1_000_000);
            System.out.printf("gateway %s, v3: max |share - weight| = %.3f pp%n", g, worst);
            assertThat(worst).isLessThanOrEqualTo(0.5);
        }
    }

    private static DataPlane plane(String gateway, Snapshot s) {
        return DataPlane.create(gateway, s, () -> 0L, DataPlaneOptions.defaults());
    }

    private static String route(DataPlane p, long key) {
        Decision d = p.route(RequestMeta.of(MODEL, key, key));
        p.onFinish(d, Outcome.SUCCESS, -1);
        return d.engineId();
    }

    private static Map<Long, String> firstChoices(DataPlane p, int keys) {
        SplittableRandom rnd = new SplittableRandom(42);
        Map<Long, String> out = new HashMap<>();
        for (int i = 0; i < keys; i++) {
            long key = rnd.nextLong();
            out.put(key, route(p, key));
        }
        return out;
    }

    private static double moved(Map<Long, String> a, Map<Long, String> b) {
        long moved = a.entrySet().stream().filter(e -> !e.getValue().equals(b.get(e.getKey()))).count();
        return moved / (double) a.size();
    }

    private static double tv(Route a, Route b) {
        double sa = a.weights().values().stream().mapToDouble(Double::doubleValue).sum();
        double sb = b.weights().values().stream().mapToDouble(Double::doubleValue).sum();
        TreeSet<String> ids = new TreeSet<>(a.weights().keySet());
        ids.addAll(b.weights().keySet());
        double d = 0;
        for (String id : ids) {
            d += Math.abs(a.weights().getOrDefault(id, 0.0) / sa - b.weights().getOrDefault(id, 0.0) / sb);
        }
        return d / 2;
    }

    private static double worstShareErrorPp(DataPlane p, Route r, int keys) {
        SplittableRandom rnd = new SplittableRandom(7);
        Map<String, Integer> hits = new HashMap<>();
        int routed = 0;
        for (int i = 0; i < keys; i++) {
            String e = route(p, rnd.nextLong());
            if (e != null) {
                hits.merge(e, 1, Integer::sum);
                routed++;
            }
        }
        double sum = r.weights().values().stream().mapToDouble(Double::doubleValue).sum();
        double worst = 0;
        for (Map.Entry<String, Double> w : r.weights().entrySet()) {
            double weight = w.getValue() / sum;
            if (weight >= 0.01) {
                double share = hits.getOrDefault(w.getKey(), 0) / (double) routed;
                worst = Math.max(worst, Math.abs(share - weight) * 100);
            }
        }
        return worst;
    }

    /** The talk example grown to 16 engines of different sizes, eight in each region. */
    private static Topology talkLike(double eastDemand, double westDemand) {
        LatencyProfile profile = new ParametricProfile(150, 20, 1.0);
        List<Engine> engines = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            engines.add(new Engine("east-" + i, "gpu-east", "http://127.0.0.1:" + (9100 + i), List.of(MODEL),
                    60 + 10 * i, profile, 1.0));
            engines.add(new Engine("west-" + i, "gpu-west", "http://127.0.0.1:" + (9200 + i), List.of(MODEL),
                    50 + 10 * i, profile, 1.0));
        }
        return new Topology(
                List.of(new GatewayCluster("east", "us-east"), new GatewayCluster("west", "us-west")),
                List.of(new EngineCluster("gpu-east", "us-east"), new EngineCluster("gpu-west", "us-west")),
                Map.of("east", Map.of("gpu-east", 2.0, "gpu-west", 60.0),
                        "west", Map.of("gpu-east", 60.0, "gpu-west", 2.0)),
                List.of(new Model(MODEL, 200)), engines,
                List.of(new TrafficClass("chat", MODEL, List.of(), 0)),
                Map.of("east", Map.of("chat", eastDemand), "west", Map.of("chat", westDemand)),
                0.1, Topology.DEFAULT_AFFINITY_DISCOUNT_MS);
    }
}
