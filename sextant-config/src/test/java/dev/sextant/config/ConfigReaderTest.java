package dev.sextant.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.config.YamlTree.Mapping;
import dev.sextant.topology.Topology;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The one YAML reader of every config file: anchors, aliases, merge keys, their bounds, and what it refuses. */
class ConfigReaderTest {

    private static ConfigReader read(String yaml) {
        return ConfigReader.of(yaml.replace("\\n", "\n").replace("\\t", "\t"), "f.yaml");
    }

    private static List<String> problems(String yaml) {
        ConfigReader r = read(yaml);
        r.root("a mapping", true);
        return r.sorted().stream().map(ConfigProblem::toString).toList();
    }

    @Test
    void mergeKeys_ownKeysWin_andOfAListOfMergedMappingsTheEarlierWins() {
        ConfigReader r = read("""
                base: &base {a: 1, b: 1, c: 1}
                more: &more {b: 2, d: 2}
                merged:
                  <<: [*more, *base]
                  c: 3
                """);
        Mapping root = r.root("a mapping", false);
        Mapping merged = r.mapping(root, "", "merged", "a mapping");

        assertThat(r.problems()).isEmpty();
        assertThat(merged.entries().keySet()).containsExactly("b", "d", "a", "c");
        assertThat(r.integer(merged, "merged", "a", null)).isEqualTo(1);
        assertThat(r.integer(merged, "merged", "b", null)).as("the earlier merged mapping").isEqualTo(2);
        assertThat(r.integer(merged, "merged", "c", null)).as("the mapping's own key").isEqualTo(3);
        assertThat(r.integer(merged, "merged", "d", null)).isEqualTo(2);
    }

    @Test
    void valueReachedThroughAnAlias_namesTheLineOfTheAnchorsDefinition() {
        ConfigReader r = read("a: &p {port: eighty}\nb: *p\n");
        Mapping root = r.root("a mapping", false);
        Mapping b = r.mapping(root, "", "b", "a mapping");

        assertThat(r.integer(b, "b", "port", null)).isNull();
        assertThat(r.problems()).extracting(ConfigProblem::toString)
                .containsExactly("f.yaml:1: b.port: 'eighty' (expected: an integer)");
    }

    /** Each row: the file, then the one problem it must give (file:line: field: message). */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', quoteCharacter = '"', textBlock = """
            duplicate key            | port: 1\\nhost: h\\nport: 2                  | f.yaml:3: port: duplicate key 'port' (expected: each key once; first at line 1)
            duplicate nested key     | a:\\n  b: 1\\n  b: 2                        | f.yaml:3: a.b: duplicate key 'b' (expected: each key once; first at line 2)
            duplicate beside merge   | x: &x {a: 1}\\ny:\\n  <<: *x\\n  b: 1\\n  b: 2 | f.yaml:5: y.b: duplicate key 'b' (expected: each key once; first at line 4)
            tab as indentation       | a: 1\\nb: 2\\n\\tport: 3\\nc: 4             | f.yaml:3: port: YAML syntax: a tab (expected: spaces; YAML does not allow tabs for indentation) (column 1)
            tab in a nested mapping  | a:\\n  b: 1\\n\\tc: 2                       | f.yaml:3: c: YAML syntax: a tab (expected: spaces; YAML does not allow tabs for indentation) (column 1)
            undefined alias          | a: 1\\nb: *nowhere                         | f.yaml:2: b: alias *nowhere (expected: an anchor &nowhere defined before it, outside its own value)
            alias inside its anchor  | a: &a [1, *a]                              | f.yaml:1: a[1]: alias *a (expected: an anchor &a defined before it, outside its own value)
            merge of a scalar        | a: &a 1\\nb:\\n  <<: *a                     | f.yaml:3: b.<<: 1 (expected: a mapping, or a list of mappings, to merge, such as <<: *profile)
            a tag of another type    | a: !!binary aGVsbG8=                       | f.yaml:1: a: tag tag:yaml.org,2002:binary (expected: no tag, or one of !!str, !!int, !!float, !!bool, !!null, !!map, !!seq)
            a key that is a list     | ? [a]\\n: 1                                | f.yaml:1: a key that is a list (expected: a string)
            a second document        | a: 1\\n---\\nb: 2                           | f.yaml:2: a second YAML document (expected: one document)
            """)
    void mistake_isOneProblemNamingFileLineAndField(String name, String yaml, String problem) {
        assertThat(problems(yaml)).as(name).containsExactly(problem);
    }

    /**
     * A character YAML does not allow, which SnakeYAML's reader reports by its place in code points alone: named at its
     * line and column, lines broken by CR LF and by CR alone, a character beyond the BMP counted once.
     */
    @Test
    void controlCharacter_isAProblemAtItsLineAndColumn() {
        assertThat(problems("a: 1\r\nb: 2\rc: \ud83d\ude00x\u0001\nd: 4\n")).containsExactly(
                "f.yaml:3: c: YAML syntax: character U+0001 (expected: printable characters, tabs and line breaks) "
                        + "(column 6)");
        assertThat(problems("a:\n  b: [1,\n    2\u0000]\n")).containsExactly(
                "f.yaml:3: YAML syntax: character U+0000 (expected: printable characters, tabs and line breaks) "
                        + "(column 6)");
    }

    @Test
    void lineBeyondTheLimit_isRefusedAtItsLine_beforeTheParserSpendsSecondsOnIt() {
        String yaml = "a: 1\nb: \"" + "e".repeat(YamlTree.MAX_LINE_CHARS) + "\"\nc: 2\n";
        assertThat(problems(yaml)).singleElement().asString().isEqualTo("f.yaml:2: a line of "
                + (YamlTree.MAX_LINE_CHARS + 5) + " characters (expected: at most " + YamlTree.MAX_LINE_CHARS + ")");
        assertThat(problems("a: \"" + "e".repeat(YamlTree.MAX_LINE_CHARS - 5) + "\"\n")).isEmpty();
    }

    @Test
    void aliasesNestingBeyondTheLimit_areRefusedAtTheAlias() {
        StringBuilder yaml = new StringBuilder("a: &a0 [x]\n");
        for (int i = 1; i <= 70; i++) {
            yaml.append("a").append(i).append(": &a").append(i).append(" [*a").append(i - 1).append("]\n");
        }
        assertThat(problems(yaml.toString())).singleElement().asString()
                .startsWith("f.yaml:64: a63[0]: alias *a62 nests its value deeper than allowed (expected: at most 64");
    }

    @Test
    void aliasBombThroughMergeKeys_isRefusedAtTheAliasThatCrossesTheBound() {
        StringBuilder yaml = new StringBuilder("l0: &l0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8}\n");
        for (int i = 1; i <= 12; i++) {
            yaml.append("l").append(i).append(": &l").append(i).append(" [");
            for (int j = 0; j < 8; j++) {
                yaml.append(j == 0 ? "" : ", ").append("{<<: *l").append(i - 1).append("}");
            }
            yaml.append("]\n");
        }
        assertThat(problems(yaml.toString())).singleElement().asString()
                .contains("repeats more values than allowed (expected: aliases repeating at most 1000000 values");
    }

    @Test
    void plainScalars_areTypedAsYaml11() {
        ConfigReader r = read("a: yes\nb: off\nc: 0x1F\nd: 017\ne: 1_000\nf: 1:30\ng: .inf\nh: '12'\ni: 0o17\n");
        Mapping m = r.root("a mapping", false);

        assertThat(r.bool(m, "", "a", null)).isTrue();
        assertThat(r.bool(m, "", "b", null)).isFalse();
        assertThat(r.integer(m, "", "c", null)).isEqualTo(31);
        assertThat(r.integer(m, "", "d", null)).as("octal").isEqualTo(15);
        assertThat(r.integer(m, "", "e", null)).isEqualTo(1000);
        assertThat(r.string(m, "", "f")).isEqualTo("1:30");
        assertThat(r.number(m, "", "g", null)).isInfinite();
        assertThat(r.string(m, "", "h")).isEqualTo("12");
        assertThat(r.string(m, "", "i")).isEqualTo("0o17");
        assertThat(r.problems()).isEmpty();
        assertThat(r.integer(m, "", "h", null)).as("a quoted number is a string").isNull();
    }

    @Test
    void read_nonRegularFileBeyondTheLimit_isRefusedNamingIt() {
        ConfigReader r = ConfigReader.read(Path.of("/dev/zero"));

        assertThat(r.root("a mapping", false)).isNull();
        assertThat(r.problems()).extracting(ConfigProblem::toString).containsExactly(
                "/dev/zero: more than 16777216 bytes (expected: at most 16777216)");
    }

    @Test
    void missingFileNamedByAKey_isAProblemOfTheFileThatNamesIt(@TempDir Path dir) throws Exception {
        Path cp = Files.writeString(dir.resolve("control-plane.yaml"), "port: 1\ntopology: nowhere.yaml\n");
        ConfigReader r = ConfigReader.read(cp);
        Mapping root = r.root("a mapping", false);
        Path topology = r.path(root, "", "topology");

        assertThat(r.readable("topology", topology)).isFalse();
        assertThat(r.problems()).extracting(ConfigProblem::toString).containsExactly(cp + ":2: topology: "
                + dir.resolve("nowhere.yaml") + ": cannot read: no such file");
    }

    @Test
    void topologyWithAnchorsAndMergeKeys_loadsAsTheFileWrittenOut() throws Exception {
        String shared = """
                x-engine: &gpu
                  models: [llama-3.1-70b]
                  profile: {ttft_ms: 150, tbt_ms: 20, tbt_slope: 1.0}
                gateway_clusters:
                  - {id: east, region: us-east}
                  - {id: west, region: us-west}
                engine_clusters:
                  - {id: gpu-east, region: us-east}
                  - {id: gpu-west, region: us-west}
                network_rtt_ms:
                  east: {gpu-east: 2, gpu-west: 60}
                  west: {gpu-east: 60, gpu-west: 2}
                models:
                  - {id: llama-3.1-70b, output_tokens: 200}
                engines:
                  - <<: *gpu
                    id: east-1
                    cluster: gpu-east
                    endpoint: http://127.0.0.1:9101
                    capacity_rps: 100
                  - <<: *gpu
                    id: west-1
                    cluster: gpu-west
                    endpoint: http://127.0.0.1:9102
                    capacity_rps: 80
                classes:
                  - {id: chat, model: llama-3.1-70b, priority: 0}
                demand_rps:
                  east: {chat: 120}
                  west: {chat: 40}
                headroom: 0.1
                """;
        Topology talk = TopologyLoader.load(Path.of("..", "examples", "talk.yaml"));

        assertThat(TopologyLoader.load(shared, "shared.yaml")).isEqualTo(talk);
    }
}
