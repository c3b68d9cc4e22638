package dev.sextant.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sextant.snapshot.RetryBudget;
import dev.sextant.topology.Engine;
import dev.sextant.topology.MeasuredProfile;
import dev.sextant.topology.ParametricProfile;
import dev.sextant.topology.PriorityScheduling;
import dev.sextant.topology.Topology;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class TopologyLoaderTest {

    static final Path TALK = Path.of("..", "examples", "talk.yaml");

    static String talk() {
        try {
            return Files.readString(TALK);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** talk.yaml with the first occurrence of {@code from} replaced by {@code to} ("\n" escapes allowed). */
    static String talkWith(String from, String to) {
        String text = talk();
        String f = from.replace("\\n", "\n");
        assertThat(text).contains(f);
        int i = text.indexOf(f);
        return text.substring(0, i) + to.replace("\\n", "\n") + text.substring(i + f.length());
    }

    static TopologyException failure(String yaml) {
        return catchThrowableOfType(TopologyException.class, () -> TopologyLoader.load(yaml, "talk.yaml"));
    }

    /**
     * A topology embedded under a key of another file (a simulator scenario) is read with a topology file's keys and
     * checks, at the embedding file's lines: the embedding rates every engine that writes no rating, names the endpoint
     * of one that writes none, adds engine keys and refuses root keys.
     */
    @Test
    void embedded_readsATopologyFilesKeysAndChecks_atTheEmbeddingFilesPaths() {
        String text = """
                name: x
                topology:
                  gateway_clusters: [{id: east, region: us-east}]
                  engine_clusters: [{id: gpu-east, region: us-east}]
                  network_rtt_ms: {east: {gpu-east: 2}}
                  models: [{id: m, output_tokens: 200}]
                  engines:
                    - {id: east-1, cluster: gpu-east, models: [m], kind: big}
                    - {id: east-2, cluster: gpu-east, models: [m], capacity_rps: 30}
                  classes: [{id: chat, model: m}]
                  demand_rps: {east: {chat: 10}}
                  headroom: 0.1
                """;
        List<String> rated = new java.util.ArrayList<>();
        TopologyEmbedding embedding = new TopologyEmbedding() {
            @Override
            public List<String> refusedKeys() {
                return List.of("retry_budget");
            }

            @Override
            public List<String> engineKeys() {
                return List.of("kind");
            }

            @Override
            public Integer defaultOutputTokens() {
                return null;
            }

            @Override
            public String defaultEndpoint(String engineId) {
                return "test://" + engineId;
            }

            @Override
            public dev.sextant.topology.HardwareKind rating(ConfigReader r, YamlTree.Mapping engine, String path,
                                                           String id, List<String> models) {
                rated.add(path + "=" + r.string(engine, path, "kind", "small"));
                return new dev.sextant.topology.HardwareKind("k", 7, new ParametricProfile(10, 5, 1.0));
            }
        };
        ConfigReader r = ConfigReader.of(text, "scenario.yaml");
        YamlTree.Mapping node = (YamlTree.Mapping) r.root("a scenario", false).entries().get("topology").value();
        Topology t = TopologyLoader.embedded(r, node, "topology", embedding);
        assertThat(r.problems()).isEmpty();
        assertThat(t.engines()).extracting(Engine::endpoint).allMatch(e -> e.startsWith("test://"));
        assertThat(rated).containsExactly("topology.engines[0]=big", "topology.engines[1]=small");
        assertThat(t.engines()).extracting(Engine::capacityRps).containsExactly(7.0, 30.0); // a written rating wins

        // a reference across entries, a refused key and a written endpoint: each at its line of the embedding file
        String broken = text.replace("{id: chat, model: m}", "{id: chat, model: no-such-model}")
                .replace("  headroom:", "  retry_budget: {}\n  headroom:")
                .replace("{id: east-1,", "{id: east-1, endpoint: 'ftp://x',");
        ConfigReader b = ConfigReader.of(broken, "scenario.yaml");
        YamlTree.Mapping brokenNode = (YamlTree.Mapping) b.root("a scenario", false).entries().get("topology").value();
        assertThat(TopologyLoader.embedded(b, brokenNode, "topology", embedding)).isNull();
        assertThat(b.sorted()).extracting(ConfigProblem::path).contains("topology.retry_budget",
                "topology.engines[0].endpoint").anyMatch(p -> p.startsWith("topology.classes["));
        assertThat(b.sorted()).allMatch(p -> p.line() > 2, "at the embedding file's lines");
    }

    @Test
    void load_talkYaml_readsEveryFieldAndDefault() throws TopologyException {
        Topology t = TopologyLoader.load(TALK);

        assertThat(t.gatewayClusters()).extracting(g -> g.id() + "@" + g.region())
                .containsExactly("east@us-east", "west@us-west");
        assertThat(t.engineClusters()).extracting(c -> c.id() + "@" + c.region())
                .containsExactly("gpu-east@us-east", "gpu-west@us-west");
        assertThat(t.networkRttMs()).isEqualTo(Map.of("east", Map.of("gpu-east", 2.0, "gpu-west", 60.0),
                "west", Map.of("gpu-east", 60.0, "gpu-west", 2.0)));
        assertThat(t.models()).singleElement().satisfies(m -> {
            assertThat(m.id()).isEqualTo("llama-3.1-70b");
            assertThat(m.outputTokens()).isEqualTo(200);
        });
        Engine west = t.engines().get(1);
        assertThat(west).isEqualTo(new Engine("west-1", "gpu-west", "http://127.0.0.1:9102", List.of("llama-3.1-70b"),
                80, new ParametricProfile(150, 20, 1.0), 1.0));
        assertThat(t.classes()).singleElement().satisfies(c -> {
            assertThat(c.model()).isEqualTo("llama-3.1-70b");
            assertThat(c.residency()).isEmpty();
            assertThat(c.priority()).isZero();
        });
        assertThat(t.demandRps()).isEqualTo(Map.of("east", Map.of("chat", 120.0), "west", Map.of("chat", 40.0)));
        assertThat(t.headroom()).isEqualTo(0.1);
        assertThat(t.affinityDiscountMs()).isEqualTo(Topology.DEFAULT_AFFINITY_DISCOUNT_MS);
        assertThat(t.retryBudget()).isEqualTo(RetryBudget.DEFAULT);
    }

    @Test
    void load_retryBudget_readsTheCurveAndTheFloor() throws TopologyException {
        String yaml = talkWith("headroom: 0.1", "headroom: 0.1\nretry_budget:\n  curve:\n"
                + "    - {utilization: 0.3, ratio: 0.25}\n    - {utilization: 0.8, ratio: 0.05}\n"
                + "    - {utilization: 1.2, ratio: 0}\n  min_retries_per_second: 2.5");

        Topology t = TopologyLoader.load(yaml, "talk.yaml");

        assertThat(t.retryBudget()).isEqualTo(new RetryBudget(List.of(new RetryBudget.Point(0.3, 0.25),
                new RetryBudget.Point(0.8, 0.05), new RetryBudget.Point(1.2, 0.0)), 2.5));
    }

    /** Each key of retry_budget is optional: what is not given is the default's. */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            null                 | retry_budget: null                                         | 0.5 | 0.2 | 1.0
            empty mapping        | retry_budget: {}                                           | 0.5 | 0.2 | 1.0
            floor only           | retry_budget: {min_retries_per_second: 0}                  | 0.5 | 0.2 | 0.0
            curve only           | 'retry_budget: {curve: [{utilization: 0.7, ratio: 0.1}]}'  | 0.7 | 0.1 | 1.0
            """)
    void load_retryBudgetPartlyGiven_takesTheRestFromTheDefault(String kind, String line, double firstUtilization,
                                                                double firstRatio, double floor)
            throws TopologyException {
        Topology t = TopologyLoader.load(talkWith("headroom: 0.1", "headroom: 0.1\n" + line), "talk.yaml");

        assertThat(t.retryBudget().curve().get(0)).as(kind)
                .isEqualTo(new RetryBudget.Point(firstUtilization, firstRatio));
        assertThat(t.retryBudget().minRetriesPerSecond()).as(kind).isEqualTo(floor);
        if (!kind.equals("curve only")) {
            assertThat(t.retryBudget().curve()).as(kind).isEqualTo(RetryBudget.DEFAULT.curve());
        }
    }

    /** Mistakes in retry_budget, written after headroom (line 33): the YAML, then the problem's line, field, message. */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', quoteCharacter = '"', textBlock = """
            ratio above 1          | retry_budget: {curve: [{utilization: 0.5, ratio: 1.5}]}     | 34 | retry_budget.curve[0].ratio | 1.5 (expected: in [0, 1])
            negative ratio         | retry_budget: {curve: [{utilization: 0.5, ratio: -0.1}]}    | 34 | retry_budget.curve[0].ratio | -0.1 (expected: in [0, 1])
            negative utilization   | retry_budget: {curve: [{utilization: -0.1, ratio: 0.2}]}    | 34 | retry_budget.curve[0].utilization | -0.1 (expected: a finite number >= 0)
            infinite utilization   | retry_budget: {curve: [{utilization: .inf, ratio: 0.2}]}    | 34 | retry_budget.curve[0].utilization | Infinity (expected: a finite number >= 0)
            decreasing utilization | "retry_budget:\\n  curve:\\n    - {utilization: 0.5, ratio: 0.2}\\n    - {utilization: 0.4, ratio: 0.01}" | 37 | retry_budget.curve[1].utilization | 0.4 (expected: > 0.5, the utilization of the point before: utilizations strictly increasing)
            repeated utilization   | "retry_budget:\\n  curve:\\n    - {utilization: 0.5, ratio: 0.2}\\n    - {utilization: 0.5, ratio: 0.01}" | 37 | retry_budget.curve[1].utilization | 0.5 (expected: > 0.5,
            empty curve            | retry_budget: {curve: []}                                   | 34 | retry_budget.curve | empty (expected: at least one {utilization, ratio} point)
            curve not a list       | retry_budget: {curve: {utilization: 0.5, ratio: 0.2}}       | 34 | retry_budget.curve | a mapping (expected: a list)
            point not a mapping    | retry_budget: {curve: [0.5]}                                | 34 | retry_budget.curve[0] | 0.5 (expected: a mapping)
            missing ratio          | retry_budget: {curve: [{utilization: 0.5}]}                 | 34 | retry_budget.curve[0].ratio | missing (expected: a number)
            unknown key in point   | retry_budget: {curve: [{utilization: 0.5, ratio: 0.2, burst: 3}]} | 34 | retry_budget.curve[0].burst | unknown key 'burst' (expected one of: utilization, ratio)
            unknown key in budget  | retry_budget: {min_retries: 1}                              | 34 | retry_budget.min_retries | unknown key 'min_retries' (expected one of: curve, min_retries_per_second)
            negative floor         | retry_budget: {min_retries_per_second: -1}                  | 34 | retry_budget.min_retries_per_second | -1.0 (expected: a finite number >= 0)
            infinite floor         | retry_budget: {min_retries_per_second: .inf}                | 34 | retry_budget.min_retries_per_second | Infinity (expected: a finite number >= 0)
            string for floor       | retry_budget: {min_retries_per_second: lots}                | 34 | retry_budget.min_retries_per_second | 'lots' (expected: a number)
            string for ratio       | "retry_budget:\\n  min_retries_per_second: 1\\n  curve:\\n    - {utilization: 0.5, ratio: '0.2'}" | 37 | retry_budget.curve[0].ratio | '0.2' (expected: a number)
            number for budget      | retry_budget: 0.2                                           | 34 | retry_budget | 0.2 (expected: a mapping with curve and/or min_retries_per_second)
            """)
    void load_retryBudgetMistake_namesFileLineAndField(String kind, String yaml, int line, String path,
                                                       String message) {
        TopologyException e = failure(talkWith("headroom: 0.1", "headroom: 0.1\n" + yaml));

        assertThat(e).as(kind).isNotNull();
        assertThat(e.problems()).as(kind).singleElement().satisfies(p -> {
            assertThat(p.line()).isEqualTo(line);
            assertThat(p.path()).isEqualTo(path);
            assertThat(p.message()).startsWith(message);
        });
        assertThat(e.getMessage()).as(kind).startsWith("talk.yaml:" + line + ": " + path + ": ");
    }

    @Test
    void load_prioritySchedulingWithoutAValue_countsAsAbsent_asEveryOptionalFieldDoes() throws TopologyException {
        for (String written : new String[] {"priority_scheduling:", "priority_scheduling: null"}) {
            Topology t = TopologyLoader.load(talkWith("capacity_rps: 80", "capacity_rps: 80\\n    " + written),
                    "talk.yaml");
            assertThat(t.engines().get(1).priorityScheduling()).as(written).isEqualTo(PriorityScheduling.NONE);
        }
    }

    @Test
    void load_optionalFieldsGiven_overrideDefaults() throws TopologyException {
        String yaml = talkWith("capacity_rps: 80", "capacity_rps: 80\\n    health: 0.5\\n    priority_scheduling: lower_first")
                .replace("headroom: 0.1", "affinity_discount_ms: 7")
                .replace("profile: {ttft_ms: 150, tbt_ms: 20, tbt_slope: 1.0}\nclasses",
                        "profile: {ttft_ms: 150, tbt_ms: 20}\nclasses")
                .replace("priority: 0}", "priority: 3, residency: [us-west]}");

        Topology t = TopologyLoader.load(yaml, "talk.yaml");

        assertThat(t.engines().get(1).health()).isEqualTo(0.5);
        assertThat(t.engines().get(1).priorityScheduling()).isEqualTo(PriorityScheduling.LOWER_FIRST);
        assertThat(t.engines().get(0).priorityScheduling()).isEqualTo(PriorityScheduling.NONE);
        assertThat(t.engines().get(1).profile()).isEqualTo(new ParametricProfile(150, 20,
                ParametricProfile.DEFAULT_TBT_SLOPE));
        assertThat(t.headroom()).isEqualTo(Topology.DEFAULT_HEADROOM);
        assertThat(t.affinityDiscountMs()).isEqualTo(7);
        assertThat(t.classes().get(0).residency()).containsExactly("us-west");
        assertThat(t.classes().get(0).priority()).isEqualTo(3);
    }

    @Test
    void load_measuredProfile_buildsMeasuredProfile() throws TopologyException {
        String yaml = talkWith("profile: {ttft_ms: 150, tbt_ms: 20, tbt_slope: 1.0}\\nclasses",
                "profile:\\n      points:\\n        - {utilization: 0.0, ttft_ms: 150, tbt_ms: 20}\\n"
                        + "        - {utilization: 0.8, ttft_ms: 600, tbt_ms: 35}\\nclasses");

        Topology t = TopologyLoader.load(yaml, "talk.yaml");

        assertThat(t.engines().get(1).profile()).isEqualTo(new MeasuredProfile(List.of(
                new MeasuredProfile.Point(0.0, 150, 20), new MeasuredProfile.Point(0.8, 600, 35))));
    }

    @Test
    void load_aliasOfAProfile_loadsAsTheValueWrittenOut() throws TopologyException {
        String yaml = talkWith("profile: {ttft_ms: 150, tbt_ms: 20, tbt_slope: 1.0}\\n  - id: west-1",
                "profile: &h100 {ttft_ms: 150, tbt_ms: 20, tbt_slope: 1.0}\\n  - id: west-1")
                .replace("profile: {ttft_ms: 150, tbt_ms: 20, tbt_slope: 1.0}\nclasses", "profile: *h100\nclasses");

        assertThat(TopologyLoader.load(yaml, "talk.yaml")).isEqualTo(TopologyLoader.load(talk(), "talk.yaml"));
    }

    @Test
    void load_mistakeInsideAnAliasedValue_namesTheAnchorsLine() {
        String yaml = talkWith("profile: {ttft_ms: 150, tbt_ms: 20, tbt_slope: 1.0}\\n  - id: west-1",
                "profile: &h100 {ttft_ms: 150, tbt_ms: 20, tbt_slop: 1.0}\\n  - id: west-1")
                .replace("profile: {ttft_ms: 150, tbt_ms: 20, tbt_slope: 1.0}\nclasses", "profile: *h100\nclasses");

        TopologyException e = failure(yaml);

        assertThat(e.problems()).extracting(ConfigProblem::toString).containsExactly(
                "talk.yaml:21: engines[0].profile.tbt_slop: unknown key 'tbt_slop' (expected one of: ttft_ms, tbt_ms, tbt_slope)",
                "talk.yaml:21: engines[1].profile.tbt_slop: unknown key 'tbt_slop' (expected one of: ttft_ms, tbt_ms, tbt_slope)");
    }

    /** One row per kind of mistake: the edit to talk.yaml, then the problem's line, field and message. */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', quoteCharacter = '"', textBlock = """
            unknown engine cluster  | cluster: gpu-west         | cluster: gpu-north              | 23 | engines[1].cluster        | unknown engine cluster 'gpu-north' (expected one of [gpu-east, gpu-west])
            unknown model of engine | models: [llama-3.1-70b]\\n    capacity_rps: 80 | models: [llama-4]\\n    capacity_rps: 80 | 25 | engines[1].models[0] | unknown model 'llama-4'
            unknown model of class  | model: llama-3.1-70b, priority | model: llama-4, priority  | 29 | classes[0].model          | unknown model 'llama-4'
            unknown class in demand | east: {chat: 120}         | east: {chatt: 120}              | 31 | demand_rps.east.chatt     | unknown class 'chatt' (expected one of [chat])
            unknown gateway in rtt  | west: {gpu-east: 60       | north: {gpu-east: 60            | 12 | network_rtt_ms.north      | unknown gateway cluster 'north'
            unknown residency region| priority: 0}              | priority: 0, residency: [us-east, mars]} | 29 | classes[0].residency[1] | unknown region 'mars' (expected one of [us-east, us-west])
            missing rtt for demand  | east: {gpu-east: 2, gpu-west: 60} | east: {gpu-east: 2}     | 11 | network_rtt_ms.east       | missing round trip to engine cluster 'gpu-west', which serves class 'chat' demanded at gateway cluster 'east'
            negative capacity       | capacity_rps: 80          | capacity_rps: -3                | 26 | engines[1].capacity_rps   | -3.0 (expected: a finite number > 0)
            zero capacity           | capacity_rps: 80          | capacity_rps: 0                 | 26 | engines[1].capacity_rps   | 0.0 (expected: a finite number > 0)
            nan capacity            | capacity_rps: 80          | capacity_rps: .nan              | 26 | engines[1].capacity_rps   | NaN (expected: a finite number > 0)
            infinite capacity       | capacity_rps: 80          | capacity_rps: .inf              | 26 | engines[1].capacity_rps   | Infinity (expected: a finite number > 0)
            absurd capacity         | capacity_rps: 80          | capacity_rps: 1e18              | 26 | engines[1].capacity_rps   | 1.0E18 (expected: at most 1e9 req/s)
            absurd demand           | east: {chat: 120}         | east: {chat: 1e200}             | 31 | demand_rps.east.chat      | 1.0E200 (expected: at most 1e9 req/s)
            denormal demand         | east: {chat: 120}         | east: {chat: 1e-308}            | 31 | demand_rps.east.chat      | 1.0E-308 (expected: at least 1e-9, or 0 where 0 is allowed)
            tiny capacity           | capacity_rps: 80          | capacity_rps: 4.9e-324          | 26 | engines[1].capacity_rps   | 4.9E-324 (expected: at least 1e-9, or 0 where 0 is allowed)
            tiny health             | capacity_rps: 80          | capacity_rps: 80\\n    health: 1e-300 | 27 | engines[1].health     | 1.0E-300 (expected: at least 1e-9, or 0 where 0 is allowed)
            absurd rtt              | gpu-west: 60}             | gpu-west: 6e10}                 | 11 | network_rtt_ms.east.gpu-west | 6.0E10 (expected: at most 1e8 ms)
            absurd ttft             | capacity_rps: 80\\n    profile: {ttft_ms: 150 | capacity_rps: 80\\n    profile: {ttft_ms: 1e15 | 27 | engines[1].profile.ttft_ms | 1.0E15 (expected: at most 1e8 ms)
            absurd tbt slope        | tbt_slope: 1.0}\\nclasses | tbt_slope: 1e9}\\nclasses     | 27 | engines[1].profile.tbt_slope | 1.0E9 (expected: at most 1000)
            minus infinite rtt      | gpu-west: 60}             | gpu-west: -.Inf}                | 11 | network_rtt_ms.east.gpu-west | -Infinity (expected: a finite number >= 0)
            health above 1          | capacity_rps: 80          | capacity_rps: 80\\n    health: 1.5  | 27 | engines[1].health     | 1.5 (expected: in [0, 1])
            health below 0          | capacity_rps: 80          | capacity_rps: 80\\n    health: -0.1 | 27 | engines[1].health     | -0.1 (expected: in [0, 1])
            negative rtt            | gpu-west: 60}             | gpu-west: -60}                  | 11 | network_rtt_ms.east.gpu-west | -60.0 (expected: a finite number >= 0)
            headroom of 1           | headroom: 0.1             | headroom: 1                     | 33 | headroom                  | 1.0 (expected: in [0, 1))
            absurd affinity discount| headroom: 0.1             | headroom: 0.1\\naffinity_discount_ms: 1e40 | 34 | affinity_discount_ms | 1.0E40 (expected: at most 1e8 ms)
            output tokens 0         | output_tokens: 200        | output_tokens: 0                | 14 | models[0].output_tokens   | 0 (expected: an integer from 1 to 10,000,000)
            absurd output tokens    | output_tokens: 200        | output_tokens: 2000000000       | 14 | models[0].output_tokens   | 2000000000 (expected: an integer from 1 to 10,000,000)
            profile ttft 0          | capacity_rps: 80\\n    profile: {ttft_ms: 150 | capacity_rps: 80\\n    profile: {ttft_ms: 0 | 27 | engines[1].profile.ttft_ms | 0.0 (expected: a finite number > 0)
            unknown cluster in rtt  | gpu-west: 60}             | gpu-north: 60}                  | 11 | network_rtt_ms.east.gpu-north | unknown engine cluster 'gpu-north'
            point utilization 1.2   | capacity_rps: 80\\n    profile: {ttft_ms: 150, tbt_ms: 20, tbt_slope: 1.0} | "capacity_rps: 80\\n    profile:\\n      points:\\n        - {utilization: 0.1, ttft_ms: 150, tbt_ms: 20}\\n        - {utilization: 1.2, ttft_ms: 900, tbt_ms: 40}" | 30 | engines[1].profile.points[1].utilization | 1.2 (expected: in [0, 1))
            point utilization twice | capacity_rps: 80\\n    profile: {ttft_ms: 150, tbt_ms: 20, tbt_slope: 1.0} | "capacity_rps: 80\\n    profile:\\n      points:\\n        - {utilization: 0.5, ttft_ms: 150, tbt_ms: 20}\\n        - {utilization: 0.5, ttft_ms: 900, tbt_ms: 40}" | 28 | engines[1].profile.points | utilization 0.5 appears twice (expected: distinct utilizations)
            no points               | capacity_rps: 80\\n    profile: {ttft_ms: 150, tbt_ms: 20, tbt_slope: 1.0} | "capacity_rps: 80\\n    profile: {points: []}" | 27 | engines[1].profile.points | empty (expected: at least one point)
            points and ttft         | capacity_rps: 80\\n    profile: {ttft_ms: 150, tbt_ms: 20, tbt_slope: 1.0} | "capacity_rps: 80\\n    profile: {ttft_ms: 150, points: [{utilization: 0.5, ttft_ms: 150, tbt_ms: 20}]}" | 27 | engines[1].profile.ttft_ms | unknown key 'ttft_ms' (expected one of: points)
            string for profile      | capacity_rps: 80\\n    profile: {ttft_ms: 150, tbt_ms: 20, tbt_slope: 1.0} | "capacity_rps: 80\\n    profile: fast" | 27 | engines[1].profile | 'fast' (expected: a mapping with ttft_ms, tbt_ms[, tbt_slope] or points)
            duplicate engine id     | id: west-1                | id: east-1                      | 22 | engines[1].id             | duplicate id 'east-1' (expected: ids unique within engines)
            duplicate cluster id    | {id: gpu-west             | {id: gpu-east                   | 9  | engine_clusters[1].id     | duplicate id 'gpu-east'
            duplicate yaml key      | capacity_rps: 80          | capacity_rps: 80\\n    capacity_rps: 90 | 27 | engines[1].capacity_rps | duplicate key 'capacity_rps' (expected: each key once; first at line 26)
            unknown scheduling      | capacity_rps: 80          | capacity_rps: 80\\n    priority_scheduling: fifo | 27 | engines[1].priority_scheduling | 'fifo' (expected: none, lower_first (vLLM --scheduling-policy priority) or higher_first
            unknown key in engine   | capacity_rps: 80          | capacity: 80                    | 26 | engines[1].capacity       | unknown key 'capacity' (expected one of: id, cluster, endpoint, models, capacity_rps, profile, health, priority_scheduling, hardware, max_num_seqs)
            unknown key at top      | headroom: 0.1             | head_room: 0.1                  | 33 | head_room                 | unknown key 'head_room' (expected one of: gateway_clusters,
            unknown key in profile  | tbt_slope: 1.0}\\nclasses | tbt_slop: 1.0}\\nclasses        | 27 | engines[1].profile.tbt_slop | unknown key 'tbt_slop' (expected one of: ttft_ms, tbt_ms, tbt_slope)
            string for number       | capacity_rps: 80          | capacity_rps: fast              | 26 | engines[1].capacity_rps   | 'fast' (expected: a number)
            quoted number           | capacity_rps: 80          | capacity_rps: "80"              | 26 | engines[1].capacity_rps   | '80' (expected: a number)
            string for list         | models: [llama-3.1-70b]\\n    capacity_rps: 80 | models: llama-3.1-70b\\n    capacity_rps: 80 | 25 | engines[1].models | 'llama-3.1-70b' (expected: a list of strings)
            null in list of strings | models: [llama-3.1-70b]\\n    capacity_rps: 80 | models: [llama-3.1-70b, null]\\n    capacity_rps: 80 | 25 | engines[1].models[1] | empty (expected: a string)
            list for string         | cluster: gpu-west         | cluster: [gpu-west]             | 23 | engines[1].cluster        | a list (expected: a string)
            fraction for integer    | priority: 0}              | priority: 1.5}                  | 29 | classes[0].priority       | 1.5 (expected: an integer)
            integer past int        | priority: 0}              | priority: 2147483648}           | 29 | classes[0].priority       | 2147483648 (expected: an integer from -2,147,483,648 to 2,147,483,647)
            output tokens past int  | output_tokens: 200        | output_tokens: 3e9              | 14 | models[0].output_tokens   | 3e9 (expected: an integer from 1 to 10,000,000)
            mapping for list        | engines:\\n               | engines: {}\\nx_engines:\\n     | 15 | engines                   | a mapping (expected: a list)
            missing required field  | "    endpoint: http://127.0.0.1:9102\\n" |                   | 22 | engines[1].endpoint       | missing (expected: a string)
            empty required field    | endpoint: http://127.0.0.1:9102 | endpoint:                 | 24 | engines[1].endpoint       | empty (expected: a string)
            null required field     | endpoint: http://127.0.0.1:9102 | endpoint: null            | 24 | engines[1].endpoint       | empty (expected: a string)
            endpoint not a URL      | endpoint: http://127.0.0.1:9102 | endpoint: 127.0.0.1:9102  | 24 | engines[1].endpoint       | '127.0.0.1:9102' (expected: an http:// or https:// URL with a host
            endpoint of ftp         | endpoint: http://127.0.0.1:9102 | endpoint: ftp://h:21      | 24 | engines[1].endpoint       | 'ftp://h:21' (expected: an http://
            endpoint port too high  | endpoint: http://127.0.0.1:9102 | endpoint: http://h:99999  | 24 | engines[1].endpoint       | 'http://h:99999' (expected: an http://
            endpoint with spaces    | endpoint: http://127.0.0.1:9102 | endpoint: http://my host  | 24 | engines[1].endpoint       | 'http://my host' (expected: an http://
            unknown hardware kind   | capacity_rps: 80          | hardware: a100                  | 26 | engines[1].hardware       | unknown hardware kind 'a100' (expected one of [])
            batch limit of 0        | capacity_rps: 80          | capacity_rps: 80\\n    max_num_seqs: 0 | 27 | engines[1].max_num_seqs | 0 (expected: an integer from 1 to 1,000,000)
            fractional batch limit  | capacity_rps: 80          | capacity_rps: 80\\n    max_num_seqs: 2.5 | 27 | engines[1].max_num_seqs | 2.5 (expected: an integer)
            batch limit as a string | capacity_rps: 80          | capacity_rps: 80\\n    max_num_seqs: many | 27 | engines[1].max_num_seqs | 'many' (expected: an integer)
            missing top-level list  | classes:\\n  - {id: chat, model: llama-3.1-70b, priority: 0}\\n | | 1 | classes       | missing (expected: a list)
            """)
    void load_mistake_namesFileLineAndField(String kind, String from, String to, int line, String path, String message) {
        TopologyException e = failure(talkWith(from, to == null ? "" : to));

        assertThat(e).as(kind).isNotNull();
        assertThat(e.problems()).as(kind).anySatisfy(p -> {
            assertThat(p.source()).isEqualTo("talk.yaml");
            assertThat(p.line()).isEqualTo(line);
            assertThat(p.path()).isEqualTo(path);
            assertThat(p.message()).contains(message);
        });
        assertThat(e.getMessage()).as(kind).contains("talk.yaml:" + line + ": " + path + ": ");
    }

    /** talk.yaml rating its engines through one hardware kind; west-1 keeps a capacity of its own. */
    static final String WITH_HARDWARE = """
            gateway_clusters: [{id: east, region: us-east}]
            engine_clusters: [{id: gpu-east, region: us-east}]
            network_rtt_ms: {east: {gpu-east: 2}}
            models: [{id: m, output_tokens: 100}]
            hardware:
              h100: {capacity_rps: 100, profile: {ttft_ms: 150, tbt_ms: 20}}
            engines:
              - {id: e1, cluster: gpu-east, endpoint: 'http://127.0.0.1:9101', models: [m], hardware: h100}
              - {id: e2, cluster: gpu-east, endpoint: 'http://127.0.0.1:9102', models: [m], hardware: h100, capacity_rps: 80}
            classes: [{id: chat, model: m}]
            demand_rps: {east: {chat: 10}}
            """;

    @Test
    void loadFile_hardwareKinds_rateTheEnginesThatNameThem_ownKeysWin() throws TopologyException {
        TopologyFile f = TopologyLoader.loadFile(WITH_HARDWARE, "hw.yaml");

        assertThat(f.hardware()).containsOnlyKeys("h100");
        assertThat(f.hardware().get("h100").capacityRps()).isEqualTo(100.0);
        assertThat(f.topology().engines()).extracting(Engine::capacityRps).containsExactly(100.0, 80.0);
        assertThat(f.topology().engines().get(0).profile()).isEqualTo(new ParametricProfile(150, 20, 1.0));
    }

    @Test
    void loadFile_maxNumSeqs_fromTheKindOrTheEngine_absentIsZero() throws TopologyException {
        String yaml = WITH_HARDWARE.replace("{capacity_rps: 100, profile:", "{capacity_rps: 100, max_num_seqs: 256, profile:")
                .replace("hardware: h100, capacity_rps: 80}", "hardware: h100, capacity_rps: 80, max_num_seqs: 64}");

        assertThat(TopologyLoader.loadFile(yaml, "hw.yaml").topology().engines()).extracting(Engine::maxNumSeqs)
                .containsExactly(256, 64);
        assertThat(TopologyLoader.loadFile(WITH_HARDWARE, "hw.yaml").topology().engines())
                .extracting(Engine::maxNumSeqs).containsExactly(0, 0);
    }

    @Test
    void load_withoutEngines_loadsAnEmptyFleet_forEnginesThatRegister() throws TopologyException {
        String yaml = WITH_HARDWARE.substring(0, WITH_HARDWARE.indexOf("engines:"))
                + WITH_HARDWARE.substring(WITH_HARDWARE.indexOf("classes:"));

        assertThat(TopologyLoader.load(yaml, "hw.yaml").engines()).isEmpty();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            unknown kind            | hardware: h100, capacity_rps: 80} | hardware: a100, capacity_rps: 80} | 9  | engines[1].hardware | unknown hardware kind 'a100' (expected one of [h100])
            kind without capacity   | {capacity_rps: 100, profile:  | {profile:                         | 6  | hardware.h100.capacity_rps | missing (expected: a number)
            kind with unknown key   | {capacity_rps: 100,           | {capacity_rps: 100, gpus: 8,      | 6  | hardware.h100.gpus | unknown key 'gpus' (expected one of: capacity_rps, profile, max_num_seqs)
            kind not a mapping      | h100: {capacity_rps: 100, profile: {ttft_ms: 150, tbt_ms: 20}} | h100: fast | 6 | hardware.h100 | 'fast' (expected: a mapping with capacity_rps and profile)
            kind's batch limit < 1  | {capacity_rps: 100,           | {capacity_rps: 100, max_num_seqs: -4, | 6 | hardware.h100.max_num_seqs | -4 (expected: an integer from 1 to 1,000,000)
            """)
    void load_hardwareMistake_namesFileLineAndField_once(String kind, String from, String to, int line, String path,
                                                         String message) {
        assertThat(WITH_HARDWARE).contains(from);
        TopologyException e = catchThrowableOfType(TopologyException.class,
                () -> TopologyLoader.load(WITH_HARDWARE.replaceFirst(java.util.regex.Pattern.quote(from),
                        java.util.regex.Matcher.quoteReplacement(to)), "hw.yaml"));

        assertThat(e).as(kind).isNotNull();
        assertThat(e.problems()).as(kind).hasSize(1);
        assertThat(e.getMessage()).as(kind).contains("hw.yaml:" + line + ": " + path + ": " + message);
    }

    @Test
    void load_negativeCapacity_messageReadsAsOneLine() {
        TopologyException e = failure(talkWith("capacity_rps: 80", "capacity_rps: -3"));

        assertThat(e.getMessage()).isEqualTo("talk.yaml:26: engines[1].capacity_rps: -3.0 (expected: a finite number > 0)");
    }

    @Test
    void load_yamlSyntaxError_namesLineOfError() {
        TopologyException e = failure(talkWith("    cluster: gpu-west", "    cluster: [gpu-west"));

        assertThat(e.problems()).singleElement().satisfies(p -> {
            assertThat(p.line()).isBetween(23, 24);
            assertThat(p.message()).startsWith("YAML syntax: ");
        });
        assertThat(e.getMessage()).startsWith("talk.yaml:2");
    }

    @Test
    void load_badIndentation_isSyntaxErrorWithLine() {
        TopologyException e = failure(talkWith("    endpoint: http://127.0.0.1:9102", "      endpoint: http://127.0.0.1:9102"));

        assertThat(e.problems()).singleElement().satisfies(p -> {
            assertThat(p.line()).isEqualTo(24);
            assertThat(p.message()).isEqualTo("YAML syntax: mapping values are not allowed here (column 15)");
        });
    }

    @Test
    void load_severalMistakes_reportsAllInFileOrder() {
        String yaml = talkWith("capacity_rps: 80", "capacity_rps: -3")
                .replace("output_tokens: 200", "output_tokens: many")
                .replace("east: {chat: 120}", "east: {chatt: 120}")
                .replace("headroom: 0.1", "headroom: 0.1\nextra: 1");

        TopologyException e = failure(yaml);

        assertThat(e.problems()).extracting(ConfigProblem::line).containsExactly(14, 26, 31, 34);
        assertThat(e.getMessage().split("\n")).hasSize(4);
    }

    @Test
    void load_severalProblemsInOneEntry_reportsEach() {
        TopologyException e = failure(talkWith("    endpoint: http://127.0.0.1:9102\n", "")
                .replace("capacity_rps: 80", "capacity: 80")
                .replace("ttft_ms: 150, tbt_ms: 20, tbt_slope: 1.0}\nclasses", "ttft_ms: 150, tbt_ms: x}\nclasses"));

        assertThat(e.problems()).extracting(ConfigProblem::path).containsExactlyInAnyOrder("engines[1].endpoint",
                "engines[1].capacity_rps", "engines[1].capacity", "engines[1].profile.tbt_ms");
    }

    @Test
    void load_referenceToEntryThatFailed_isNotReportedTwice() {
        TopologyException e = failure(talkWith("{id: gpu-west, region: us-west}", "{id: gpu-west, region: us-west, zone: b}"));

        assertThat(e.problems()).singleElement().satisfies(p -> {
            assertThat(p.path()).isEqualTo("engine_clusters[1].zone");
            assertThat(p.line()).isEqualTo(9);
        });
    }

    @Test
    void load_malformedRoundTrip_isNotAlsoReportedMissing() {
        TopologyException e = failure(talkWith("gpu-west: 60}", "gpu-west: far}"));

        assertThat(e.problems()).singleElement().hasToString("talk.yaml:11: network_rtt_ms.east.gpu-west: 'far' (expected: a number)");
    }

    @Test
    void load_crossReferenceAfterFailedEntry_namesFilesIndex() {
        // engines[0] fails on its own; the unknown cluster of engines[1] must still say engines[1].
        TopologyException e = failure(talkWith("capacity_rps: 100", "capacity_rps: -1")
                .replace("cluster: gpu-west", "cluster: gpu-north"));

        assertThat(e.problems()).extracting(ConfigProblem::path)
                .containsExactly("engines[0].capacity_rps", "engines[1].cluster");
    }

    @Test
    void load_emptyText_isProblemAtLineOne() {
        assertThat(failure("").getMessage()).isEqualTo("talk.yaml:1: empty document (expected: a mapping)");
    }

    @Test
    void load_rootNotMapping_saysWhatWasExpected() {
        assertThat(failure("- a\n- b\n").getMessage()).startsWith("talk.yaml:1: a list (expected: a mapping with keys");
    }

    @Test
    void load_missingFile_namesFile() {
        assertThatThrownBy(() -> TopologyLoader.load(Path.of("no-such-topology.yaml")))
                .isInstanceOf(TopologyException.class)
                .hasMessage("no-such-topology.yaml: cannot read: no such file");
    }

    @Test
    void load_directory_saysSo(@org.junit.jupiter.api.io.TempDir Path dir) {
        assertThatThrownBy(() -> TopologyLoader.load(dir))
                .isInstanceOf(TopologyException.class)
                .hasMessage(dir + ": cannot read: is a directory");
    }

    @Test
    void load_notUtf8_saysSo(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path latin1 = dir.resolve("t.yaml");
        java.nio.file.Files.write(latin1, new byte[] {'a', ':', ' ', (byte) 0xE9, '\n'});
        assertThatThrownBy(() -> TopologyLoader.load(latin1))
                .isInstanceOf(TopologyException.class)
                .hasMessage(latin1 + ": cannot read: not UTF-8 text");
    }
}
