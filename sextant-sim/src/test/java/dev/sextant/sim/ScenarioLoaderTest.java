package dev.sextant.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

class ScenarioLoaderTest {
    static final Path SCENARIOS = Path.of("..", "examples", "scenarios");

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "duration_s: 40|duration_s: -1|duration_s: -1.0 (expected: > 0)",
        "kind: engine_crash|kind: meteor|faults[0].kind: 'meteor'",
        "engines: [eu-1]}|engines: [nope]}|faults[0].engines: unknown engine 'nope'",
        "hardware: small}|hardware: tiny}|topology.engines[0].hardware: unknown hardware 'tiny'",
        "turns_mean: 3|turns_mean: 0.5|workload.default.turns_mean: 0.5 (expected: 1 to 1,000,000)",
        "turns_mean: 3|turns_mean: 3, keyed_share: 1.5|workload.default.keyed_share: 1.5 (expected: in [0, 1])",
        "turns_mean: 3|turns_mean: 3, system_prompts: 0|workload.default.system_prompts: 0 (expected: 1 to 1,000,000)",
        "turns_mean: 3|turns_mean: 3, system_prompts: 2.5|workload.default.system_prompts: 2.5 (expected: a whole number)",
        "turns_mean: 3|turns_mean: 3, system_prompt_tokens: -5|workload.default.system_prompt_tokens: -5 (expected: 0 to 10,000,000)",
        "new_tokens_per_turn: 50, output_tokens: 40}|new_tokens_per_turn: 50, output_tokens: 1e15}|workload.default.output_tokens: 1.0E15 (expected: 1 to 10,000,000)",
        "gateway: eu, engine_cluster: gpu-eu2|gateway: mars, engine_cluster: gpu-eu2|faults[2].gateway: unknown gateway cluster 'mars'",
        "kind: demand_surge, at_s: 20, duration_s: 8, factor: 3|kind: workload_shift, at_s: 20, duration_s: 8, prompt_factor: 0|faults[3].prompt_factor: 0.0 (expected: > 0)",
        "sample_s: 5|sample_s: 0|sample_s: 0 (expected: 0.1 to 604,800)",
        "sample_s: 5|sample_s: .nan|sample_s: NaN (expected: a finite number)",
        "duration_s: 40|duration_s: 1e7|duration_s: 10,000,000 (expected: 0 to 604,800)",
        "client_timeout_s: 20|client_timeout_s: -1|client_timeout_s: -1 (expected: 0 to 86,400)",
        "think_s: 2|think_s: -1|workload.default.think_s: -1 (expected: 0 to 604,800)",
        "propagation_s: 0.5|propagation_s: -1|control.propagation_s: -1 (expected: 0 to 604,800)",
        "signal_delay_s: 1|signal_delay_s: -1|control.signal_delay_s: -1 (expected: 0 to 604,800)",
        "scrape_s: 2|scrape_s: 0.000001|control.scrape_s: 1.0E-6 (expected: 0.1 to 604,800)",
        "health_check_s: 2|health_check_s: 0|control.health_check_s: 0 (expected: 0.1 to 604,800)",
        "legacy: {gain: 1.0, period_s: 2}|legacy: {gain: -1, period_s: 2}|legacy.gain: -1.0 (expected: > 0)",
        "legacy: {gain: 1.0, period_s: 2}|legacy: {gain: 1, period_s: 0}|legacy.period_s: 0 (expected: 0.1 to 604,800)",
        "legacy: {gain: 1.0, period_s: 2}|legacy: {gain: 1, smoothing: 2}|legacy.smoothing: 2.0 (expected: in (0, 1])",
        "legacy: {gain: 1.0, period_s: 2}|legacy: {gain: 1, gain_sweep: 2}|legacy.gain_sweep: '2' (expected: a list of gains)",
        "legacy: {gain: 1.0, period_s: 2}|legacy: [1]|legacy: a list (expected: a mapping)",
        "control: {scrape_s|control: 5↵x-control: {scrape_s|control: '5' (expected: a mapping)",
        "workload:|workload: 5↵x-workload:|workload: '5' (expected: a mapping)",
        // an item of a list of mappings, or a value of a mapping of mappings, that is no mapping is said as what it is
        "- {kind: engine_crash, at_s: 8, duration_s: 10, engines: [eu-1]}|- [1]|faulty.yaml:36: faults[0]: a list (expected: a mapping)",
        "- {kind: engine_crash, at_s: 8, duration_s: 10, engines: [eu-1]}|- ~|faulty.yaml:36: faults[0]: empty (expected: a mapping)",
        "small: {step_ms: 5,|small: 5↵  big: {step_ms: 5,|faulty.yaml:6: hardware.small: '5' (expected: a mapping)",
        // a bursty shape's mistake is said at the field that is wrong, not at its factor
        "control: {scrape_s|arrivals: {default: {shape: bursty, period_s: 0}}↵control: {scrape_s|faulty.yaml:9: arrivals.default.period_s: 0.0 (expected: > 0)",
        "control: {scrape_s|arrivals: {default: {shape: bursty, burst_s: 0}}↵control: {scrape_s|faulty.yaml:9: arrivals.default.burst_s: 0.0 (expected: > 0)",
        "control: {scrape_s|arrivals: {gateways: {eu: {shape: bursty, period_s: 30, burst_s: 30}}}↵control: {scrape_s|faulty.yaml:9: arrivals.gateways.eu.burst_s: 30 (expected: less than period_s, 30)",
        // an arrival shape or a workload of an id the topology does not have was left out: a run of another fleet
        "control: {scrape_s|arrivals: {gateways: {uss: {shape: bursty}}}↵control: {scrape_s|faulty.yaml:9: arrivals.gateways.uss: unknown gateway cluster 'uss' (expected one of [us, eu])",
        "workload:|workload:↵  classes: {caht: {turns_mean: 2}}|faulty.yaml:8: workload.classes.caht: unknown class 'caht' (expected one of [chat, chat-eu])",
        "at_s: 8,|at_s: -8,|faults[0].at_s: -8 (expected: 0 to 604,800)",
        "faults:|faults: {a: 1}↵x-faults:|faults: a mapping (expected: a list of faults)",
        "{step_ms: 5,|{step_ms: 1e15,|hardware.small.step_ms: 1.0E15 (expected: 0 to 3,600,000)",
        "max_seqs: 16,|max_seqs: 16.5,|hardware.small.max_seqs: 16.5 (expected: a whole number)",
        "us: {chat: 12}|us: {chat: 1e9}|duration_s: 40 s at 1,000,000,014 req/s of demand: about 40,000,000,560 requests (expected: at most 100,000,000)",
        "{id: m, output_tokens: 40}|{id: m, output_tokens: 3e9}|topology.models[0].output_tokens: 3e9 (expected: an integer from 1 to 10,000,000)",
        "kind: demand_surge, at_s: 20, duration_s: 8, factor: 3|kind: demand_surge, at_s: 20, duration_s: 8, factor: 1e6|faults[3].factor: 1,000,000 (expected: 0 to 1,000)",
        "{id: us-2, cluster: gpu-us, models: [m], hardware: small}|{id: us-2, cluster: gpu-us, models: [m], hardware: small, profile: {ttft_ms: 50, tbt_ms: 5, tbt_slope: 1e300}}|topology.engines[1].profile.tbt_slope: 1.0E300 (expected: at most 1000)",
        // the simulator's own reader ran these as another fleet: no residency, a round trip of 0 ms
        "residency: [eu-west, eu-central]|residency: eu-west|faulty.yaml:31: topology.classes[1].residency: 'eu-west' (expected: a list of strings)",
        "us: {gpu-us: 2,|us: {gpu-us: near,|faulty.yaml:20: topology.network_rtt_ms.us.gpu-us: 'near' (expected: a number)",
        // the topology is read by the production topology loader: its checks across entries and of endpoints hold in
        // a scenario, at the scenario's lines, and the topology's own hardware ratings are refused (a scenario's
        // hardware is the simulated kinds at its root)
        "{id: chat, model: m, priority: 0}|{id: chat, model: n, priority: 0}|faulty.yaml:30: topology.classes[0].model",
        "demand_rps:|hardware: {big: {capacity_rps: 9, profile: {ttft_ms: 9, tbt_ms: 9}}}↵  demand_rps:|faulty.yaml:32: topology.hardware: unknown key",
        "{id: us-1, cluster: gpu-us, models: [m], hardware: small}|{id: us-1, cluster: gpu-us, models: [m], hardware: small, endpoint: 'us-1:8000'}|faulty.yaml:25: topology.engines[0].endpoint: 'us-1:8000' (expected: an http://",
        "{id: us-2, cluster: gpu-us, models: [m], hardware: small}|{id: us-2, cluster: gpu-us, models: [m], hardware: small, metrics: sometimes}|faulty.yaml:26: topology.engines[1].metrics: 'sometimes' (expected: true or false)",
        // an engine's own id and models are checked where the engine is built, not by its rating: a tab in the id
        // once made the rating's derivation throw past the loader
        "{id: us-2, cluster: gpu-us, models: [m], hardware: small}|{id: \"us\\t2\", cluster: gpu-us, models: [m], hardware: small}|faulty.yaml:26: topology.engines[1].id: 'us\\u0009…' (expected: no control characters)",
        "{id: us-2, cluster: gpu-us, models: [m], hardware: small}|{id: us-2, cluster: gpu-us, models: [], hardware: small}|faulty.yaml:26: topology.engines[1]",
        "{id: us-2, cluster: gpu-us, models: [m], hardware: small}|{id: us-2, cluster: gpu-us, models: [m], hardware: small, max_num_seqs: 0}|faulty.yaml:26: topology.engines[1].max_num_seqs: 0 (expected: an integer from 1 to 1,000,000)",
    })
    void badField_isNamedWithTheFile(String from, String to, String message) {
        String yaml = SimulationTest.FAULTY.replaceFirst(java.util.regex.Pattern.quote(from),
                java.util.regex.Matcher.quoteReplacement(to.replace("↵", "\n"))); // ↵: a new line
        assertThat(yaml).isNotEqualTo(SimulationTest.FAULTY);
        assertThatThrownBy(() -> ScenarioLoader.parse("faulty.yaml", yaml))
                .isInstanceOf(ScenarioException.class)
                .hasMessageStartingWith("faulty.yaml:")
                .hasMessageContaining(message);
    }

    /**
     * What multiplies the demand counts in the bound on a run's requests, at most what it can add within the run: a
     * surge, a burst or an arrival shape took a run of 400,000 requests to hundreds of millions, for hours and GBs.
     * Each row: the edit to a scenario of 10,014 req/s for 40 s, then the problem it must give.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            surge          | kind: demand_surge, at_s: 20, duration_s: 8, factor: 3 | kind: demand_surge, at_s: 0, duration_s: 300, factor: 1000 | faulty.yaml:39: faults[3].factor: 1,000 for 40 s: about 400,560,000 requests
            surge at one   | kind: demand_surge, at_s: 20, duration_s: 8, factor: 3 | kind: demand_surge, at_s: 10, duration_s: 30, factor: 1000, gateway: us | faults[3].factor: 1,000 for 30 s: about 300,100,560 requests
            default shape  | control: {        | arrivals: {default: {shape: bursty, factor: 1000, period_s: 600000, burst_s: 40}}\\ncontrol: {      | faulty.yaml:9: arrivals.default.factor: 1,000 at us: about
            gateway shape  | control: {        | arrivals: {gateways: {us: {shape: bursty, factor: 1000, period_s: 600000, burst_s: 40}}}\\ncontrol: { | faulty.yaml:9: arrivals.gateways.us.factor: 1,000 at us: about
            bursts         | faults:\\n        | faults:\\n  - &b {kind: request_burst, at_s: 1, gateway: us, requests: 1000000}\\n%s | faults[99].requests: 1,000,000: about 100,400,560 requests
            """)
    void whatMultipliesDemand_countsInTheBoundOnRequests(String name, String from, String to, String problem) {
        String base = SimulationTest.FAULTY.replace("us: {chat: 12}", "us: {chat: 10000}");
        String yaml = base.replace(from.replace("\\n", "\n"), to.replace("\\n", "\n").replace("%s", "  - *b\n".repeat(100)));
        assertThat(yaml).as(name).isNotEqualTo(base);
        assertThatThrownBy(() -> ScenarioLoader.parse("faulty.yaml", yaml)).as(name)
                .isInstanceOf(ScenarioException.class)
                .hasMessageContaining(problem)
                .hasMessageContaining("(expected: at most 100,000,000)");
    }

    /** A surge counts for the part of it within the run: one after the traffic has ended adds nothing. */
    @Test
    void surgeAfterTheTraffic_addsNoRequests() throws Exception {
        String yaml = SimulationTest.FAULTY.replace("us: {chat: 12}", "us: {chat: 10000}").replace(
                "kind: demand_surge, at_s: 20, duration_s: 8, factor: 3",
                "kind: demand_surge, at_s: 40, duration_s: 300, factor: 1000");
        assertThat(ScenarioLoader.parse("faulty.yaml", yaml).faults()).hasSize(5);
    }

    /**
     * Arrivals are drawn at the peak rate for the whole run and thinned: a short surge of ×1,000 within the bound on
     * requests still cost a thousand draws per arrival for the whole run, and is refused naming the surge.
     */
    @Test
    void shortSurgeWhosePeakRateIsDrawnForTheWholeRun_isRefused() throws Exception {
        String yaml = SimulationTest.FAULTY.replace("us: {chat: 12}", "us: {chat: 10000}").replace(
                "kind: demand_surge, at_s: 20, duration_s: 8, factor: 3",
                "kind: demand_surge, at_s: 20, duration_s: 0.5, factor: 1000").replace("duration_s: 40",
                "duration_s: 120");
        assertThatThrownBy(() -> ScenarioLoader.parse("faulty.yaml", yaml)).isInstanceOf(ScenarioException.class)
                .hasMessageContaining("faults[3].factor: 1,000: arrivals are drawn at the peak rate for the whole run")
                .hasMessageContaining("(expected: at most 1,000,000,000;");
    }

    /** The series' samples are bounded by the traffic's length: at most 100,000 of them, whatever sample_s asks. */
    @Test
    void sampleShorterThanTheTrafficAllows_isRefused() throws Exception {
        String yaml = SimulationTest.FAULTY.replace("duration_s: 40", "duration_s: 600000").replace("sample_s: 5",
                "sample_s: 1");
        assertThatThrownBy(() -> ScenarioLoader.parse("faulty.yaml", yaml))
                .hasMessage("faulty.yaml:4: sample_s: 1 (expected: 6 to 604,800)");
        assertThat(ScenarioLoader.parse("faulty.yaml", yaml.replace("sample_s: 1", "sample_s: 6"))
                .sampleMs()).isEqualTo(6000);
    }

    /** A fleet block with a mistake is refused at its line, as a topology is, never with an exception of its own. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "- {id: us-east, continent: na,|- {continent: na,|fleet.regions[0].id: missing (expected: a string)",
        "- {id: us-east, continent: na, gateways: 16, engine_clusters: 4}|- [us-east, na]|fleet.yaml:22: fleet.regions[0]: a list (expected: a mapping)",
        "hardware: [h100, a100]|hardware: h100|fleet.hardware: not a list of hardware kinds",
        "engines_per_cluster: 64|engines_per_cluster: 1e9|fleet.engines_per_cluster: 1,000,000,000 (expected: 1 to 100,000)",
        "engines_per_cluster: 64|engines_per_cluster: 50000|fleet.regions[0]: more than 100000 gateway clusters, engine clusters or engines",
        "residency_share: 0.3|residency_share: 2|fleet.residency_share: 2 (expected: 0 to 1)",
    })
    void badFleet_isNamedWithTheFile(String from, String to, String message) throws Exception {
        String large = java.nio.file.Files.readString(SCENARIOS.resolve("large-fleet.yaml"));
        String yaml = large.replaceFirst(java.util.regex.Pattern.quote(from), java.util.regex.Matcher.quoteReplacement(to));
        assertThat(yaml).isNotEqualTo(large);
        assertThatThrownBy(() -> ScenarioLoader.parse("fleet.yaml", yaml))
                .isInstanceOf(ScenarioException.class)
                .hasMessageStartingWith("fleet.yaml:")
                .hasMessageContaining(message);
    }

    /**
     * A key the simulator does not read is refused at its line, in every mapping of the file: a misspelt optional key
     * would otherwise run another scenario than the one written (an engine whose capacity comes from its hardware).
     */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "sample_s: 5|sampel_s: 5|faulty.yaml:4: sampel_s: unknown key 'sampel_s'",
        "max_seqs: 16|max_seq: 16|faulty.yaml:6: hardware.small.max_seq: unknown key",
        "turns_mean: 3|turn_mean: 3|faulty.yaml:8: workload.default.turn_mean: unknown key",
        "legacy: {gain: 1.0|legacy: {gian: 1.0|faulty.yaml:10: legacy.gian: unknown key",
        "- {id: us, region: us-east}|- {id: us, regoin: us-east, region: us-east}|faulty.yaml:13: topology.gateway_clusters[0].regoin: unknown key",
        "- {id: us-1, cluster: gpu-us, models: [m], hardware: small}|- {id: us-1, cluster: gpu-us, models: [m], hardware: small, capcity_rps: 9}|faulty.yaml:25: topology.engines[0].capcity_rps: unknown key",
        "- {id: chat, model: m, priority: 0}|- {id: chat, model: m, prority: 0}|faulty.yaml:30: topology.classes[0].prority: unknown key",
        "engines: [eu-1]}|engines: [eu-1], facter: 2}|faulty.yaml:36: faults[0].facter: unknown key",
    })
    void unknownKey_isRefusedAtItsLine(String from, String to, String message) {
        String yaml = SimulationTest.FAULTY.replace(from, to);
        assertThat(yaml).isNotEqualTo(SimulationTest.FAULTY);
        assertThatThrownBy(() -> ScenarioLoader.parse("faulty.yaml", yaml))
                .isInstanceOf(ScenarioException.class)
                .hasMessageContaining(message);
    }

    @Test
    void unknownKeyOfArrivalsOrOfAFleet_isRefusedAtItsLine() throws Exception {
        String arrivals = SimulationTest.FAULTY.replace("control: {", "arrivals:\n  default: {shap: bursty}\ncontrol: {");
        assertThatThrownBy(() -> ScenarioLoader.parse("faulty.yaml", arrivals))
                .hasMessageContaining("faulty.yaml:10: arrivals.default.shap: unknown key 'shap'");
        String budget = SimulationTest.FAULTY.replace("  demand_rps:", "  retry_budget: {}\n  demand_rps:");
        assertThatThrownBy(() -> ScenarioLoader.parse("faulty.yaml", budget)) // the simulated gateways keep the default
                .hasMessageContaining("faulty.yaml:32: topology.retry_budget: unknown key");
        String large = java.nio.file.Files.readString(SCENARIOS.resolve("large-fleet.yaml"));
        String fleet = large.replace("same_region: 4", "same_regoin: 4");
        assertThat(fleet).isNotEqualTo(large);
        assertThatThrownBy(() -> ScenarioLoader.parse("fleet.yaml", fleet))
                .hasMessageContaining("fleet.rtt_ms.same_regoin: unknown key");
    }

    /** A scenario's model that says no output tokens has the workload's answers' length, as a topology file's may not. */
    @Test
    void modelWithoutOutputTokens_hasTheWorkloadsAnswers() throws ScenarioException {
        String yaml = SimulationTest.FAULTY.replace("{id: m, output_tokens: 40}", "{id: m}")
                .replace("output_tokens: 40}", "output_tokens: 70}");
        assertThat(yaml).doesNotContain("output_tokens: 40");
        Scenario scenario = ScenarioLoader.parse("faulty.yaml", yaml);
        assertThat(scenario.topology().models()).singleElement()
                .satisfies(m -> assertThat(m.outputTokens()).isEqualTo(70));
    }

    /** Every scenario the project ships, variants included, loads: the docs give a command for each. */
    @Test
    void everyShippedScenario_loads() throws Exception {
        java.util.List<Path> files;
        try (java.util.stream.Stream<Path> s = java.nio.file.Files.walk(SCENARIOS)) {
            files = s.filter(f -> f.toString().endsWith(".yaml")).sorted().toList();
        }
        assertThat(files).hasSizeGreaterThan(30);
        for (Path f : files) {
            Scenario scenario = ScenarioLoader.load(f);
            assertThat(scenario.topology().engines()).as(f.toString()).isNotEmpty();
        }
    }

    /**
     * Problems in separate parts of a scenario are said together, in the file's order, each at its line; a part that
     * the others need (the topology, for the faults) skips them when it is wrong.
     */
    @Test
    void problemsInSeveralParts_areAllSaid_inTheFilesOrder() {
        String yaml = SimulationTest.FAULTY.replace("duration_s: 40", "duration_s: -1")
                .replace("turns_mean: 3", "turns_mean: 0.5").replace("kind: engine_crash", "kind: meteor");
        assertThatThrownBy(() -> ScenarioLoader.parse("faulty.yaml", yaml))
                .isInstanceOfSatisfying(ScenarioException.class, e -> {
                    assertThat(e.problems()).extracting(dev.sextant.config.ConfigProblem::path).containsExactlyInAnyOrder(
                            "duration_s", "workload.default.turns_mean", "faults[0].kind");
                    assertThat(e.problems()).extracting(dev.sextant.config.ConfigProblem::line).isSorted();
                });
        String noTopology = yaml.replace("hardware: small}", "hardware: tiny}");
        // the topology is read as a topology file is (every engine's problem said), the faults not
        assertThatThrownBy(() -> ScenarioLoader.parse("faulty.yaml", noTopology))
                .isInstanceOfSatisfying(ScenarioException.class, e -> assertThat(e.problems())
                        .extracting(dev.sextant.config.ConfigProblem::path)
                        .contains("duration_s", "workload.default.turns_mean", "topology.engines[0].hardware")
                        .allMatch(p -> p.equals("duration_s") || p.equals("workload.default.turns_mean")
                                || p.matches("topology\\.engines\\[\\d+]\\.hardware"), "no other problem"));
        // a kind of hardware that is wrong is said, and its engines are not said to name an unknown kind
        String badKind = SimulationTest.FAULTY.replaceFirst("step_ms: [0-9.]+", "step_ms: fast")
                .replace("duration_s: 40", "duration_s: 0");
        assertThat(badKind).isNotEqualTo(SimulationTest.FAULTY);
        assertThatThrownBy(() -> ScenarioLoader.parse("faulty.yaml", badKind))
                .isInstanceOfSatisfying(ScenarioException.class, e -> assertThat(e.problems())
                        .extracting(dev.sextant.config.ConfigProblem::path).containsExactly(
                                "duration_s", "hardware.small.step_ms"));
    }

    @Test
    void badField_namesItsLine() {
        String yaml = SimulationTest.FAULTY.replace("{id: eu-2, cluster: gpu-eu2, models: [m], hardware: small}",
                "{id: eu-2, cluster: gpu-eu2, models: [m], hardware: tiny}");
        assertThatThrownBy(() -> ScenarioLoader.parse("faulty.yaml", yaml))
                .hasMessage("faulty.yaml:28: topology.engines[3].hardware: unknown hardware 'tiny' (expected one of"
                        + " [default, small])");
    }

    /** Each row: the edit to the scenario, then the one problem it must give. */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            duplicate key    | sample_s: 5  | sample_s: 5\\nsample_s: 6    | faulty.yaml:5: sample_s: duplicate key 'sample_s' (expected: each key once; first at line 4)
            tab              | sample_s: 5  | sample_s: 5\\n\\tname: x     | faulty.yaml:5: name: YAML syntax: a tab (expected: spaces; YAML does not allow tabs for indentation) (column 1)
            undefined alias  | sample_s: 5  | sample_s: *five              | faulty.yaml:4: sample_s: alias *five (expected: an anchor &five defined before it, outside its own value)
            """)
    void mistakeOfTheYaml_isRefusedAtItsLine(String name, String from, String to, String problem) {
        String yaml = SimulationTest.FAULTY.replace(from, to.replace("\\n", "\n").replace("\\t", "\t"));
        assertThatThrownBy(() -> ScenarioLoader.parse("faulty.yaml", yaml)).as(name).hasMessage(problem);
    }

    @Test
    void anchorsAliasesAndMergeKeys_loadAsTheScenarioWrittenOut() throws Exception {
        String shared = SimulationTest.FAULTY
                .replace("small: {step_ms: 5,", "small: &small {step_ms: 5,")
                .replace("- {id: us-1, cluster: gpu-us, models: [m], hardware: small}",
                        "- &us {id: us-1, cluster: gpu-us, models: [m], hardware: small}")
                .replace("- {id: us-2, cluster: gpu-us, models: [m], hardware: small}", "- {<<: *us, id: us-2}")
                .replace("chunk_tokens: 1024}\n", "chunk_tokens: 1024}\n  big: *small\n");
        assertThat(shared).contains("<<: *us").contains("big: *small");

        Scenario written = ScenarioLoader.parse("faulty.yaml", SimulationTest.FAULTY);
        Scenario read = ScenarioLoader.parse("faulty.yaml", shared);

        assertThat(read.topology()).isEqualTo(written.topology());
        assertThat(read.hardware()).isEqualTo(written.hardware());
        assertThat(read.faults()).isEqualTo(written.faults());
    }

    @Test
    void unknownPolicy_isRefusedWithTheChoices() {
        String yaml = SimulationTest.FAULTY.replace("duration_s: 40", "duration_s: 40\npolicies: [sextant, magic]");
        assertThatThrownBy(() -> ScenarioLoader.parse("p.yaml", yaml))
                .hasMessageContaining("policies[1]: unknown policy 'magic'");
    }

    @Test
    void aPolicyTwice_isRefusedAtItsSecondPlace() {
        String yaml = SimulationTest.FAULTY.replace("duration_s: 40", "duration_s: 40\npolicies: [sextant, nearest, sextant]");
        assertThatThrownBy(() -> ScenarioLoader.parse("p.yaml", yaml))
                .hasMessageContaining("policies[2]: 'sextant' twice (expected: each policy once)");
    }

    @Test
    void largeFleet_generates64GatewayClusters1024Engines8Models() throws Exception {
        Scenario s = ScenarioLoader.load(SCENARIOS.resolve("large-fleet.yaml"));
        assertThat(s.topology().gatewayClusters()).hasSize(64);
        assertThat(s.topology().engines()).hasSize(1024);
        assertThat(s.topology().models()).hasSize(8);
        // per model: one global class and one per continent (na, eu)
        assertThat(s.topology().classes()).hasSize(24);
        assertThat(s.topology().classes()).filteredOn(c -> !c.residency().isEmpty()).hasSize(16);
        assertThat(s.hardware()).hasSize(1024);
        double total = s.topology().demandRps().values().stream()
                .flatMap(m -> m.values().stream()).mapToDouble(Double::doubleValue).sum();
        // ≈ 1M requests in 30 minutes
        assertThat(total * 1800).isBetween(0.9e6, 1.1e6);
    }

    @Test
    void derivedCapacity_is85PercentOfTheSaturationThroughput() throws Exception {
        Scenario s = ScenarioLoader.load(SCENARIOS.resolve("regional-failure.yaml"));
        EngineParams h = s.hardware().get(0);
        Scenario.ClassWorkload w = s.workload().get(0);
        assertThat(s.topology().engines().get(0).capacityRps())
                .isEqualTo(0.85 * h.saturationRps(ScenarioLoader.uncachedPrompt(w), w.outputTokens()));
    }

    /** The batch limit an operator starts each engine with is the simulated hardware's, whatever its rating says. */
    @Test
    void engines_stateTheirHardwaresBatchLimit_evenWhereTheirRatingIsWritten() throws Exception {
        Scenario s = ScenarioLoader.load(SCENARIOS.resolve("wrong-ratings.yaml"));
        for (int j = 0; j < s.topology().engines().size(); j++) {
            assertThat(s.topology().engines().get(j).maxNumSeqs()).as(s.topology().engines().get(j).id())
                    .isEqualTo(s.hardware().get(j).maxSeqs()).isPositive();
        }
        assertThat(s.topology().engines()).filteredOn(e -> e.id().equals("east-3")).singleElement()
                .satisfies(e -> assertThat(e.maxNumSeqs()).isEqualTo(32));
    }

    @Test
    void talkExample_keepsTheDesignsNumbers() throws Exception {
        Scenario s = ScenarioLoader.load(SCENARIOS.resolve("talk-example.yaml"));
        assertThat(s.topology().engines()).extracting(e -> e.capacityRps()).containsExactly(100.0, 80.0);
        assertThat(s.topology().demandRps().get("east").get("chat")).isEqualTo(120.0);
        assertThat(s.topology().demandRps().get("west").get("chat")).isEqualTo(40.0);
    }
}
