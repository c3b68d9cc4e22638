package dev.sextant.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sextant.config.ConfigProblem;
import dev.sextant.config.ConfigReader;
import dev.sextant.config.TopologyEmbedding;
import dev.sextant.config.TopologyLoader;
import dev.sextant.config.YamlTree;
import dev.sextant.config.YamlTree.Mapping;
import dev.sextant.config.YamlTree.Node;
import dev.sextant.config.YamlTree.Scalar;
import dev.sextant.config.YamlTree.Sequence;
import dev.sextant.topology.Engine;
import dev.sextant.topology.EngineCluster;
import dev.sextant.topology.GatewayCluster;
import dev.sextant.topology.HardwareKind;
import dev.sextant.topology.LatencyProfile;
import dev.sextant.topology.ParametricProfile;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Reads a scenario YAML file (schema in {@code docs/evaluation.md}). The topology is either embedded
 * under {@code topology:}, read by the control plane's {@link TopologyLoader} with a topology file's keys and checks
 * (engines may add {@code hardware:} and {@code metrics:}, and leave out {@code endpoint} and
 * {@code capacity_rps}/{@code profile}, which are then derived from the hardware), or generated from a {@code fleet:}
 * block for large fleets.
 */
final class ScenarioLoader {
    /*
     * Ranges. Every number of a scenario is finite, and the ones that set how much a run simulates are bounded, so
     * that no file makes the simulator run out of memory or run for years: a file with a mistake in it (a step of
     * 1e15 ms, a sample every nanosecond, a burst of two billion requests) is refused at its line instead. The
     * bounds are far beyond any fleet the simulator is for (large-fleet.yaml: 1,024 engines, 30 minutes, about a
     * million requests), not tuned to the examples.
     */
    /** Longest traffic a run simulates, s: a week. */
    static final double MAX_DURATION_S = 7 * 86_400;
    /** Most samples of the series over the traffic (sample_s is at least duration_s over this). */
    static final double MAX_SAMPLES = 100_000;
    /** Shortest sample, scrape, solve or controller period, s. */
    static final double MIN_PERIOD_S = 0.1;
    /** Most requests a run's demand may ask for (Σ demand_rps × duration_s): a hundred times large-fleet's. */
    static final double MAX_REQUESTS = 100_000_000;
    /** The most arrivals a run may draw before thinning (see {@code candidateBound}): a minute or two of drawing. */
    static final double MAX_CANDIDATES = 1_000_000_000;
    /** Most tokens in a prompt, an answer or a system prompt: the longest context windows there are. */
    static final double MAX_TOKENS = 10_000_000;
    /** Longest a step, a token's prefill or a sequence's decode may take, ms: an hour. */
    static final double MAX_STEP_MS = 3_600_000;
    /** Most engines, gateway clusters or engine clusters a fleet block may generate. */
    static final double MAX_FLEET = 100_000;
    /** Most of anything else counted: sequences in a batch, system prompts, requests in a burst, models. */
    static final double MAX_COUNT = 1_000_000;
    /** Largest factor of a slow-down, a surge or a burst's shape. */
    static final double MAX_FACTOR = 1_000;

    private final ConfigReader reader;
    /** The file's mapping as read, for the parts the production loaders read (the topology). */
    private final Mapping yaml;

    private ScenarioLoader(ConfigReader reader, Mapping yaml) {
        this.reader = reader;
        this.yaml = yaml;
    }

    /** Loads {@code path}; messages name it as given. */
    static Scenario load(Path path) throws ScenarioException {
        return read(ConfigReader.read(path));
    }

    /** Loads a scenario from YAML text, {@code name} standing for the file in messages. */
    static Scenario parse(String name, String yaml) throws ScenarioException {
        return read(ConfigReader.of(yaml, name));
    }

    /**
     * Reads the file with the one config reader (anchors, aliases and merge keys; a duplicate key or a tab refused,
     * at its line), then the scenario's fields from a Jackson view of the tree.
     */
    private static Scenario read(ConfigReader r) throws ScenarioException {
        Mapping root = r.root("a scenario: a mapping with topology or fleet, workload, duration_s, …", false);
        if (root == null || !r.ok()) {
            throw new ScenarioException(r.sorted());
        }
        return new ScenarioLoader(r, root).parse(json(root));
    }

    /** The tree as Jackson nodes, for the schema below; numbers keep their value, every other scalar its text. */
    private static JsonNode json(Node n) {
        JsonNodeFactory f = JsonNodeFactory.instance;
        if (n instanceof Mapping m) {
            ObjectNode o = f.objectNode();
            m.entries().forEach((k, e) -> o.set(k, json(e.value())));
            return o;
        }
        if (n instanceof Sequence s) {
            ArrayNode a = f.arrayNode();
            s.items().forEach(i -> a.add(json(i)));
            return a;
        }
        Scalar s = (Scalar) n;
        return switch (s.kind()) {
            case INTEGER -> Math.abs(s.number()) < 1e15 ? f.numberNode((long) s.number()) : f.numberNode(s.number());
            case FLOAT -> f.numberNode(s.number());
            case BOOLEAN -> f.booleanNode(List.of("true", "yes", "on", "y").contains(s.text().toLowerCase(Locale.ROOT)));
            case NULL -> f.nullNode();
            default -> f.textNode(s.text());
        };
    }

    /** A problem of the field at {@code field} (the file's own path, {@code topology.engines[0].hardware}), at its line. */
    private ScenarioException error(String field, String message) {
        return new ScenarioException(List.of(reader.at(field.equals("(root)") ? "" : field, message)));
    }

    private double num(JsonNode n, String key, String path, double dflt) throws ScenarioException {
        JsonNode v = n == null ? null : n.get(key);
        if (v == null || v.isNull()) {
            return dflt;
        }
        if (!v.isNumber()) {
            throw error(path + key, "'" + v.asText() + "' (expected: a number)");
        }
        if (!Double.isFinite(v.asDouble())) {
            throw error(path + key, v.asDouble() + " (expected: a finite number)");
        }
        return v.asDouble();
    }

    /** {@link #num}, refused unless in [lo, hi]. */
    private double num(JsonNode n, String key, String path, double dflt, double lo, double hi)
            throws ScenarioException {
        return within(num(n, key, path, dflt), lo, hi, path + key);
    }

    /** A whole number in [lo, hi] at {@code key} ({@code dflt} when absent). */
    private int count(JsonNode n, String key, String path, int dflt, double lo, double hi) throws ScenarioException {
        return whole(num(n, key, path, dflt), lo, hi, path + key);
    }

    /** {@code v}, refused at {@code field} unless a whole number in [lo, hi]. */
    private int whole(double v, double lo, double hi, String field) throws ScenarioException {
        if (v != Math.rint(v)) {
            throw error(field, shownNumber(v) + " (expected: a whole number)");
        }
        return (int) within(v, lo, hi, field);
    }

    /** {@code v}, refused at {@code field} unless in [lo, hi]. */
    private double within(double v, double lo, double hi, String field) throws ScenarioException {
        if (!(v >= lo && v <= hi)) {
            throw error(field, shownNumber(v) + " (expected: " + shownNumber(lo) + " to " + shownNumber(hi) + ")");
        }
        return v;
    }

    private static String shownNumber(double v) {
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? String.format(Locale.ROOT, "%,d", (long) v)
                : String.valueOf(v);
    }

    private double req(JsonNode n, String key, String path) throws ScenarioException {
        double v = num(n, key, path, Double.NaN);
        if (Double.isNaN(v)) {
            throw error(path + key, "missing (expected: a number)");
        }
        return v;
    }

    private String str(JsonNode n, String key, String path, String dflt) throws ScenarioException {
        JsonNode v = n == null ? null : n.get(key);
        if (v == null || v.isNull()) {
            if (dflt == null) {
                throw error(path + key, "missing (expected: a string)");
            }
            return dflt;
        }
        return v.asText();
    }

    private Scenario parse(JsonNode root) throws ScenarioException {
        if (root == null || !root.isObject()) {
            throw error("(root)", "not a mapping (expected: a scenario)");
        }
        part(() -> {
            known(root, "", ROOT_KEYS);
            return null;
        }, null);
        String name = str(root, "name", "", Path.of(reader.source()).getFileName().toString()
                .replaceFirst("\\.ya?ml$", ""));
        String description = str(root, "description", "", "").trim();
        // each part on its own, so that a file's problems are said together: a part's first problem, then the next
        // part's; a part that others need (the topology, for the faults) skips them when wrong
        Map<String, EngineParams> hw = part(() -> hardware(object(root, "hardware", "")), null);
        Map<String, Scenario.ClassWorkload> wl = new LinkedHashMap<>();
        JsonNode w = part(() -> {
            JsonNode o = object(root, "workload", "");
            known(o, "workload", WORKLOAD_KEYS);
            return o;
        }, null);
        Scenario.ClassWorkload builtIn = new Scenario.ClassWorkload(4, 20_000, 1000, 100, 200);
        Scenario.ClassWorkload dflt = part(() -> classWorkload(object(w, "default", "workload."), "workload.default.",
                builtIn), builtIn);
        JsonNode classes = part(() -> object(w, "classes", "workload."), null);
        if (classes != null) {
            for (Map.Entry<String, JsonNode> e : classes.properties()) {
                Scenario.ClassWorkload cw = part(() -> classWorkload(e.getValue(), "workload.classes." + e.getKey()
                        + ".", dflt), null);
                if (cw != null) {
                    wl.put(e.getKey(), cw);
                }
            }
        }
        List<String> engineHardware = new ArrayList<>();
        List<Boolean> engineMetrics = new ArrayList<>();
        Topology topology = null;
        if (!root.has("fleet") && !root.has("topology")) {
            record("topology", "missing (expected: a topology mapping or a fleet block)");
        } else if (hw != null) {
            topology = part(() -> root.has("fleet")
                    ? new FleetGenerator(this).generate(root.get("fleet"), hw, dflt, engineHardware)
                    : topology(hw, wl, dflt, engineHardware, engineMetrics), null);
            if (root.has("fleet")) {
                engineHardware.forEach(h -> engineMetrics.add(true));
            }
        }
        String profiles = str(root, "profiles", "", "derived");
        if (!profiles.equals("measured") && !profiles.equals("derived")) {
            record("profiles", "'" + profiles + "' (expected one of [derived, measured])");
        }
        JsonNode a = part(() -> {
            JsonNode o = object(root, "arrivals", "");
            known(o, "arrivals", ARRIVALS_KEYS);
            return o;
        }, null);
        Scenario.Arrivals da = part(() -> arrivals(object(a, "default", "arrivals."), "arrivals.default."), null);
        JsonNode byGateway = part(() -> object(a, "gateways", "arrivals."), null);
        Scenario.Control control = part(() -> control(object(root, "control", "")), null);
        JsonNode l = part(() -> object(root, "legacy", ""), null);
        Scenario.LegacyParams legacy = part(() -> legacy(l), null);
        List<Double> sweep = part(() -> gainSweep(l), List.of());
        List<String> policies = new ArrayList<>();
        if (root.has("policies") && !root.get("policies").isArray()) {
            record("policies", shown(root.get("policies")) + " (expected: a list of policies)");
        } else if (root.has("policies")) {
            root.get("policies").forEach(p -> policies.add(p.asText()));
        } else {
            policies.addAll(SimPolicies.DEFAULT);
        }
        for (int i = 0; i < policies.size(); i++) {
            if (!SimPolicies.ALL.contains(policies.get(i))) {
                record("policies[" + i + "]", "unknown policy '" + policies.get(i) + "' (expected one of "
                        + SimPolicies.ALL + ")");
            } else if (policies.subList(0, i).contains(policies.get(i))) {
                record("policies[" + i + "]", "'" + policies.get(i) + "' twice (expected: each policy once)");
            }
        }
        Double duration = part(() -> 1000 * within(positive(req(root, "duration_s", ""), "duration_s"), 0,
                MAX_DURATION_S, "duration_s"), null);
        Double clientTimeout = part(() -> 1000 * positive(num(root, "client_timeout_s", "", 60, 0, 86_400),
                "client_timeout_s"), null);
        double shortestSample = Math.max(MIN_PERIOD_S, duration == null ? 0 : duration / 1000 / MAX_SAMPLES);
        Double sample = part(() -> 1000 * num(root, "sample_s", "", 10, shortestSample, MAX_DURATION_S), null);
        List<Scenario.Fault> faults = null;
        List<Scenario.Arrivals> arrivals = new ArrayList<>();
        List<String> shapeFields = new ArrayList<>();
        if (topology != null) {
            Topology t = topology;
            faults = part(() -> faults(root.get("faults"), t), null);
            for (GatewayCluster g : topology.gatewayClusters()) {
                JsonNode n = byGateway == null ? null : byGateway.get(g.id());
                String field = n == null ? "arrivals.default." : "arrivals.gateways." + g.id() + ".";
                arrivals.add(n == null ? da : part(() -> arrivals(n, field), null));
                shapeFields.add(field);
            }
            if (duration != null) {
                requestBound(topology, duration, arrivals, shapeFields, faults);
            }
            // a shape or a workload of a misspelt id would otherwise be left out: a run of another fleet
            known(byGateway, "arrivals.gateways", "gateway cluster",
                    topology.gatewayClusters().stream().map(GatewayCluster::id).toList());
            known(classes, "workload.classes", "class", topology.classes().stream().map(TrafficClass::id).toList());
        }
        if (!problems.isEmpty()) {
            List<ConfigProblem> sorted = new ArrayList<>(problems);
            sorted.sort(java.util.Comparator.comparingInt(ConfigProblem::line));
            throw new ScenarioException(sorted);
        }
        if (profiles.equals("measured")) {
            topology = measured(topology, engineHardware, hw, wl, dflt);
        }
        List<EngineParams> hardware = new ArrayList<>();
        for (String h : engineHardware) {
            hardware.add(hw.get(h));
        }
        List<Scenario.ClassWorkload> workload = new ArrayList<>();
        for (TrafficClass c : topology.classes()) {
            workload.add(wl.getOrDefault(c.id(), dflt));
        }
        return new Scenario(name, description, topology, hardware, workload, arrivals, duration, clientTimeout,
                control, faults, policies, legacy, sweep, sample, engineMetrics);
    }

    /**
     * Refuses a run that asks for more than {@link #MAX_REQUESTS} requests: the demand over {@code duration_s}, then
     * what each gateway's arrival shape, each demand surge and each request burst add to it, each counted at most (a
     * surge at the largest multiplier of its gateways' shapes, a burst whenever it comes), so that none of them gets a
     * run past the bound; the field that takes the count past it is named. A workload shift changes the size of the
     * requests, not how many there are.
     */
    private void requestBound(Topology t, double durationMs, List<Scenario.Arrivals> arrivals, List<String> shapeFields,
                              List<Scenario.Fault> faults) {
        List<GatewayCluster> gateways = t.gatewayClusters();
        double[] rps = new double[gateways.size()];
        double perSecond = 0;
        for (int g = 0; g < rps.length; g++) {
            for (double r : t.demandRps().getOrDefault(gateways.get(g).id(), Map.of()).values()) {
                rps[g] += r;
            }
            perSecond += rps[g];
        }
        double total = perSecond * durationMs / 1000;
        if (total > MAX_REQUESTS) {
            record("duration_s", shownNumber(durationMs / 1000) + " s at " + shownNumber(Math.round(perSecond))
                    + " req/s of demand: about " + shownNumber(Math.round(total))
                    + " requests (expected: at most " + shownNumber(MAX_REQUESTS) + ")");
            return;
        }
        if (faults == null || arrivals.contains(null)) {
            return; // said already
        }
        for (int g = 0; g < rps.length; g++) {
            Scenario.Arrivals a = arrivals.get(g);
            total += rps[g] * a.excessMs(durationMs) / 1000;
            if (total > MAX_REQUESTS) {
                String key = a.shape() == Scenario.Shape.DIURNAL ? "amplitude" : "factor";
                tooMany(shapeFields.get(g) + key, shownNumber(a.factor()) + " at " + gateways.get(g).id(), total);
                return;
            }
        }
        for (int i = 0; i < faults.size(); i++) {
            Scenario.Fault f = faults.get(i);
            if (f.kind() == Scenario.FaultKind.REQUEST_BURST) {
                total += f.burst().requests();
                if (total > MAX_REQUESTS) {
                    tooMany("faults[" + i + "].requests", shownNumber(f.burst().requests()), total);
                    return;
                }
            } else if (f.kind() == Scenario.FaultKind.DEMAND_SURGE && f.factor() > 1) {
                double withinMs = Math.max(0, Math.min(f.atMs() + f.durationMs(), durationMs) - f.atMs());
                for (int g = 0; g < rps.length; g++) {
                    if (f.reaches(g)) {
                        total += (f.factor() - 1) * arrivals.get(g).maxMultiplier() * rps[g] * withinMs / 1000;
                    }
                }
                if (total > MAX_REQUESTS) {
                    tooMany("faults[" + i + "].factor", shownNumber(f.factor()) + " for "
                            + shownNumber(withinMs / 1000) + " s", total);
                    return;
                }
            }
        }
        candidateBound(durationMs, arrivals, rps, faults);
    }

    /**
     * Refuses a run whose arrivals would be drawn more than {@link #MAX_CANDIDATES} times. Each gateway's arrivals are
     * drawn at its peak rate (its largest shape multiplier times its largest surge) for the whole run and thinned to
     * the rate of the moment, so a short surge of ×1,000 costs a thousand draws per arrival for the whole run, within
     * the bound on requests; counted here at most (every request a new conversation), the surge that sets the peak is
     * named.
     */
    private void candidateBound(double durationMs, List<Scenario.Arrivals> arrivals, double[] rps,
                                List<Scenario.Fault> faults) {
        double candidates = 0;
        for (int g = 0; g < rps.length; g++) {
            candidates += rps[g] * arrivals.get(g).maxMultiplier() * Scenario.Fault.peakSurge(faults, g) * durationMs
                    / 1000;
        }
        double largest = 1;
        int largestAt = -1;
        for (int i = 0; i < faults.size(); i++) {
            Scenario.Fault f = faults.get(i);
            if (f.kind() == Scenario.FaultKind.DEMAND_SURGE && f.factor() > largest) {
                largest = f.factor();
                largestAt = i;
            }
        }
        if (candidates > MAX_CANDIDATES && largestAt >= 0) {
            record("faults[" + largestAt + "].factor", shownNumber(largest) + ": arrivals are drawn at the peak rate"
                    + " for the whole run, about " + shownNumber(Math.round(candidates)) + " draws (expected: at most "
                    + shownNumber(MAX_CANDIDATES) + "; a shorter run or a lower demand or factor)");
        }
    }

    /** Records that {@code field}, {@code what} it asks, takes the run's requests to {@code total}, past the bound. */
    private void tooMany(String field, String what, double total) {
        record(field, what + ": about " + shownNumber(Math.round(total)) + " requests over the run with the demand"
                + " and the shapes, surges and bursts before it (expected: at most " + shownNumber(MAX_REQUESTS) + ")");
    }

    /** Problems of the parts read so far (see {@link #part}). */
    private final List<ConfigProblem> problems = new ArrayList<>();

    /** One part of a scenario that stops at its first problem: {@code fallback}, the problem kept, when it has one. */
    private <T> T part(Part<T> p, T fallback) {
        try {
            return p.read();
        } catch (ScenarioException e) {
            problems.addAll(e.problems());
            return fallback;
        }
    }

    /** Records a problem of the field at {@code field}, at its line, among the parts' (see {@link #part}). */
    private void record(String field, String message) {
        problems.addAll(error(field, message).problems());
    }

    /** A part of the scenario's reading (see {@link #part}). */
    @FunctionalInterface
    private interface Part<T> {
        T read() throws ScenarioException;
    }

    /** The {@code control} block: the simulated control plane's periods and delays. */
    private Scenario.Control control(JsonNode c) throws ScenarioException {
        known(c, "control", CONTROL_KEYS);
        Scenario.Control d = Scenario.Control.DEFAULT;
        Scenario.Control control = new Scenario.Control(
                1000 * num(c, "scrape_s", "control.", d.scrapeMs() / 1000),
                1000 * num(c, "signal_delay_s", "control.", d.signalDelayMs() / 1000),
                1000 * num(c, "solve_s", "control.", d.solveMs() / 1000),
                1000 * num(c, "propagation_s", "control.", d.propagationMs() / 1000),
                1000 * num(c, "health_check_s", "control.", d.healthCheckMs() / 1000),
                1000 * num(c, "connect_timeout_s", "control.", d.connectTimeoutMs() / 1000));
        within(control.scrapeMs() / 1000, MIN_PERIOD_S, MAX_DURATION_S, "control.scrape_s");
        within(control.solveMs() / 1000, MIN_PERIOD_S, MAX_DURATION_S, "control.solve_s");
        within(control.signalDelayMs() / 1000, 0, MAX_DURATION_S, "control.signal_delay_s");
        within(control.propagationMs() / 1000, 0, MAX_DURATION_S, "control.propagation_s");
        within(control.healthCheckMs() / 1000, MIN_PERIOD_S, MAX_DURATION_S, "control.health_check_s");
        positive(within(control.connectTimeoutMs() / 1000, 0, MAX_DURATION_S, "control.connect_timeout_s"),
                "control.connect_timeout_s");
        return control;
    }

    /** The {@code legacy} block: the legacy feedback controller's gain, period, smoothing and weight floor. */
    private Scenario.LegacyParams legacy(JsonNode l) throws ScenarioException {
        known(l, "legacy", LEGACY_KEYS);
        Scenario.LegacyParams d = Scenario.LegacyParams.DEFAULT;
        Scenario.LegacyParams p = new Scenario.LegacyParams(positive(num(l, "gain", "legacy.", d.gain()), "legacy.gain"),
                1000 * num(l, "period_s", "legacy.", d.periodMs() / 1000, MIN_PERIOD_S, MAX_DURATION_S),
                num(l, "smoothing", "legacy.", d.smoothing()), num(l, "min_weight", "legacy.", d.minWeight()));
        if (!(p.smoothing() > 0 && p.smoothing() <= 1)) {
            throw error("legacy.smoothing", p.smoothing() + " (expected: in (0, 1])");
        }
        if (!(p.minWeight() > 0 && p.minWeight() <= 1)) {
            throw error("legacy.min_weight", p.minWeight() + " (expected: in (0, 1])");
        }
        return p;
    }

    /** {@code legacy.gain_sweep}: the gains the legacy controller also runs with, each > 0. */
    private List<Double> gainSweep(JsonNode l) throws ScenarioException {
        List<Double> sweep = new ArrayList<>();
        if (l == null || !l.has("gain_sweep")) {
            return sweep;
        }
        JsonNode g = l.get("gain_sweep");
        if (!g.isArray()) {
            throw error("legacy.gain_sweep", shown(g) + " (expected: a list of gains)");
        }
        for (int i = 0; i < g.size(); i++) {
            if (!g.get(i).isNumber()) {
                throw error("legacy.gain_sweep[" + i + "]", "'" + g.get(i).asText() + "' (expected: a number)");
            }
            sweep.add(positive(g.get(i).asDouble(), "legacy.gain_sweep[" + i + "]"));
        }
        return sweep;
    }

    /** The mapping at {@code key} of {@code parent} (null when either is absent), refused when it is not one. */
    private JsonNode object(JsonNode parent, String key, String path) throws ScenarioException {
        return mapping(parent == null ? null : parent.get(key), path + key);
    }

    /** {@code n}, read at {@code field}: null when absent, refused when it is there and not a mapping. */
    private JsonNode mapping(JsonNode n, String field) throws ScenarioException {
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isObject()) {
            throw error(field, shown(n) + " (expected: a mapping)");
        }
        return n;
    }

    /**
     * Refuses an item of a list of mappings, or a value of a mapping of mappings, that is not a mapping; {@code path}
     * is its own, with the trailing dot the field readers take ({@code faults[0].}).
     */
    void entry(JsonNode n, String path) throws ScenarioException {
        String field = path.substring(0, path.length() - 1);
        if (mapping(n, field) == null) {
            throw error(field, "empty (expected: a mapping)");
        }
    }

    /** A value as a problem shows it: a scalar as written, quoted; a list or a mapping by its kind. */
    private static String shown(JsonNode n) {
        return n.isArray() ? "a list" : n.isObject() ? "a mapping" : "'" + n.asText() + "'";
    }

    /** {@code v}, refused at {@code field} unless it is a finite number > 0. */
    private double positive(double v, String field) throws ScenarioException {
        if (!(v > 0) || Double.isInfinite(v)) {
            throw error(field, v + " (expected: > 0)");
        }
        return v;
    }

    /** {@code v}, refused at {@code field} unless it is a finite number ≥ 0. */
    private double atLeastZero(double v, String field) throws ScenarioException {
        if (!(v >= 0) || Double.isInfinite(v)) {
            throw error(field, v + " (expected: >= 0)");
        }
        return v;
    }

    /** The keys of the {@code control} block. */
    static final List<String> CONTROL_KEYS = List.of("scrape_s", "signal_delay_s", "solve_s", "propagation_s",
            "health_check_s", "connect_timeout_s");
    /**
     * The keys of each mapping of a scenario file (evaluation.md, "Scenario file"): a key the simulator does not read is
     * refused at its line, so that a misspelt optional key (`capcity_rps`, `shap`) is not silently a run of another fleet.
     */
    static final List<String> ROOT_KEYS = List.of("name", "description", "duration_s", "client_timeout_s", "sample_s",
            "profiles", "policies", "hardware", "workload", "arrivals", "control", "legacy", "topology", "fleet", "faults");
    static final List<String> HARDWARE_KEYS = List.of("step_ms", "prefill_ms_per_token", "decode_ms_per_seq", "max_seqs",
            "kv_cache_tokens", "chunk_tokens");
    static final List<String> WORKLOAD_KEYS = List.of("default", "classes");
    static final List<String> CLASS_WORKLOAD_KEYS = List.of("turns_mean", "think_s", "first_prompt_tokens",
            "new_tokens_per_turn", "output_tokens", "system_prompt_tokens", "system_prompts", "keyed_share");
    static final List<String> ARRIVALS_KEYS = List.of("default", "gateways");
    static final List<String> ARRIVAL_KEYS = List.of("shape", "factor", "period_s", "burst_s", "amplitude");
    static final List<String> LEGACY_KEYS = List.of("gain", "period_s", "smoothing", "min_weight", "gain_sweep");
    static final List<String> FAULT_KEYS = List.of("kind", "at_s", "duration_s", "engines", "engine_cluster", "gateway",
            "factor", "prompt_factor", "class", "requests", "prompt_tokens", "output_tokens");
    static final List<String> FLEET_KEYS = List.of("regions", "engines_per_cluster", "models", "hardware", "rtt_ms",
            "residency_share", "demand_rps_per_gateway", "headroom", "affinity_discount_ms");
    static final List<String> REGION_KEYS = List.of("id", "continent", "gateways", "engine_clusters");
    static final List<String> RTT_KEYS = List.of("same_region", "same_continent", "other");

    /**
     * Refuses a key of mapping {@code n} that is not one of {@code keys}; {@code path} is the mapping's, with or without
     * the trailing dot the field readers take ("" for the root).
     */
    void known(JsonNode n, String path, List<String> keys) throws ScenarioException {
        if (n == null || !n.isObject()) {
            return;
        }
        String at = path.isEmpty() || path.endsWith(".") ? path : path + ".";
        for (java.util.Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!keys.contains(k)) {
                throw error(at + k, "unknown key '" + k + "' (expected one of " + keys + ")");
            }
        }
    }

    /** Records each key of mapping {@code n} at {@code path} that is not one of the topology's {@code ids} of a {@code kind}. */
    private void known(JsonNode n, String path, String kind, List<String> ids) {
        if (n == null) {
            return;
        }
        for (String k : (Iterable<String>) n::fieldNames) {
            if (!ids.contains(k)) {
                record(path + "." + k, "unknown " + kind + " '" + k + "' (expected one of " + ids + ")");
            }
        }
    }

    /**
     * The topology with every engine's profile measured on the simulated engine (see {@link Calibration}),
     * once per (hardware, workload, capacity).
     */
    private static Topology measured(Topology t, List<String> engineHardware, Map<String, EngineParams> hw,
                                     Map<String, Scenario.ClassWorkload> wl, Scenario.ClassWorkload dflt) {
        Map<String, LatencyProfile> done = new LinkedHashMap<>();
        List<Engine> engines = new ArrayList<>();
        for (int j = 0; j < t.engines().size(); j++) {
            Engine e = t.engines().get(j);
            Scenario.ClassWorkload w = dflt;
            for (TrafficClass c : t.classes()) {
                if (e.serves(c.model()) && wl.containsKey(c.id())) {
                    w = wl.get(c.id());
                    break;
                }
            }
            EngineParams h = hw.get(engineHardware.get(j));
            String key = engineHardware.get(j) + "|" + w + "|" + e.capacityRps();
            LatencyProfile p = done.get(key);
            if (p == null) {
                p = Calibration.measure(h, w, e.capacityRps(), 7);
                done.put(key, p);
            }
            engines.add(e.rated(e.capacityRps(), p, e.health()));
        }
        return t.withEngines(engines);
    }

    /**
     * The {@code hardware} kinds by name, {@code default} among them. A kind with a problem is recorded (see
     * {@link #part}) and kept under its name with the default's parameters, so that the topology naming it is still
     * checked and no engine is said to name an unknown kind because its kind was wrong.
     */
    private Map<String, EngineParams> hardware(JsonNode n) {
        Map<String, EngineParams> out = new LinkedHashMap<>();
        EngineParams builtIn = new EngineParams(8, 0.05, 0.25, 64, 400_000, 2048);
        out.put("default", builtIn);
        if (n == null) {
            return out;
        }
        for (Map.Entry<String, JsonNode> e : n.properties()) {
            String p = "hardware." + e.getKey() + ".";
            JsonNode h = e.getValue();
            out.put(e.getKey(), part(() -> {
                entry(h, p);
                known(h, p, HARDWARE_KEYS);
                try {
                    return new EngineParams(within(req(h, "step_ms", p), 0, MAX_STEP_MS, p + "step_ms"),
                            within(req(h, "prefill_ms_per_token", p), 0, MAX_STEP_MS, p + "prefill_ms_per_token"),
                            within(req(h, "decode_ms_per_seq", p), 0, MAX_STEP_MS, p + "decode_ms_per_seq"),
                            whole(req(h, "max_seqs", p), 1, MAX_COUNT, p + "max_seqs"),
                            (long) within(req(h, "kv_cache_tokens", p), 1, 1e15, p + "kv_cache_tokens"),
                            count(h, "chunk_tokens", p, 2048, 1, MAX_TOKENS));
                } catch (IllegalArgumentException ex) {
                    throw error("hardware." + e.getKey(), ex.getMessage());
                }
            }, builtIn));
        }
        return out;
    }

    private Scenario.ClassWorkload classWorkload(JsonNode n, String p, Scenario.ClassWorkload d)
            throws ScenarioException {
        mapping(n, p.substring(0, p.length() - 1));
        known(n, p, CLASS_WORKLOAD_KEYS);
        Scenario.ClassWorkload w = new Scenario.ClassWorkload(num(n, "turns_mean", p, d.turnsMean(), 1, MAX_COUNT),
                1000 * num(n, "think_s", p, d.thinkMeanMs() / 1000, 0, MAX_DURATION_S),
                num(n, "first_prompt_tokens", p, d.firstPromptTokens(), 1, MAX_TOKENS),
                num(n, "new_tokens_per_turn", p, d.newTokensPerTurn(), 1, MAX_TOKENS),
                num(n, "output_tokens", p, d.outputTokens(), 1, MAX_TOKENS),
                num(n, "system_prompt_tokens", p, d.systemPromptTokens(), 0, MAX_TOKENS),
                count(n, "system_prompts", p, d.systemPrompts(), 1, MAX_COUNT), num(n, "keyed_share", p, d.keyedShare()));
        if (!(w.systemPromptTokens() >= 0)) {
            throw error(p + "system_prompt_tokens", w.systemPromptTokens() + " (expected: >= 0)");
        }
        if (w.systemPrompts() < 1) {
            throw error(p + "system_prompts", w.systemPrompts() + " (expected: an integer >= 1)");
        }
        if (!(w.keyedShare() >= 0 && w.keyedShare() <= 1)) {
            throw error(p + "keyed_share", w.keyedShare() + " (expected: in [0, 1])");
        }
        if (!(w.turnsMean() >= 1)) {
            throw error(p + "turns_mean", w.turnsMean() + " (expected: >= 1)");
        }
        if (!(w.firstPromptTokens() >= 1 && w.newTokensPerTurn() >= 1 && w.outputTokens() >= 1)) {
            throw error(p + "tokens", "(expected: first_prompt_tokens, new_tokens_per_turn, output_tokens >= 1)");
        }
        return w;
    }

    private Scenario.Arrivals arrivals(JsonNode n, String p) throws ScenarioException {
        if (n == null) {
            return Scenario.Arrivals.POISSON;
        }
        mapping(n, p.substring(0, p.length() - 1));
        known(n, p, ARRIVAL_KEYS);
        String shape = str(n, "shape", p, "poisson");
        return switch (shape) {
            case "poisson" -> Scenario.Arrivals.POISSON;
            case "bursty" -> {
                double f = num(n, "factor", p, 3, 1, MAX_FACTOR);
                double period = 1000 * positive(num(n, "period_s", p, 60, 0, MAX_DURATION_S), p + "period_s");
                double burst = 1000 * positive(num(n, "burst_s", p, 10, 0, MAX_DURATION_S), p + "burst_s");
                if (!(burst < period)) {
                    throw error(p + "burst_s", shownNumber(burst / 1000) + " (expected: less than period_s, "
                            + shownNumber(period / 1000) + ")");
                }
                yield new Scenario.Arrivals(Scenario.Shape.BURSTY, f, period, burst);
            }
            case "diurnal" -> {
                double f = num(n, "amplitude", p, 0.5);
                if (!(f >= 0 && f < 1)) {
                    throw error(p + "amplitude", f + " (expected: in [0, 1))");
                }
                yield new Scenario.Arrivals(Scenario.Shape.DIURNAL, f,
                        1000 * positive(num(n, "period_s", p, 600, 0, MAX_DURATION_S), p + "period_s"), 0);
            }
            default -> throw error(p + "shape", "'" + shape + "' (expected one of [poisson, bursty, diurnal])");
        };
    }

    /** Estimated uncached prompt tokens per request when later turns hit the cache. */
    static double uncachedPrompt(Scenario.ClassWorkload w) {
        return (w.firstPromptTokens() + (w.turnsMean() - 1) * w.newTokensPerTurn()) / w.turnsMean();
    }

    /**
     * Capacity and profile of an engine derived from its hardware: capacity = 85% of the saturation
     * throughput; idle TTFT = one step prefilling an average prompt beside half a batch; TBT of one
     * sequence, growing to a full batch's step at capacity.
     */
    static Engine derive(String id, String cluster, List<String> models, EngineParams h, Scenario.ClassWorkload w,
                         double capacity) {
        double prompt = uncachedPrompt(w);
        double cap = Double.isNaN(capacity) ? 0.85 * h.saturationRps(prompt, w.outputTokens()) : capacity;
        double tbt = h.stepMs() + h.decodeMsPerSeq();
        double ttft = h.stepMs() + h.prefillMsPerToken() * prompt + h.decodeMsPerSeq() * h.maxSeqs() / 2.0;
        // a full batch's step over a lone sequence's; at most the topology's bound, which no engine reaches
        double slope = Math.min(ParametricProfile.MAX_TBT_SLOPE, h.decodeMsPerSeq() * (h.maxSeqs() - 1) / tbt);
        LatencyProfile profile = new ParametricProfile(ttft, tbt, slope);
        return new Engine(id, cluster, "sim://" + id, models, cap, profile, 1.0);
    }

    /**
     * The scenario's {@code topology}, read by the production topology loader (docs/topology.md: the same keys and checks
     * as a topology file), except that an engine's {@code hardware} names one of the scenario's simulated kinds, which
     * rates it where it writes no {@code capacity_rps} or {@code profile} ({@link #derive}), it may say {@code metrics:
     * false} (no {@code /metrics}), and it needs no endpoint. The topology's own {@code hardware} (ratings) and
     * {@code retry_budget} are refused: the scenario's hardware is the simulated engines', and the simulated gateways
     * keep the default retry budget. Each engine's kind and metrics go into {@code engineHardware} and
     * {@code engineMetrics}, in the topology's order of engines.
     */
    private Topology topology(Map<String, EngineParams> hw, Map<String, Scenario.ClassWorkload> wl,
                              Scenario.ClassWorkload dflt, List<String> engineHardware, List<Boolean> engineMetrics)
            throws ScenarioException {
        YamlTree.Entry entry = yaml.entries().get("topology");
        if (!(entry.value() instanceof Mapping node)) {
            throw error("topology", YamlTree.shown(entry.value()) + " (expected: a topology mapping)");
        }
        // the model each class asks for, as written, to rate an engine by the workload of the classes it serves
        Map<String, String> modelOfClass = new LinkedHashMap<>();
        if (node.entries().get("classes") != null && node.entries().get("classes").value() instanceof Sequence cs) {
            for (Node c : cs.items()) {
                if (c instanceof Mapping m && m.entries().get("id") != null && m.entries().get("model") != null
                        && m.entries().get("id").value() instanceof Scalar id
                        && m.entries().get("model").value() instanceof Scalar model) {
                    modelOfClass.putIfAbsent(id.text(), model.text());
                }
            }
        }
        Map<String, String> hardwareOf = new LinkedHashMap<>();
        Map<String, Boolean> metricsOf = new LinkedHashMap<>();
        TopologyEmbedding scenario = new TopologyEmbedding() {
            @Override
            public List<String> refusedKeys() {
                return List.of("hardware", "retry_budget");
            }

            @Override
            public List<String> engineKeys() {
                return List.of("metrics");
            }

            @Override
            public Integer defaultOutputTokens() {
                return (int) Math.max(1, Math.round(dflt.outputTokens()));
            }

            @Override
            public String defaultEndpoint(String engineId) {
                return "sim://" + engineId;
            }

            @Override
            public HardwareKind rating(ConfigReader r, Mapping engine, String path, String id, List<String> models) {
                String kind = r.string(engine, path, "hardware", "default");
                Boolean metrics = r.bool(engine, path, "metrics", true);
                if (kind == null || metrics == null) {
                    return null;
                }
                if (!hw.containsKey(kind)) {
                    r.problem(YamlTree.child(path, "hardware"), "unknown hardware '" + kind + "' (expected one of "
                            + hw.keySet() + ")");
                    return null;
                }
                Scenario.ClassWorkload w = dflt;
                for (Map.Entry<String, String> c : modelOfClass.entrySet()) {
                    if (models.contains(c.getValue()) && wl.containsKey(c.getKey())) {
                        w = wl.get(c.getKey());
                        break;
                    }
                }
                hardwareOf.put(id, kind);
                metricsOf.put(id, metrics);
                EngineParams h = hw.get(kind);
                Scenario.ClassWorkload load = w;
                // rated as an engine of the kind, whatever the file's id and models (checked where the engine is
                // built, at their lines: an id with a control character once made this derivation throw); the batch
                // limit as the operator started the engine with it, the simulated hardware's
                return r.build(path, () -> {
                    Engine derived = derive("derived", "derived", List.of("derived"), h, load, Double.NaN);
                    return new HardwareKind(kind, derived.capacityRps(), derived.profile(), h.maxSeqs());
                });
            }
        };
        int before = reader.count();
        Topology t = TopologyLoader.embedded(reader, node, "topology", scenario);
        if (t == null) {
            throw new ScenarioException(reader.problems().subList(before, reader.count()));
        }
        for (Engine e : t.engines()) {
            engineHardware.add(hardwareOf.get(e.id()));
            engineMetrics.add(metricsOf.get(e.id()));
        }
        return t;
    }

    private List<Scenario.Fault> faults(JsonNode n, Topology t) throws ScenarioException {
        List<Scenario.Fault> out = new ArrayList<>();
        if (n == null) {
            return out;
        }
        if (!n.isArray()) {
            throw error("faults", shown(n) + " (expected: a list of faults)");
        }
        List<String> engineIds = t.engines().stream().map(Engine::id).toList();
        List<String> gatewayIds = t.gatewayClusters().stream().map(GatewayCluster::id).toList();
        List<String> clusterIds = t.engineClusters().stream().map(EngineCluster::id).toList();
        int i = 0;
        for (JsonNode f : n) {
            String p = "faults[" + i++ + "].";
            entry(f, p);
            known(f, p, FAULT_KEYS);
            String kindName = str(f, "kind", p, null);
            Scenario.FaultKind kind;
            try {
                kind = Scenario.FaultKind.valueOf(kindName.toUpperCase(java.util.Locale.ROOT).replace('-', '_'));
            } catch (IllegalArgumentException e) {
                throw error(p + "kind", "'" + kindName + "' (expected one of [engine_crash, engine_slowdown, "
                        + "engine_errors, partition, link_slowdown, control_plane_outage, control_plane_restart, "
                        + "demand_surge, request_burst, workload_shift])");
            }
            List<Integer> engines = new ArrayList<>();
            if (f.has("engines")) {
                for (JsonNode e : f.get("engines")) {
                    int idx = engineIds.indexOf(e.asText());
                    if (idx < 0) {
                        throw error(p + "engines", "unknown engine '" + e.asText() + "'");
                    }
                    engines.add(idx);
                }
            }
            String cluster = str(f, "engine_cluster", p, "");
            if (!cluster.isEmpty() && !clusterIds.contains(cluster)) {
                throw error(p + "engine_cluster", "unknown engine cluster '" + cluster + "' (expected one of "
                        + clusterIds + ")");
            }
            if (kind == Scenario.FaultKind.ENGINE_CRASH || kind == Scenario.FaultKind.ENGINE_SLOWDOWN
                    || kind == Scenario.FaultKind.ENGINE_ERRORS) {
                if (!cluster.isEmpty()) {
                    for (int j = 0; j < engineIds.size(); j++) {
                        if (t.engines().get(j).cluster().equals(cluster)) {
                            engines.add(j);
                        }
                    }
                }
                if (engines.isEmpty()) {
                    throw error(p + "engines", "none (expected: engines or engine_cluster)");
                }
            }
            if (kind == Scenario.FaultKind.PARTITION && cluster.isEmpty()) {
                throw error(p + "engine_cluster", "missing (expected: the engine cluster cut off)");
            }
            if (kind == Scenario.FaultKind.LINK_SLOWDOWN && cluster.isEmpty()) {
                throw error(p + "engine_cluster", "missing (expected: the engine cluster whose round trip grows)");
            }
            String gw = str(f, "gateway", p, "");
            int g = gw.isEmpty() ? -1 : gatewayIds.indexOf(gw);
            if (!gw.isEmpty() && g < 0) {
                throw error(p + "gateway", "unknown gateway cluster '" + gw + "' (expected one of " + gatewayIds + ")");
            }
            double factor = num(f, "factor", p, switch (kind) {
                case DEMAND_SURGE, WORKLOAD_SHIFT -> 2;
                case ENGINE_ERRORS -> 1;
                default -> 3;
            }, 0, MAX_FACTOR);
            if (!(factor > 0)) {
                throw error(p + "factor", factor + " (expected: > 0)");
            }
            if (kind == Scenario.FaultKind.ENGINE_ERRORS && factor > 1) {
                throw error(p + "factor", factor + " (expected: the fraction of requests answered with an error, in (0, 1])");
            }
            double promptFactor = kind == Scenario.FaultKind.WORKLOAD_SHIFT
                    ? num(f, "prompt_factor", p, 1, 0, MAX_FACTOR) : 1;
            if (!(promptFactor > 0) || Double.isInfinite(promptFactor)) {
                throw error(p + "prompt_factor", promptFactor + " (expected: > 0)");
            }
            Scenario.Burst burst = null;
            double duration;
            if (kind == Scenario.FaultKind.REQUEST_BURST) {
                if (g < 0) {
                    throw error(p + "gateway", "missing (expected: the gateway cluster the burst arrives at)");
                }
                String cls = str(f, "class", p, t.classes().get(0).id());
                int k = t.classes().stream().map(dev.sextant.topology.TrafficClass::id).toList().indexOf(cls);
                if (k < 0) {
                    throw error(p + "class", "unknown class '" + cls + "'");
                }
                int requests = count(f, "requests", p, 1, 1, MAX_COUNT);
                int prompt = count(f, "prompt_tokens", p, 1000, 1, MAX_TOKENS);
                int output = count(f, "output_tokens", p, 100, 1, MAX_TOKENS);
                burst = new Scenario.Burst(requests, k, prompt, output);
                duration = 1000 * num(f, "duration_s", p, 0, 0, MAX_DURATION_S);
            } else {
                duration = 1000 * within(req(f, "duration_s", p), 0, MAX_DURATION_S, p + "duration_s");
            }
            atLeastZero(duration / 1000, p + "duration_s");
            out.add(new Scenario.Fault(kind, 1000 * within(req(f, "at_s", p), 0, MAX_DURATION_S, p + "at_s"), duration,
                    engines, g,
                    cluster, factor, promptFactor, burst));
        }
        return out;
    }

    /** Field access for the fleet generator: a finite number in [lo, hi]. */
    double number(JsonNode n, String key, String path, double dflt, double lo, double hi) throws ScenarioException {
        return num(n, key, path, dflt, lo, hi);
    }

    /** Field access for the fleet generator: a whole number in [lo, hi]. */
    int wholeNumber(JsonNode n, String key, String path, int dflt, double lo, double hi) throws ScenarioException {
        return count(n, key, path, dflt, lo, hi);
    }

    /** Field access for the fleet generator: a string; {@code dflt} null for a required one. */
    String string(JsonNode n, String key, String path, String dflt) throws ScenarioException {
        return str(n, key, path, dflt);
    }

    ScenarioException fail(String field, String message) {
        return error(field, message);
    }
}
