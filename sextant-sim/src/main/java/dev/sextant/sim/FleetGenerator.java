package dev.sextant.sim;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.topology.Engine;
import dev.sextant.topology.EngineCluster;
import dev.sextant.topology.GatewayCluster;
import dev.sextant.topology.Model;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Builds a large topology from a few numbers (a {@code fleet:} block): regions grouped in continents,
 * each with gateway clusters and engine clusters; every engine cluster holds engines of every model
 * (engine i serves model i mod M) on one hardware kind (cycling through the list per cluster); for each
 * model one class any region may serve and, per continent, one class whose data must stay there.
 */
final class FleetGenerator {
    private final ScenarioLoader loader;

    FleetGenerator(ScenarioLoader loader) {
        this.loader = loader;
    }

    Topology generate(JsonNode f, Map<String, EngineParams> hw, Scenario.ClassWorkload w, List<String> engineHardware)
            throws ScenarioException {
        String p = "fleet.";
        loader.known(f, p, ScenarioLoader.FLEET_KEYS);
        JsonNode regions = f.get("regions");
        if (regions == null || !regions.isArray() || regions.isEmpty()) {
            throw loader.fail(p + "regions", "missing (expected: a list of {id, continent, gateways, engine_clusters})");
        }
        int perCluster = loader.wholeNumber(f, "engines_per_cluster", p, 8, 1, ScenarioLoader.MAX_FLEET);
        int modelCount = loader.wholeNumber(f, "models", p, 1, 1, ScenarioLoader.MAX_COUNT);
        double share = loader.number(f, "residency_share", p, 0.25, 0, 1);
        double perGateway = loader.number(f, "demand_rps_per_gateway", p, 10, 0, Topology.MAX_RPS);
        JsonNode rtt = f.get("rtt_ms");
        loader.known(rtt, p + "rtt_ms", ScenarioLoader.RTT_KEYS);
        double sameRegion = loader.number(rtt, "same_region", p + "rtt_ms.", 4, 0, 1e6);
        double sameContinent = loader.number(rtt, "same_continent", p + "rtt_ms.", 40, 0, 1e6);
        double other = loader.number(rtt, "other", p + "rtt_ms.", 150, 0, 1e6);
        List<String> kinds = new ArrayList<>();
        if (f.has("hardware")) {
            if (!f.get("hardware").isArray() || f.get("hardware").isEmpty()) {
                throw loader.fail(p + "hardware", "not a list of hardware kinds (expected: e.g. [h100, a100])");
            }
            f.get("hardware").forEach(h -> kinds.add(h.asText()));
        } else {
            kinds.add("default");
        }
        for (String k : kinds) {
            if (!hw.containsKey(k)) {
                throw loader.fail(p + "hardware", "unknown hardware '" + k + "' (expected one of " + hw.keySet() + ")");
            }
        }
        List<GatewayCluster> gateways = new ArrayList<>();
        List<EngineCluster> clusters = new ArrayList<>();
        Map<String, String> continentOf = new LinkedHashMap<>();
        Map<String, List<String>> regionsOf = new LinkedHashMap<>();
        int index = 0;
        for (JsonNode r : regions) {
            String q = p + "regions[" + index++ + "].";
            loader.entry(r, q);
            loader.known(r, q, ScenarioLoader.REGION_KEYS);
            String id = loader.string(r, "id", q, null);
            String cont = loader.string(r, "continent", q, id);
            continentOf.put(id, cont);
            regionsOf.computeIfAbsent(cont, c -> new ArrayList<>()).add(id);
            int gw = loader.wholeNumber(r, "gateways", q, 1, 1, ScenarioLoader.MAX_FLEET);
            int ec = loader.wholeNumber(r, "engine_clusters", q, 1, 1, ScenarioLoader.MAX_FLEET);
            if (gateways.size() + gw > ScenarioLoader.MAX_FLEET || clusters.size() + ec > ScenarioLoader.MAX_FLEET
                    || (double) (clusters.size() + ec) * perCluster > ScenarioLoader.MAX_FLEET) {
                throw loader.fail(q.substring(0, q.length() - 1), "more than " + (long) ScenarioLoader.MAX_FLEET
                        + " gateway clusters, engine clusters or engines in the fleet (expected: at most that many of"
                        + " each)");
            }
            for (int i = 0; i < gw; i++) {
                gateways.add(new GatewayCluster(id + "-gw" + i, id));
            }
            for (int i = 0; i < ec; i++) {
                clusters.add(new EngineCluster(id + "-gpu" + i, id));
            }
        }
        List<Model> models = new ArrayList<>();
        List<TrafficClass> classes = new ArrayList<>();
        for (int m = 0; m < modelCount; m++) {
            String model = "model-" + m;
            models.add(new Model(model, (int) Math.round(w.outputTokens())));
            classes.add(new TrafficClass(model, model, List.of(), 0));
            for (var cont : regionsOf.entrySet()) {
                classes.add(new TrafficClass(model + "-" + cont.getKey(), model, cont.getValue(), 1));
            }
        }
        List<Engine> engines = new ArrayList<>();
        for (int c = 0; c < clusters.size(); c++) {
            String kind = kinds.get(c % kinds.size());
            for (int i = 0; i < perCluster; i++) {
                String id = clusters.get(c).id() + "-" + i;
                engines.add(ScenarioLoader.derive(id, clusters.get(c).id(), List.of("model-" + (i % modelCount)),
                        hw.get(kind), w, Double.NaN));
                engineHardware.add(kind);
            }
        }
        Map<String, Map<String, Double>> net = new LinkedHashMap<>();
        Map<String, Map<String, Double>> demand = new LinkedHashMap<>();
        for (GatewayCluster g : gateways) {
            Map<String, Double> row = new LinkedHashMap<>();
            for (EngineCluster c : clusters) {
                double ms = g.region().equals(c.region()) ? sameRegion
                        : continentOf.get(g.region()).equals(continentOf.get(c.region())) ? sameContinent : other;
                row.put(c.id(), ms);
            }
            net.put(g.id(), row);
            Map<String, Double> d = new LinkedHashMap<>();
            for (int m = 0; m < modelCount; m++) {
                d.put("model-" + m, perGateway * (1 - share) / modelCount);
                d.put("model-" + m + "-" + continentOf.get(g.region()), perGateway * share / modelCount);
            }
            demand.put(g.id(), d);
        }
        try {
            return new Topology(gateways, clusters, net, models, engines, classes, demand,
                    loader.number(f, "headroom", p, Topology.DEFAULT_HEADROOM, 0, 1),
                    loader.number(f, "affinity_discount_ms", p, Topology.DEFAULT_AFFINITY_DISCOUNT_MS, 0, 1e6));
        } catch (IllegalArgumentException e) {
            throw loader.fail("fleet", e.getMessage());
        }
    }
}
