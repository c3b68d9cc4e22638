package dev.sextant.bench.fleet;

import dev.sextant.topology.Engine;
import dev.sextant.topology.EngineCluster;
import dev.sextant.topology.GatewayCluster;
import dev.sextant.topology.LatencyProfile;
import dev.sextant.topology.MeasuredProfile;
import dev.sextant.topology.Model;
import dev.sextant.topology.ParametricProfile;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * Deterministic generators of topologies for tests and benchmarks: the same seed gives an equal
 * {@link Topology} on every machine and JVM ({@link SplittableRandom} is specified bit for bit, and
 * every map is filled in a fixed order).
 *
 * <p>Shapes (BENCHMARKS.md, "Instances"):
 * <ul>
 *   <li>{@link #talk()}: the worked example of docs/design.md §3, identical to {@code examples/talk.yaml};</li>
 *   <li>{@link #medium(long)} (M): 16 gateway clusters, 256 engines in 8 engine clusters, 4 models;</li>
 *   <li>{@link #large(long)} (L): 64 gateway clusters, 4,096 engines in 32 engine clusters, 8 models;</li>
 *   <li>{@link #random(long, int)}: small random topologies for property and comparison tests.</li>
 * </ul>
 *
 * <p>The M and L fleets are meant to look like a real deployment. Sites sit on the globe around three
 * residency regions ({@code us}, {@code eu}, {@code ap}); the round trip between a gateway cluster and an
 * engine cluster is {@code 2 ms + 0.014 ms/km × great-circle distance} (fibre at 200 km/ms, a route 1.4×
 * longer than the great circle, paid both ways), so same-site pairs cost 2 ms, neighbouring sites a few
 * ms and intercontinental pairs 80-170 ms. Engines are GPU servers of three generations (speed 1, 2.2 and
 * 3 relative to the oldest); an engine's capacity and latency profile follow from its generation and the
 * size of its model, and engines of one (engine cluster, model set, generation) are the same SKU and
 * configuration, hence identical but for health (about 3% are degraded, 1% drained). Small models are
 * sometimes co-served on one engine. Each engine cluster serves about half of the models, and every
 * region serves every model, so each residency class has engines. Classes per model: {@code premium}
 * (priority 2), {@code standard} (1) and {@code batch} (0), unrestricted, plus one class per region
 * restricted to that region (priority 1); a gateway cluster demands the unrestricted classes and its own
 * region's class. Total demand is a given fraction of total effective capacity (0.6-0.8 by default,
 * drawn from the seed), split between regions partly by capacity and partly by the number of gateway
 * clusters, so some traffic must cross regions.
 */
public final class Fleets {
    private Fleets() {
    }

    /** The regions of the M and L fleets, each a residency zone. */
    public static final List<String> REGIONS = List.of("us", "eu", "ap");

    /** Latitude/longitude centers of the regions' sites, degrees; sites are scattered ±4° around them. */
    private static final double[][] REGION_CENTER = {{39.0, -95.0}, {50.0, 5.0}, {30.0, 115.0}};

    /** Share of engine clusters (and of gateway clusters) per region. */
    private static final double[] REGION_SHARE = {0.40, 0.35, 0.25};

    /** Model catalog: id, size relative to an 8B model, expected output tokens. */
    private static final Object[][] CATALOG = {
        {"llama-3.1-8b", 1.0, 250},
        {"qwen2.5-14b", 1.8, 300},
        {"mixtral-8x7b", 3.5, 300},
        {"llama-3.1-70b", 9.0, 350},
        {"mistral-7b", 0.9, 200},
        {"gemma-2-27b", 3.2, 250},
        {"qwen2.5-72b", 9.5, 400},
        {"llama-3.1-405b", 30.0, 300},
    };

    /** GPU generations: name, speed relative to the oldest, TBT growth from idle to full. */
    private static final Object[][] GENERATIONS = {{"a100", 1.0, 1.2}, {"h100", 2.2, 1.0}, {"h200", 3.0, 0.8}};

    /** The worked example of docs/design.md §3, the same topology as {@code examples/talk.yaml}. */
    public static Topology talk() {
        String model = "llama-3.1-70b";
        LatencyProfile profile = new ParametricProfile(150, 20, 1.0);
        Map<String, Map<String, Double>> rtt = new LinkedHashMap<>();
        rtt.put("east", ordered("gpu-east", 2.0, "gpu-west", 60.0));
        rtt.put("west", ordered("gpu-east", 60.0, "gpu-west", 2.0));
        Map<String, Map<String, Double>> demand = new LinkedHashMap<>();
        demand.put("east", ordered("chat", 120.0));
        demand.put("west", ordered("chat", 40.0));
        return new Topology(
                List.of(new GatewayCluster("east", "us-east"), new GatewayCluster("west", "us-west")),
                List.of(new EngineCluster("gpu-east", "us-east"), new EngineCluster("gpu-west", "us-west")),
                rtt,
                List.of(new Model(model, 200)),
                List.of(new Engine("east-1", "gpu-east", "http://127.0.0.1:9101", List.of(model), 100, profile, 1.0),
                        new Engine("west-1", "gpu-west", "http://127.0.0.1:9102", List.of(model), 80, profile, 1.0)),
                List.of(new TrafficClass("chat", model, List.of(), 0)),
                demand, Topology.DEFAULT_HEADROOM, Topology.DEFAULT_AFFINITY_DISCOUNT_MS);
    }

    /** M: 16 gateway clusters × 256 engines (8 engine clusters) × 4 models, load drawn in [0.6, 0.8]. */
    public static Topology medium(long seed) {
        return medium(seed, defaultUtilization(seed));
    }

    /**
     * M with total demand = {@code utilization} × total effective capacity; above 1 the fleet cannot
     * carry it all and must shed.
     */
    public static Topology medium(long seed, double utilization) {
        return fleet(seed, 16, 8, 256, 4, utilization);
    }

    /** L: 64 gateway clusters × 4,096 engines (32 engine clusters) × 8 models, load drawn in [0.6, 0.8]. */
    public static Topology large(long seed) {
        return large(seed, defaultUtilization(seed));
    }

    /** L with total demand = {@code utilization} × total effective capacity (above 1: shedding). */
    public static Topology large(long seed, double utilization) {
        return fleet(seed, 64, 32, 4096, 8, utilization);
    }

    private static double defaultUtilization(long seed) {
        return 0.6 + 0.2 * new SplittableRandom(seed ^ 0x5eed5eedL).nextDouble();
    }

    /**
     * The same topology with every demand entry multiplied by an independent factor drawn uniformly
     * from [1 − {@code change}, 1 + {@code change}]: the "5% demand change" of the warm-start benchmark.
     *
     * @param change relative change, in [0, 1)
     */
    public static Topology withDemandScaled(Topology topology, long seed, double change) {
        if (!(change >= 0 && change < 1)) {
            throw new IllegalArgumentException("change: " + change + " (expected: in [0, 1))");
        }
        SplittableRandom rnd = new SplittableRandom(seed);
        Map<String, Map<String, Double>> demand = new LinkedHashMap<>();
        topology.demandRps().forEach((g, row) -> {
            Map<String, Double> out = new LinkedHashMap<>();
            row.forEach((k, rps) -> out.put(k, rps * (1 + change * (2 * rnd.nextDouble() - 1))));
            demand.put(g, out);
        });
        return topology.withDemand(demand);
    }

    /** The same topology with every demand entry multiplied by {@code factor} ≥ 0. */
    public static Topology withDemandTimes(Topology topology, double factor) {
        if (!(factor >= 0) || Double.isInfinite(factor)) {
            throw new IllegalArgumentException("factor: " + factor + " (expected: a finite number >= 0)");
        }
        Map<String, Map<String, Double>> demand = new LinkedHashMap<>();
        topology.demandRps().forEach((g, row) -> {
            Map<String, Double> out = new LinkedHashMap<>();
            row.forEach((k, rps) -> out.put(k, rps * factor));
            demand.put(g, out);
        });
        return topology.withDemand(demand);
    }

    /** The same topology with another {@code affinity_discount_ms} (0 turns the affinity term off). */
    public static Topology withAffinityDiscount(Topology t, double ms) {
        return new Topology(t.gatewayClusters(), t.engineClusters(), t.networkRttMs(), t.models(), t.engines(),
                t.classes(), t.demandRps(), t.headroom(), ms);
    }

    /** Total effective capacity of the topology's engines (no penalties), req/s. */
    public static double totalEffectiveCapacityRps(Topology t) {
        double sum = 0;
        for (Engine e : t.engines()) {
            sum += e.effectiveCapacityRps(t.headroom(), 1.0);
        }
        return sum;
    }

    /** Total demand of the topology, req/s. */
    public static double totalDemandRps(Topology t) {
        double sum = 0;
        for (Map<String, Double> row : t.demandRps().values()) {
            for (double v : row.values()) {
                sum += v;
            }
        }
        return sum;
    }

    // ---------------------------------------------------------------------------------------------
    // M and L

    private record Site(String id, String region, double lat, double lon) {
    }

    private static Topology fleet(long seed, int gatewayCount, int clusterCount, int engineCount, int modelCount,
                                  double utilization) {
        if (!(utilization > 0) || Double.isInfinite(utilization)) {
            throw new IllegalArgumentException("utilization: " + utilization + " (expected: a finite number > 0)");
        }
        SplittableRandom rnd = new SplittableRandom(seed);
        int regions = REGIONS.size();

        List<Site> gatewaySites = sites(rnd, "gw", gatewayCount);
        List<Site> clusterSites = sites(rnd, "gpu", clusterCount);
        List<GatewayCluster> gateways = new ArrayList<>();
        gatewaySites.forEach(s -> gateways.add(new GatewayCluster(s.id(), s.region())));
        List<EngineCluster> clusters = new ArrayList<>();
        clusterSites.forEach(s -> clusters.add(new EngineCluster(s.id(), s.region())));
        Map<String, Map<String, Double>> rtt = new LinkedHashMap<>();
        for (Site g : gatewaySites) {
            Map<String, Double> row = new LinkedHashMap<>();
            for (Site c : clusterSites) {
                row.put(c.id(), round(2.0 + 0.014 * distanceKm(g, c), 0.1));
            }
            rtt.put(g.id(), row);
        }

        List<Model> models = new ArrayList<>();
        double[] size = new double[modelCount];
        for (int m = 0; m < modelCount; m++) {
            models.add(new Model((String) CATALOG[m][0], (Integer) CATALOG[m][2]));
            size[m] = (Double) CATALOG[m][1];
        }

        // which models each engine cluster serves: about half, then every region gets every model
        List<Set<Integer>> served = new ArrayList<>();
        for (int c = 0; c < clusterCount; c++) {
            Set<Integer> s = new java.util.TreeSet<>();
            int want = Math.max(1, (modelCount + 1) / 2);
            while (s.size() < want) {
                s.add(rnd.nextInt(modelCount));
            }
            served.add(s);
        }
        for (int r = 0; r < regions; r++) {
            List<Integer> inRegion = new ArrayList<>();
            for (int c = 0; c < clusterCount; c++) {
                if (clusterSites.get(c).region().equals(REGIONS.get(r))) {
                    inRegion.add(c);
                }
            }
            for (int m = 0; m < modelCount; m++) {
                boolean covered = false;
                for (int c : inRegion) {
                    covered |= served.get(c).contains(m);
                }
                if (!covered && !inRegion.isEmpty()) {
                    served.get(inRegion.get(rnd.nextInt(inRegion.size()))).add(m);
                }
            }
        }

        // engines: spread evenly over clusters; within a cluster over its models by model size (bigger
        // models need more servers for the same traffic), one or two GPU generations per cluster
        List<Engine> engines = new ArrayList<>();
        double[][] capacityOf = new double[regions][modelCount];
        int perCluster = engineCount / clusterCount;
        for (int c = 0; c < clusterCount; c++) {
            Site site = clusterSites.get(c);
            int region = REGIONS.indexOf(site.region());
            List<Integer> ms = new ArrayList<>(served.get(c));
            int genA = rnd.nextInt(GENERATIONS.length);
            int genB = rnd.nextDouble() < 0.5 ? genA : rnd.nextInt(GENERATIONS.length);
            double[] share = new double[ms.size()];
            double total = 0;
            for (int i = 0; i < ms.size(); i++) {
                share[i] = Math.sqrt(size[ms.get(i)]) * (0.7 + 0.6 * rnd.nextDouble());
                total += share[i];
            }
            int[] count = new int[ms.size()];
            int assigned = 0;
            for (int i = 0; i < ms.size(); i++) {
                count[i] = Math.max(1, (int) Math.floor(perCluster * share[i] / total));
                assigned += count[i];
            }
            for (int i = 0; assigned < perCluster; i = (i + 1) % ms.size()) {
                count[i]++;
                assigned++;
            }
            for (int i = ms.size() - 1; assigned > perCluster; i = (i + ms.size() - 1) % ms.size()) {
                if (count[i] > 1) {
                    count[i]--;
                    assigned--;
                }
            }
            int serial = 0;
            for (int i = 0; i < ms.size(); i++) {
                int m = ms.get(i);
                // small models are sometimes co-served with the cluster's other small model
                int partner = -1;
                if (size[m] <= 2.0) {
                    for (int other : ms) {
                        if (other != m && size[other] <= 2.0) {
                            partner = other;
                        }
                    }
                }
                for (int n = 0; n < count[i]; n++) {
                    int gen = n < count[i] / 2 ? genA : genB;
                    boolean shared = partner >= 0 && n % 4 == 3;
                    double speed = (Double) GENERATIONS[gen][1];
                    double msize = shared ? Math.max(size[m], size[partner]) : size[m];
                    double capacity = round(40.0 * speed / msize, 0.1);
                    LatencyProfile profile = new ParametricProfile(
                            round(40.0 * Math.pow(msize, 0.7) / Math.sqrt(speed), 0.1),
                            round(6.0 * Math.sqrt(msize) / Math.pow(speed, 0.6), 0.01),
                            (Double) GENERATIONS[gen][2]);
                    double health = 1.0;
                    double h = rnd.nextDouble();
                    if (h < 0.01) {
                        health = 0.0;
                    } else if (h < 0.04) {
                        health = h < 0.025 ? 0.5 : 0.75;
                    }
                    List<String> engineModels = shared
                            ? List.of(models.get(Math.min(m, partner)).id(), models.get(Math.max(m, partner)).id())
                            : List.of(models.get(m).id());
                    String id = site.id() + "-" + GENERATIONS[gen][0] + "-" + String.format("%03d", serial++);
                    engines.add(new Engine(id, site.id(), "http://" + id + ".internal:8000", engineModels, capacity,
                            profile, health));
                    double effective = capacity * health * (1 - Topology.DEFAULT_HEADROOM);
                    for (String em : engineModels) {
                        capacityOf[region][indexOf(models, em)] += effective / engineModels.size();
                    }
                }
            }
        }

        // classes: three unrestricted priorities per model, plus one residency class per region
        List<TrafficClass> classes = new ArrayList<>();
        for (Model m : models) {
            classes.add(new TrafficClass(m.id() + "/premium", m.id(), List.of(), 2));
            classes.add(new TrafficClass(m.id() + "/standard", m.id(), List.of(), 1));
            classes.add(new TrafficClass(m.id() + "/batch", m.id(), List.of(), 0));
            for (String r : REGIONS) {
                classes.add(new TrafficClass(m.id() + "/" + r, m.id(), List.of(r), 1));
            }
        }

        // demand: per model, utilization × capacity; per region 70% by capacity, 30% by gateway count
        int[] gatewaysIn = new int[regions];
        gatewaySites.forEach(s -> gatewaysIn[REGIONS.indexOf(s.region())]++);
        double[] gatewayWeight = new double[gatewayCount];
        double[] regionWeight = new double[regions];
        for (int g = 0; g < gatewayCount; g++) {
            gatewayWeight[g] = 0.4 + 1.2 * rnd.nextDouble();
            regionWeight[REGIONS.indexOf(gatewaySites.get(g).region())] += gatewayWeight[g];
        }
        double[] classShare = {0.15, 0.45, 0.20, 0.20}; // premium, standard, batch, own region
        Map<String, Map<String, Double>> demand = new LinkedHashMap<>();
        for (int g = 0; g < gatewayCount; g++) {
            Site site = gatewaySites.get(g);
            int r = REGIONS.indexOf(site.region());
            Map<String, Double> row = new LinkedHashMap<>();
            for (int m = 0; m < modelCount; m++) {
                double capM = 0;
                for (int q = 0; q < regions; q++) {
                    capM += capacityOf[q][m];
                }
                double regionDemand = utilization * (0.7 * capacityOf[r][m] + 0.3 * capM * gatewaysIn[r] / gatewayCount);
                double mine = regionDemand * gatewayWeight[g] / regionWeight[r];
                String id = models.get(m).id();
                String[] names = {id + "/premium", id + "/standard", id + "/batch", id + "/" + site.region()};
                for (int i = 0; i < names.length; i++) {
                    row.put(names[i], round(mine * classShare[i] * (0.7 + 0.6 * rnd.nextDouble()), 0.01));
                }
            }
            demand.put(site.id(), row);
        }
        Topology draft = new Topology(gateways, clusters, rtt, models, engines, classes, demand,
                Topology.DEFAULT_HEADROOM, Topology.DEFAULT_AFFINITY_DISCOUNT_MS);
        // the jitter above moves the total a little; put it back on the requested utilization exactly
        return withDemandTimes(draft, utilization * totalEffectiveCapacityRps(draft) / totalDemandRps(draft));
    }

    private static int indexOf(List<Model> models, String id) {
        for (int i = 0; i < models.size(); i++) {
            if (models.get(i).id().equals(id)) {
                return i;
            }
        }
        throw new IllegalStateException(id);
    }

    /** {@code count} sites spread over the regions by {@link #REGION_SHARE}, at least one per region. */
    private static List<Site> sites(SplittableRandom rnd, String prefix, int count) {
        int regions = REGIONS.size();
        int[] per = new int[regions];
        int assigned = 0;
        for (int r = 0; r < regions; r++) {
            per[r] = Math.max(1, (int) Math.round(count * REGION_SHARE[r]));
            assigned += per[r];
        }
        per[0] += count - assigned;
        List<Site> out = new ArrayList<>();
        for (int r = 0; r < regions; r++) {
            for (int i = 0; i < per[r]; i++) {
                double lat = REGION_CENTER[r][0] + 8 * (rnd.nextDouble() - 0.5);
                double lon = REGION_CENTER[r][1] + 8 * (rnd.nextDouble() - 0.5);
                out.add(new Site(prefix + "-" + REGIONS.get(r) + "-" + (i + 1), REGIONS.get(r), lat, lon));
            }
        }
        return out;
    }

    private static double distanceKm(Site a, Site b) {
        double p1 = Math.toRadians(a.lat());
        double p2 = Math.toRadians(b.lat());
        double dp = p2 - p1;
        double dl = Math.toRadians(b.lon() - a.lon());
        double h = Math.sin(dp / 2) * Math.sin(dp / 2) + Math.cos(p1) * Math.cos(p2) * Math.sin(dl / 2) * Math.sin(dl / 2);
        return 2 * 6371.0 * Math.asin(Math.min(1, Math.sqrt(h)));
    }

    // ---------------------------------------------------------------------------------------------
    // small random topologies

    /**
     * A small random topology for tests: 2-4 gateway clusters, {@code engines} engines (≥ 1) in 2-4
     * engine clusters over two regions, 1-3 models, 1-4 classes with random residency and priority,
     * parametric profiles (a quarter measured), some engines degraded, and total demand between 30% and
     * 140% of total effective capacity (so some instances must shed). Every model is served by at least
     * one engine and every class has at least one allowed engine.
     */
    public static Topology random(long seed, int engines) {
        if (engines < 1) {
            throw new IllegalArgumentException("engines: " + engines + " (expected: >= 1)");
        }
        SplittableRandom rnd = new SplittableRandom(seed);
        List<String> regions = List.of("north", "south");
        int gatewayCount = 2 + rnd.nextInt(3);
        int clusterCount = 2 + rnd.nextInt(3);
        int modelCount = 1 + rnd.nextInt(3);

        List<GatewayCluster> gateways = new ArrayList<>();
        for (int g = 0; g < gatewayCount; g++) {
            gateways.add(new GatewayCluster("gw" + g, regions.get(g % 2)));
        }
        List<EngineCluster> clusters = new ArrayList<>();
        for (int c = 0; c < clusterCount; c++) {
            clusters.add(new EngineCluster("ec" + c, regions.get(c % 2)));
        }
        Map<String, Map<String, Double>> rtt = new LinkedHashMap<>();
        for (GatewayCluster g : gateways) {
            Map<String, Double> row = new LinkedHashMap<>();
            for (EngineCluster c : clusters) {
                double base = g.region().equals(c.region()) ? 1 + 9 * rnd.nextDouble() : 30 + 90 * rnd.nextDouble();
                row.put(c.id(), round(base, 0.1));
            }
            rtt.put(g.id(), row);
        }
        List<Model> models = new ArrayList<>();
        for (int m = 0; m < modelCount; m++) {
            models.add(new Model("m" + m, 1 + rnd.nextInt(400)));
        }
        List<Engine> engineList = new ArrayList<>();
        for (int j = 0; j < engines; j++) {
            Set<String> ms = new LinkedHashSet<>();
            ms.add("m" + (j < modelCount ? j : rnd.nextInt(modelCount)));
            if (modelCount > 1 && rnd.nextDouble() < 0.25) {
                ms.add("m" + rnd.nextInt(modelCount));
            }
            double capacity = round(5 + 95 * rnd.nextDouble(), 0.1);
            LatencyProfile profile;
            if (rnd.nextDouble() < 0.25) {
                List<MeasuredProfile.Point> points = new ArrayList<>();
                double ttft = 30 + 200 * rnd.nextDouble();
                double tbt = 2 + 25 * rnd.nextDouble();
                for (double u : new double[] {0.0, 0.3, 0.6, 0.8, 0.95}) {
                    points.add(new MeasuredProfile.Point(u, ttft / (1 - u) * (0.95 + 0.1 * rnd.nextDouble()),
                            tbt * (1 + u) * (0.95 + 0.1 * rnd.nextDouble())));
                }
                profile = new MeasuredProfile(points);
            } else {
                profile = new ParametricProfile(round(30 + 200 * rnd.nextDouble(), 0.1),
                        round(2 + 25 * rnd.nextDouble(), 0.01), round(2 * rnd.nextDouble(), 0.01));
            }
            double h = rnd.nextDouble();
            double health = h < 0.1 ? 0.0 : h < 0.25 ? round(0.3 + 0.7 * rnd.nextDouble(), 0.01) : 1.0;
            String cluster = "ec" + (j % clusterCount);
            engineList.add(new Engine("e" + j, cluster, "http://e" + j + ".test:8000", List.copyOf(ms), capacity,
                    profile, health));
        }
        List<TrafficClass> classes = new ArrayList<>();
        int classCount = 1 + rnd.nextInt(4);
        for (int k = 0; k < classCount; k++) {
            String model = "m" + (k < modelCount ? k : rnd.nextInt(modelCount));
            List<String> residency = rnd.nextDouble() < 0.35 ? List.of(regions.get(rnd.nextInt(2))) : List.of();
            TrafficClass c = new TrafficClass("c" + k, model, residency, rnd.nextInt(3));
            boolean any = false;
            for (Engine e : engineList) {
                any |= e.serves(model) && c.allowsRegion(clusters.get(Integer.parseInt(e.cluster().substring(2))).region());
            }
            classes.add(any ? c : new TrafficClass(c.id(), model, List.of(), c.priority()));
        }
        double headroom = round(0.05 + 0.15 * rnd.nextDouble(), 0.01);
        Map<String, Map<String, Double>> demand = new LinkedHashMap<>();
        for (GatewayCluster g : gateways) {
            Map<String, Double> row = new LinkedHashMap<>();
            for (TrafficClass c : classes) {
                if (rnd.nextDouble() < 0.8) {
                    row.put(c.id(), 0.1 + rnd.nextDouble());
                }
            }
            demand.put(g.id(), row);
        }
        if (demand.values().stream().allMatch(Map::isEmpty)) {
            demand.get("gw0").put("c0", 1.0);
        }
        Topology draft = new Topology(gateways, clusters, rtt, models, engineList, classes, demand, headroom,
                Topology.DEFAULT_AFFINITY_DISCOUNT_MS);
        double capacity = totalEffectiveCapacityRps(draft);
        double target = (0.3 + 1.1 * rnd.nextDouble()) * Math.max(capacity, 1.0);
        return withDemandTimes(draft, target / totalDemandRps(draft));
    }

    private static Map<String, Double> ordered(Object... keyValues) {
        Map<String, Double> m = new LinkedHashMap<>();
        for (int i = 0; i < keyValues.length; i += 2) {
            m.put((String) keyValues[i], (Double) keyValues[i + 1]);
        }
        return m;
    }

    /** {@code v} rounded to a multiple of {@code unit} (0.1, 0.01), printed without binary noise. */
    private static double round(double v, double unit) {
        double scale = Math.rint(1 / unit);
        return Math.round(v * scale) / scale;
    }
}
