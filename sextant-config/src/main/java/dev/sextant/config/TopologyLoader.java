package dev.sextant.config;

import dev.sextant.config.YamlTree.Kind;
import dev.sextant.config.YamlTree.Located;
import dev.sextant.config.YamlTree.Mapping;
import dev.sextant.config.YamlTree.Node;
import dev.sextant.config.YamlTree.Scalar;
import dev.sextant.config.YamlTree.Sequence;
import dev.sextant.snapshot.RetryBudget;
import dev.sextant.topology.Engine;
import dev.sextant.topology.EngineCluster;
import dev.sextant.topology.GatewayCluster;
import dev.sextant.topology.HardwareKind;
import dev.sextant.topology.LatencyProfile;
import dev.sextant.topology.MeasuredProfile;
import dev.sextant.topology.Model;
import dev.sextant.topology.ParametricProfile;
import dev.sextant.topology.PriorityScheduling;
import dev.sextant.topology.Problem;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Loads a topology from its YAML form (documented in {@code docs/topology.md}; {@code examples/talk.yaml}
 * is the reference example) and validates it completely: every problem found is reported at once, each
 * naming the file, the line and the field, e.g. {@code talk.yaml:23: engines[1].capacity_rps: -3.0
 * (expected: a finite number > 0)}.
 *
 * <p>Checks run in two stages. The first reads every entry (unknown keys, missing fields, wrong types,
 * the record constructors' own range checks); the second checks references across the whole topology
 * with {@link Topology#problems}. A reference to an entry that itself failed the first stage is not
 * reported again, so one mistake gives one message rather than a cascade.
 */
public final class TopologyLoader {

    private static final List<String> ROOT_KEYS = List.of("gateway_clusters", "engine_clusters", "network_rtt_ms",
            "models", "hardware", "engines", "classes", "demand_rps", "headroom", "affinity_discount_ms", "retry_budget");
    private static final List<String> CLUSTER_KEYS = List.of("id", "region");
    private static final List<String> MODEL_KEYS = List.of("id", "output_tokens");
    private static final List<String> ENGINE_KEYS = List.of("id", "cluster", "endpoint", "models", "capacity_rps",
            "profile", "health", "priority_scheduling", "hardware", "max_num_seqs");
    private static final List<String> HARDWARE_KEYS = List.of("capacity_rps", "profile", "max_num_seqs");
    /** The largest rate a file may give (a capacity, a demand). */
    static final double MAX_RPS = Topology.MAX_RPS;
    /** The smallest positive number a topology may give (see {@code number}). */
    static final double MIN_POSITIVE = 1e-9;
    /** The longest time a file may give (a round trip, a profile's TTFT or TBT, the affinity discount). */
    static final double MAX_MS = Topology.MAX_MS;
    private static final List<String> CLASS_KEYS = List.of("id", "model", "residency", "priority");
    private static final List<String> PARAMETRIC_KEYS = List.of("ttft_ms", "tbt_ms", "tbt_slope");
    private static final List<String> MEASURED_KEYS = List.of("points");
    private static final List<String> POINT_KEYS = List.of("utilization", "ttft_ms", "tbt_ms");
    private static final List<String> RETRY_BUDGET_KEYS = List.of("curve", "min_retries_per_second");
    private static final List<String> RETRY_POINT_KEYS = List.of("utilization", "ratio");
    private static final Pattern LIST_INDEX = Pattern.compile("^(gateway_clusters|engine_clusters|models|engines|classes)\\[(\\d+)]");

    private TopologyLoader() {
    }

    /** Loads the topology in {@code file}; messages name the file as given. */
    public static Topology load(Path file) throws TopologyException {
        return load(ConfigReader.read(file)).topology();
    }

    /**
     * Loads the topology in {@code file} with its hardware kinds, the ratings an engine that registers takes from
     * the kind it names (docs/etcd.md, "Engine registration"); messages name the file as given.
     */
    public static TopologyFile loadFile(Path file) throws TopologyException {
        return load(ConfigReader.read(file));
    }

    /**
     * Loads the topology in {@code yaml}.
     *
     * @param source the name messages give the text, e.g. its file name
     */
    public static Topology load(String yaml, String source) throws TopologyException {
        return load(ConfigReader.of(yaml, source)).topology();
    }

    /** As {@link #load(String, String)}, with the file's hardware kinds. */
    public static TopologyFile loadFile(String yaml, String source) throws TopologyException {
        return load(ConfigReader.of(yaml, source));
    }

    /**
     * Reads the topology embedded at {@code path} of another file (a simulator scenario's {@code topology}: the
     * {@code node} there), with the keys and checks of a topology file as {@code embedding} changes them. Problems
     * are recorded on {@code reader}, at their lines; null when there is any.
     */
    public static Topology embedded(ConfigReader reader, Mapping node, String path, TopologyEmbedding embedding) {
        if (path.isEmpty() || embedding == null) {
            throw new IllegalArgumentException("path and embedding: required (a topology file is read by load)");
        }
        int before = reader.count();
        Topology t = new Reading(reader, path, embedding).topology(node);
        return reader.count() > before ? null : t;
    }

    private static TopologyFile load(ConfigReader r) throws TopologyException {
        Mapping root = r.root("a mapping with keys " + String.join(", ", ROOT_KEYS), false);
        Reading reading = new Reading(r, "", null);
        Topology t = root == null ? null : reading.topology(root);
        if (t == null || !r.ok()) {
            throw new TopologyException(r.sorted());
        }
        return new TopologyFile(t, reading.hardware);
    }

    /** The state of one load: the reading of the file, what was built. */
    private static final class Reading {
        private final ConfigReader r;
        /** ids and regions named by entries that failed to load; references to them are not reported. */
        private final Set<String> failedNames = new HashSet<>();
        /** list name → YAML index of each built entry, to map {@link Topology#problems} paths back. */
        private final Map<String, List<Integer>> yamlIndex = new LinkedHashMap<>();
        /** The hardware kinds that loaded, by id. */
        private final Map<String, HardwareKind> hardware = new LinkedHashMap<>();
        /** Hardware kinds written but not loaded: an engine naming one is not reported again. */
        private final Set<String> failedKinds = new HashSet<>();

        /** Where the topology's mapping is in the file: "" for a topology file, its key in a file embedding one. */
        private final String base;
        /** What the file embedding the topology changes; null for a topology file. */
        private final TopologyEmbedding embedding;

        Reading(ConfigReader r, String base, TopologyEmbedding embedding) {
            this.r = r;
            this.base = base;
            this.embedding = embedding;
        }

        /** The path of {@code key} of the topology's mapping. */
        private String at(String key) {
            return key.isEmpty() ? base : YamlTree.child(base, key);
        }

        private Topology topology(Mapping root) {
            List<String> rootKeys = ROOT_KEYS;
            List<String> engineKeys = ENGINE_KEYS;
            if (embedding != null) {
                rootKeys = new ArrayList<>(ROOT_KEYS);
                rootKeys.removeAll(embedding.refusedKeys());
                engineKeys = new ArrayList<>(ENGINE_KEYS);
                engineKeys.addAll(embedding.engineKeys());
            }
            r.keys(root, base, rootKeys);
            List<GatewayCluster> gateways = list(root, "gateway_clusters", this::gatewayCluster, CLUSTER_KEYS, true);
            List<EngineCluster> clusters = list(root, "engine_clusters", this::engineCluster, CLUSTER_KEYS, true);
            Map<String, Map<String, Double>> rtt = table(root, "network_rtt_ms", MAX_MS, "ms");
            List<Model> models = list(root, "models", this::model, MODEL_KEYS, false);
            if (embedding == null) {
                hardwareKinds(root);
            }
            // engines may all register instead (docs/etcd.md): the list may be absent
            List<Engine> engines = r.value(root, base, "engines", "a list", false) == null ? List.of()
                    : list(root, "engines", this::engine, engineKeys, false);
            List<TrafficClass> classes = list(root, "classes", this::trafficClass, CLASS_KEYS, false);
            Map<String, Map<String, Double>> demand = table(root, "demand_rps", MAX_RPS, "req/s");
            Double headroom = number(root, base, "headroom", Topology.DEFAULT_HEADROOM);
            Double discount = number(root, base, "affinity_discount_ms", Topology.DEFAULT_AFFINITY_DISCOUNT_MS, MAX_MS,
                    "ms");
            RetryBudget retryBudget = retryBudget(root);
            if (gateways == null || clusters == null || rtt == null || models == null || engines == null
                    || classes == null || demand == null || headroom == null || discount == null
                    || retryBudget == null) {
                return null;
            }
            for (Problem p : Topology.problems(gateways, clusters, rtt, models, engines, classes, demand, headroom,
                    discount)) {
                String path = at(yamlPath(p.path()));
                if (!refersToFailedEntry(path)) {
                    r.problem(path, p.message());
                }
            }
            if (!r.ok()) {
                return null;
            }
            return r.build(base, () -> new Topology(gateways, clusters, rtt, models, engines, classes, demand, headroom,
                    discount, retryBudget));
        }

        /**
         * {@code retry_budget: {curve: [{utilization, ratio}, ...], min_retries_per_second}}, each key optional with
         * {@link RetryBudget#DEFAULT}'s value; the default itself when the key is absent. Null after a problem.
         */
        private RetryBudget retryBudget(Mapping root) {
            String p = at("retry_budget");
            String expected = "a mapping with curve and/or min_retries_per_second";
            Node n = r.value(root, base, "retry_budget", expected, false);
            if (n == null) {
                return RetryBudget.DEFAULT;
            }
            if (!(n instanceof Mapping m)) {
                return r.wrongType(base, "retry_budget", n, expected);
            }
            int before = r.count();
            r.keys(m, p, RETRY_BUDGET_KEYS);
            List<RetryBudget.Point> curve = RetryBudget.DEFAULT.curve();
            if (r.value(m, p, "curve", "a list", false) != null) {
                curve = retryCurve(m, p);
            }
            Double floor = number(m, p, "min_retries_per_second", RetryBudget.DEFAULT.minRetriesPerSecond());
            if (curve == null || floor == null || r.count() > before) {
                return null;
            }
            List<RetryBudget.Point> points = curve;
            return r.build(p, () -> new RetryBudget(points, floor));
        }

        /** {@code retry_budget.curve}'s points, each checked, utilizations strictly increasing; null on a problem. */
        private List<RetryBudget.Point> retryCurve(Mapping budget, String budgetPath) {
            Sequence s = r.sequence(budget, budgetPath, "curve");
            if (s == null) {
                return null;
            }
            String p = YamlTree.child(budgetPath, "curve");
            if (s.items().isEmpty()) {
                r.problem(p, "empty (expected: at least one {utilization, ratio} point)");
                return null;
            }
            int before = r.count();
            List<RetryBudget.Point> points = items(s, p, (m, at) -> {
                r.keys(m, at, RETRY_POINT_KEYS);
                Double utilization = number(m, at, "utilization", null);
                Double ratio = number(m, at, "ratio", null);
                return utilization == null || ratio == null ? null
                        : r.build(at, () -> new RetryBudget.Point(utilization, ratio));
            }, null);
            if (r.count() > before) {
                return null;
            }
            for (int i = 1; i < points.size(); i++) {
                double u = points.get(i).utilization();
                double previous = points.get(i - 1).utilization();
                if (!(u > previous)) {
                    r.problem(p + "[" + i + "].utilization", u + " (expected: > " + previous
                            + ", the utilization of the point before: utilizations strictly increasing)");
                    return null;
                }
            }
            return points;
        }

        // Each entry reads every field first, so that all of an entry's problems are reported, then
        // lets the record's constructor check ranges.

        private GatewayCluster gatewayCluster(Mapping m, String p) {
            String id = r.string(m, p, "id");
            String region = r.string(m, p, "region");
            return id == null || region == null ? null : r.build(p, () -> new GatewayCluster(id, region));
        }

        private EngineCluster engineCluster(Mapping m, String p) {
            String id = r.string(m, p, "id");
            String region = r.string(m, p, "region");
            return id == null || region == null ? null : r.build(p, () -> new EngineCluster(id, region));
        }

        private Model model(Mapping m, String p) {
            String id = r.string(m, p, "id");
            Integer outputTokens = r.integer(m, p, "output_tokens",
                    embedding == null ? null : embedding.defaultOutputTokens(), 1, Model.MAX_OUTPUT_TOKENS);
            return id == null || outputTokens == null ? null : r.build(p, () -> new Model(id, outputTokens));
        }

        private TrafficClass trafficClass(Mapping m, String p) {
            String id = r.string(m, p, "id");
            String model = r.string(m, p, "model");
            List<String> residency = r.stringList(m, p, "residency", List.of());
            Integer priority = r.integer(m, p, "priority", 0);
            if (id == null || model == null || residency == null || priority == null) {
                return null;
            }
            return r.build(p, () -> new TrafficClass(id, model, residency, priority));
        }

        /** {@code hardware: {kind: {capacity_rps, profile}}}: each kind that loads goes in {@link #hardware}. */
        private void hardwareKinds(Mapping root) {
            Mapping kinds = r.optionalMapping(root, base, "hardware", "a mapping of hardware kind to {capacity_rps, profile}");
            if (kinds == null) {
                return;
            }
            kinds.entries().forEach((id, e) -> {
                String p = YamlTree.child(at("hardware"), id);
                int before = r.count();
                if (!(e.value() instanceof Mapping m)) {
                    r.wrongType(at("hardware"), id, e.value(), "a mapping with capacity_rps and profile");
                    failedKinds.add(id);
                    return;
                }
                r.keys(m, p, HARDWARE_KEYS);
                Double capacity = number(m, p, "capacity_rps", null, MAX_RPS, "req/s");
                LatencyProfile profile = profile(m, p);
                Integer seqs = r.integer(m, p, "max_num_seqs", 0, 1, Engine.MAX_NUM_SEQS);
                HardwareKind k = capacity == null || profile == null || seqs == null ? null
                        : r.build(p, () -> new HardwareKind(id, capacity, profile, seqs));
                if (k == null || r.count() > before) {
                    failedKinds.add(id);
                } else {
                    hardware.put(id, k);
                }
            });
        }

        private Engine engine(Mapping m, String p) {
            String id = r.string(m, p, "id");
            String cluster = r.string(m, p, "cluster");
            boolean endpointWritten = embedding == null || r.value(m, p, "endpoint", "a string", false) != null;
            String endpoint = endpointWritten ? r.string(m, p, "endpoint")
                    : id == null ? null : embedding.defaultEndpoint(id);
            List<String> models = r.stringList(m, p, "models", null);
            // a hardware kind gives the rating the engine does not write itself; in a file embedding the topology,
            // the embedding file's hardware does. rated: the engine has such a rating (null hw: it failed to load)
            boolean rated;
            HardwareKind hw;
            if (embedding != null) {
                rated = true;
                hw = id == null || models == null ? null : embedding.rating(r, m, p, id, models);
            } else {
                String kind = r.string(m, p, "hardware", null);
                rated = kind != null;
                hw = kind == null ? null : hardware.get(kind);
                if (kind != null && hw == null && !failedKinds.contains(kind)) {
                    r.problem(YamlTree.child(p, "hardware"), "unknown hardware kind '" + kind + "' (expected one of "
                            + new java.util.TreeSet<>(hardware.keySet()) + ")");
                }
            }
            Double capacity = number(m, p, "capacity_rps", !rated ? null
                    : hw == null ? Double.NaN : hw.capacityRps(), MAX_RPS, "req/s");
            LatencyProfile profile = !rated || r.value(m, p, "profile", "a profile", false) != null
                    ? profile(m, p) : hw == null ? null : hw.profile();
            Double health = number(m, p, "health", 1.0);
            PriorityScheduling scheduling = priorityScheduling(m, p);
            Integer seqs = r.integer(m, p, "max_num_seqs", hw == null ? 0 : hw.maxNumSeqs(), 1, Engine.MAX_NUM_SEQS);
            if (endpointWritten && endpoint != null && !endpoint.isBlank() && !Urls.isHttpBase(endpoint)) {
                r.problem(YamlTree.child(p, "endpoint"), "'" + endpoint + "' (expected: an http:// or https:// URL with a"
                        + " host, such as http://10.0.0.7:8000)");
                return null;
            }
            if (id == null || cluster == null || endpoint == null || models == null || capacity == null
                    || profile == null || health == null || scheduling == null || seqs == null || (rated && hw == null)) {
                return null;
            }
            return r.build(p, () -> new Engine(id, cluster, endpoint, models, capacity, profile, health, scheduling,
                    seqs));
        }

        /** An engine's {@code priority_scheduling}: {@code none} when absent. */
        private PriorityScheduling priorityScheduling(Mapping m, String p) {
            String word = r.string(m, p, "priority_scheduling", PriorityScheduling.NONE.word());
            PriorityScheduling s = word == null ? null : PriorityScheduling.of(word);
            if (word != null && s == null) {
                r.problem(YamlTree.child(p, "priority_scheduling"), "'" + word + "' (expected: none, lower_first (vLLM"
                        + " --scheduling-policy priority) or higher_first (SGLang --enable-priority-scheduling))");
            }
            return s;
        }

        private LatencyProfile profile(Mapping engine, String enginePath) {
            String p = YamlTree.child(enginePath, "profile");
            Mapping m = r.mapping(engine, enginePath, "profile", "a mapping with ttft_ms, tbt_ms[, tbt_slope] or points");
            if (m == null) {
                return null;
            }
            if (m.entries().containsKey("points")) {
                r.keys(m, p, MEASURED_KEYS);
                Sequence s = r.sequence(m, p, "points");
                if (s == null) {
                    return null;
                }
                int before = r.count();
                List<MeasuredProfile.Point> points = items(s, YamlTree.child(p, "points"), this::point, null);
                return r.count() > before ? null : r.build(p, () -> new MeasuredProfile(points));
            }
            r.keys(m, p, PARAMETRIC_KEYS);
            Double ttft = number(m, p, "ttft_ms", null, MAX_MS, "ms");
            Double tbt = number(m, p, "tbt_ms", null, MAX_MS, "ms");
            Double slope = number(m, p, "tbt_slope", ParametricProfile.DEFAULT_TBT_SLOPE);
            if (ttft == null || tbt == null || slope == null) {
                return null;
            }
            return r.build(p, () -> new ParametricProfile(ttft, tbt, slope));
        }

        private MeasuredProfile.Point point(Mapping m, String p) {
            r.keys(m, p, POINT_KEYS);
            Double utilization = number(m, p, "utilization", null);
            Double ttft = number(m, p, "ttft_ms", null, MAX_MS, "ms");
            Double tbt = number(m, p, "tbt_ms", null, MAX_MS, "ms");
            if (utilization == null || ttft == null || tbt == null) {
                return null;
            }
            return r.build(p, () -> new MeasuredProfile.Point(utilization, ttft, tbt));
        }

        // ---- lists and tables ----

        /** The entries under {@code key} that loaded; null when the list itself is missing or malformed. */
        private <T> List<T> list(Mapping root, String key, EntryReader<T> reader, List<String> keys,
                                 boolean regionIsName) {
            Sequence s = r.sequence(root, base, key);
            if (s == null) {
                return null;
            }
            List<Integer> built = new ArrayList<>();
            yamlIndex.put(key, built);
            return items(s, at(key), (m, p) -> {
                r.keys(m, p, keys);
                return reader.read(m, p);
            }, (i, ok, m) -> {
                if (ok) {
                    built.add(i);
                } else if (m != null) {
                    name(m, "id");
                    if (regionIsName) {
                        name(m, "region");
                    }
                }
            });
        }

        private void name(Mapping m, String key) {
            YamlTree.Entry e = m.entries().get(key);
            if (e != null && e.value() instanceof Scalar s && s.kind() != Kind.NULL) {
                failedNames.add(s.text());
            }
        }

        /** Reads each item as a mapping; returns the items that loaded. */
        private <T> List<T> items(Sequence s, String path, EntryReader<T> reader, ItemListener listener) {
            List<T> out = new ArrayList<>();
            for (int i = 0; i < s.items().size(); i++) {
                String p = path + "[" + i + "]";
                Node n = s.items().get(i);
                int before = r.count();
                T value = null;
                if (n instanceof Mapping m) {
                    value = reader.read(m, p);
                } else if (!(n instanceof Scalar sc && sc.kind() == Kind.OTHER)) {
                    r.problem(p, YamlTree.shown(n) + " (expected: a mapping)");
                }
                boolean ok = value != null && r.count() == before;
                if (ok) {
                    out.add(value);
                }
                if (listener != null) {
                    listener.item(i, ok, n instanceof Mapping m ? m : null);
                }
            }
            return out;
        }

        /** {@code key: {row: {column: number}}}; null when the mapping is missing. */
        private Map<String, Map<String, Double>> table(Mapping root, String key, double max, String unit) {
            Mapping m = r.mapping(root, base, key, "a mapping of gateway cluster id to a mapping");
            if (m == null) {
                return null;
            }
            Map<String, Map<String, Double>> out = new LinkedHashMap<>();
            m.entries().forEach((row, e) -> {
                String rowPath = YamlTree.child(at(key), row);
                if (!(e.value() instanceof Mapping cellsOfRow)) {
                    r.wrongType(at(key), row, e.value(), "a mapping of id to number");
                    return;
                }
                Map<String, Double> cells = new LinkedHashMap<>();
                // A malformed cell is reported here and kept as 0, so that the cross-reference stage
                // does not also call the pair missing.
                cellsOfRow.entries().forEach((column, c) -> {
                    Double v = number(cellsOfRow, rowPath, column, null, max, unit);
                    cells.put(column, v == null ? 0.0 : v);
                });
                out.put(row, cells);
            });
            return out;
        }

        /**
         * The number at {@code path}.{@code key} as {@link ConfigReader#number} reads it, or null with a problem there
         * when it is positive and below {@link #MIN_POSITIVE}: no rate, time, share or factor of a fleet is that small,
         * and the optimizer's arithmetic on such numbers leaves doubles' normal range (a demand of 1e-308 req/s made
         * its shed fraction 0/0).
         */
        private Double number(Mapping m, String path, String key, Double dflt) {
            Double v = r.number(m, path, key, dflt);
            if (v != null && v > 0 && v < MIN_POSITIVE) {
                r.problem(YamlTree.child(path, key), v + " (expected: at least 1e-9, or 0 where 0 is allowed)");
                return null;
            }
            return v;
        }

        /**
         * The number at {@code path}.{@code key} as {@link ConfigReader#number} reads it, or null with a problem there
         * when it is above {@code max}: beyond anything a fleet has, a mistake of unit or of digits, and beyond where the
         * optimizer's arithmetic keeps its certificate (a demand of 1e200 req/s overflowed it, a TTFT of 1e15 ms left it
         * no solution).
         */
        private Double number(Mapping m, String path, String key, Double dflt, double max, String unit) {
            Double v = number(m, path, key, dflt);
            if (v != null && v > max && !v.isInfinite()) {
                r.problem(YamlTree.child(path, key), v + " (expected: at most " + String.format(java.util.Locale.ROOT,
                        "%.0e", max).replace("e+0", "e") + " " + unit + ")");
                return null;
            }
            return v;
        }

        // ---- paths and lines ----

        /** Maps an index into a built list (entries that failed are missing) back to the file's index. */
        private String yamlPath(String path) {
            Matcher m = LIST_INDEX.matcher(path);
            if (!m.find()) {
                return path;
            }
            List<Integer> built = yamlIndex.get(m.group(1));
            int i = Integer.parseInt(m.group(2));
            if (built == null || i >= built.size()) {
                return path;
            }
            return m.group(1) + "[" + built.get(i) + "]" + path.substring(m.end());
        }

        /** True when the node at {@code path}, or its last key, names an entry that failed to load. */
        private boolean refersToFailedEntry(String path) {
            if (failedNames.isEmpty()) {
                return false;
            }
            Located at = r.located(path);
            if (at != null && at.node() instanceof Scalar s && failedNames.contains(s.text())) {
                return true;
            }
            String last = path.substring(path.lastIndexOf('.') + 1);
            return failedNames.contains(last);
        }
    }

    @FunctionalInterface
    private interface EntryReader<T> {
        T read(Mapping m, String path);
    }

    @FunctionalInterface
    private interface ItemListener {
        void item(int index, boolean ok, Mapping m);
    }

}
