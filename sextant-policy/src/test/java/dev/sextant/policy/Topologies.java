package dev.sextant.policy;

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
import java.util.Random;

/** Topologies for the optimizer's tests, built in code. */
final class Topologies {
    private Topologies() {
    }

    /** The talk example of docs/design.md §3 (examples/talk.yaml). */
    static Topology talk() {
        return talk(120, 40);
    }

    static Topology talk(double eastDemand, double westDemand) {
        LatencyProfile profile = new ParametricProfile(150, 20, 1.0);
        return new Topology(
                List.of(new GatewayCluster("east", "us-east"), new GatewayCluster("west", "us-west")),
                List.of(new EngineCluster("gpu-east", "us-east"), new EngineCluster("gpu-west", "us-west")),
                Map.of("east", Map.of("gpu-east", 2.0, "gpu-west", 60.0),
                        "west", Map.of("gpu-east", 60.0, "gpu-west", 2.0)),
                List.of(new Model("llama-3.1-70b", 200)),
                List.of(new Engine("east-1", "gpu-east", "http://127.0.0.1:9101", List.of("llama-3.1-70b"), 100,
                                profile, 1.0),
                        new Engine("west-1", "gpu-west", "http://127.0.0.1:9102", List.of("llama-3.1-70b"), 80,
                                profile, 1.0)),
                List.of(new TrafficClass("chat", "llama-3.1-70b", List.of(), 0)),
                Map.of("east", Map.of("chat", eastDemand), "west", Map.of("chat", westDemand)),
                0.1, Topology.DEFAULT_AFFINITY_DISCOUNT_MS);
    }

    /** The talk example with east's 120 req/s as two classes of one model: 60 chat (priority 0), 60 premium (1). */
    static Topology talkWithPremium() {
        Topology one = talk();
        return new Topology(one.gatewayClusters(), one.engineClusters(), one.networkRttMs(), one.models(),
                one.engines(), List.of(new TrafficClass("chat", "llama-3.1-70b", List.of(), 0),
                        new TrafficClass("premium", "llama-3.1-70b", List.of(), 1)),
                Map.of("east", Map.of("chat", 60.0, "premium", 60.0), "west", Map.of("chat", 40.0)),
                one.headroom(), one.affinityDiscountMs());
    }

    /**
     * A random topology: 1–4 gateway clusters, 1–4 engine clusters in 1–3 regions, 1–3 models,
     * 1–12 engines, classes with residency and priorities, demand from 10% to 150% of capacity.
     */
    static Topology random(long seed) {
        Random r = new Random(seed);
        String[] regions = {"us", "eu", "ap"};
        int regionCount = 1 + r.nextInt(3);
        List<GatewayCluster> gateways = new ArrayList<>();
        regionCount = Math.min(regionCount, 1 + r.nextInt(4));
        int gw = 1 + r.nextInt(4);
        for (int i = 0; i < gw; i++) {
            gateways.add(new GatewayCluster("g" + i, regions[r.nextInt(regionCount)]));
        }
        List<EngineCluster> clusters = new ArrayList<>();
        int ec = regionCount + r.nextInt(3);
        for (int i = 0; i < ec; i++) {
            clusters.add(new EngineCluster("c" + i, regions[i < regionCount ? i : r.nextInt(regionCount)]));
        }
        List<Model> models = new ArrayList<>();
        int mc = 1 + r.nextInt(3);
        for (int i = 0; i < mc; i++) {
            models.add(new Model("m" + i, 20 + r.nextInt(300)));
        }
        List<Engine> engines = new ArrayList<>();
        int en = 1 + r.nextInt(12);
        double capacity = 0;
        for (int i = 0; i < en; i++) {
            List<String> served = new ArrayList<>();
            served.add("m" + (i % mc));
            if (mc > 1 && r.nextInt(4) == 0) {
                served.add("m" + ((i + 1) % mc));
            }
            double cap = 5 + r.nextInt(100);
            capacity += cap;
            engines.add(new Engine("e" + i, "c" + r.nextInt(ec), "http://127.0.0.1:" + (9000 + i), served, cap,
                    new ParametricProfile(20 + r.nextInt(400), 5 + r.nextInt(40), r.nextDouble() * 2),
                    r.nextInt(5) == 0 ? 0.5 + 0.5 * r.nextDouble() : 1.0));
        }
        List<TrafficClass> classes = new ArrayList<>();
        int cc = 1 + r.nextInt(4);
        for (int i = 0; i < cc; i++) {
            List<String> residency = r.nextInt(3) == 0 ? List.of(regions[r.nextInt(regionCount)]) : List.of();
            classes.add(new TrafficClass("k" + i, "m" + r.nextInt(mc), residency, r.nextInt(3)));
        }
        Map<String, Map<String, Double>> rtt = new LinkedHashMap<>();
        for (GatewayCluster g : gateways) {
            Map<String, Double> row = new LinkedHashMap<>();
            for (EngineCluster c : clusters) {
                row.put(c.id(), g.region().equals(c.region()) ? 1.0 + r.nextInt(5) : 30.0 + r.nextInt(150));
            }
            rtt.put(g.id(), row);
        }
        double load = 0.1 + 1.4 * r.nextDouble();
        Map<String, Map<String, Double>> demand = new LinkedHashMap<>();
        for (GatewayCluster g : gateways) {
            Map<String, Double> row = new LinkedHashMap<>();
            for (TrafficClass c : classes) {
                if (r.nextInt(4) != 0) {
                    row.put(c.id(), Math.round(load * capacity / (gw * cc) * (0.5 + r.nextDouble()) * 100) / 100.0);
                }
            }
            demand.put(g.id(), row);
        }
        return new Topology(gateways, clusters, rtt, models, engines, classes, demand, r.nextInt(3) * 0.05,
                Topology.DEFAULT_AFFINITY_DISCOUNT_MS);
    }
}
