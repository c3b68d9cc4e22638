package dev.sextant.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SimulateCommandTest {

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int run(String... args) {
        return Sextant.run(Services.production(), new PrintWriter(out), new PrintWriter(err), args);
    }

    private static Path scenario(String name) {
        Path p = Path.of("..", "examples", "scenarios", name);
        return Files.exists(p) ? p : Path.of("examples", "scenarios", name);
    }

    @Test
    void simulate_talkExample_writesTheReportAndSummaryForEachPolicy(@TempDir Path dir) throws Exception {
        int code = run("simulate", scenario("talk-example.yaml").toString(), "--policies", "sextant,nearest",
                "--seed", "3", "--out", dir.toString());

        assertThat(code).as(err.toString()).isZero();
        assertThat(dir.resolve("report.md")).exists();
        String summary = Files.readString(dir.resolve("summary.json"));
        assertThat(summary).contains("\"sextant\"", "\"nearest\"", "\"ttft_p99_ms\"", "\"residency_violations\"");
        assertThat(out.toString()).contains("sextant", "nearest", "report.md");
    }

    @Test
    void simulate_withKeylessClients_routesOnDerivedKeys_andTheReportSaysHowToReproduceIt(@TempDir Path dir)
            throws Exception {
        assertThat(run("simulate", scenario("talk-example.yaml").toString(), "--policies", "sextant", "--out",
                dir.resolve("keyed").toString())).as(err.toString()).isZero();
        assertThat(run("simulate", scenario("talk-example.yaml").toString(), "--policies", "sextant",
                "--keyed-share", "0", "--system-prompts", "2", "--out", dir.resolve("keyless").toString()))
                .as(err.toString()).isZero();

        // the clients changed: other conversations, other keys, another result from the same seed
        assertThat(Files.readString(dir.resolve("keyless/summary.json")))
                .isNotEqualTo(Files.readString(dir.resolve("keyed/summary.json")));
        // the options not given take the defaults, and the report gives all three
        assertThat(Files.readString(dir.resolve("keyless/report.md"))).contains("bin/sextant simulate "
                + "talk-example.yaml --keyed-share 0 --system-prompts 2 --system-prompt-tokens 1500 --seed 1");
        assertThat(Files.readString(dir.resolve("keyed/report.md"))).doesNotContain("--keyed-share");
    }

    @Test
    void simulate_clientsOutOfRange_exit2NamingTheOption(@TempDir Path dir) {
        assertThat(run("simulate", scenario("talk-example.yaml").toString(), "--keyed-share", "1.5", "--out",
                dir.toString())).isEqualTo(2);
        assertThat(err.toString()).contains("--keyed-share: 1.5 (expected: in [0, 1])");
        assertThat(run("simulate", scenario("talk-example.yaml").toString(), "--system-prompts", "0", "--out",
                dir.toString())).isEqualTo(2);
        assertThat(err.toString()).contains("--system-prompts: 0 (expected: an integer from 1 to 1000000)");
        // a scenario file's bounds: two billion prompts once ran for hours, drawing each conversation's by a scan
        assertThat(run("simulate", scenario("talk-example.yaml").toString(), "--system-prompts", "2000000000",
                "--out", dir.toString())).isEqualTo(2);
        assertThat(err.toString()).contains("--system-prompts: 2000000000 (expected: an integer from 1 to 1000000)");
        assertThat(run("simulate", scenario("talk-example.yaml").toString(), "--system-prompt-tokens", "2e9",
                "--out", dir.toString())).isEqualTo(2);
        assertThat(err.toString()).contains("--system-prompt-tokens: 2.0E9 (expected: a number from 0 to 10000000)");
        assertThat(run("simulate", scenario("talk-example.yaml").toString(), "--system-prompt-tokens", "-1",
                "--out", dir.toString())).isEqualTo(2);
        assertThat(err.toString()).contains("--system-prompt-tokens: -1.0 (expected: a number from 0 to 10000000)")
                .doesNotContain("Exception");
    }

    @Test
    void simulate_missingScenario_exits2AndSaysSo(@TempDir Path dir) {
        int code = run("simulate", dir.resolve("nope.yaml").toString(), "--out", dir.toString());

        assertThat(code).isEqualTo(2);
        assertThat(err.toString()).contains("nope.yaml: no such file").doesNotContain("Exception");
    }

    @Test
    void simulate_outThatIsAFile_exits2BeforeSimulating(@TempDir Path dir) throws Exception {
        Path file = java.nio.file.Files.writeString(dir.resolve("taken"), "x");
        int code = run("simulate", scenario("talk-example.yaml").toString(), "--out", file.toString());

        assertThat(code).isEqualTo(2);
        assertThat(err.toString()).contains("--out: " + file + ": not a folder").doesNotContain("Exception");
        int below = run("simulate", scenario("talk-example.yaml").toString(), "--out", file.resolve("sub").toString());
        assertThat(below).isEqualTo(2);
        assertThat(err.toString()).contains("cannot make the folder");
    }

    @Test
    void simulate_aPolicyTwice_orAFolderForScenario_exits2Upfront(@TempDir Path dir) {
        assertThat(run("simulate", scenario("talk-example.yaml").toString(), "--policies", "sextant,nearest,sextant",
                "--out", dir.toString())).isEqualTo(2);
        assertThat(err.toString()).contains("--policies: 'sextant' twice (expected: each policy once)");
        // a name the scenario's gain sweep also runs (talk-example sweeps gains 0.1 and 2.0)
        assertThat(run("simulate", scenario("talk-example.yaml").toString(), "--policies",
                "legacy-feedback,legacy-feedback[gain=0.1]", "--out", dir.toString())).isEqualTo(2);
        assertThat(err.toString()).contains("--policies: 'legacy-feedback[gain=0.1]' twice");
        assertThat(run("simulate", dir.toString(), "--out", dir.resolve("o").toString())).isEqualTo(2);
        assertThat(err.toString()).contains(dir + ": a folder (expected: a scenario file)");
        // a device is there but is no file to read a scenario from; "no such file" would send the user looking
        assertThat(run("simulate", "/dev/null", "--out", dir.resolve("o").toString())).isEqualTo(2);
        assertThat(err.toString()).contains("/dev/null: not a regular file (expected: a scenario file)");
    }

    @Test
    void simulate_aSextantVariantsOptions_stayTogether_andAnUnknownOneIsNamed(@TempDir Path dir) {
        int code = run("simulate", scenario("talk-example.yaml").toString(), "--policies",
                "nearest,sextant[space_prefills=false,max_walk=2]", "--out", dir.toString());

        assertThat(code).isEqualTo(2);
        assertThat(err.toString()).contains("sextant option 'max_walk' (expected: space_prefills, "
                + "spread_shared_prefixes, keep_in_region or demand_hold)");
    }

    @Test
    void simulate_unknownPolicy_exits2NamingTheKnownOnes(@TempDir Path dir) {
        int code = run("simulate", scenario("talk-example.yaml").toString(), "--policies", "bogus", "--out",
                dir.toString());

        assertThat(code).isEqualTo(2);
        assertThat(err.toString()).contains("bogus", "sextant", "legacy-feedback");
    }

    @Test
    void simulate_intoAFile_writesOneProgressLinePerPolicy_andAlignsTheTable(@TempDir Path dir) throws Exception {
        java.io.ByteArrayOutputStream progress = new java.io.ByteArrayOutputStream();
        StringWriter table = new StringWriter();
        int code = new picocli.CommandLine(new SimulateCommand(new PrintWriter(table, true),
                new java.io.PrintStream(progress, true, java.nio.charset.StandardCharsets.UTF_8)))
                .execute(scenario("talk-example.yaml").toString(), "--policies", "sextant,legacy-feedback[gain=0.1]",
                        "--seed", "3", "--out", dir.toString());

        assertThat(code).isZero();
        String lines = progress.toString(java.nio.charset.StandardCharsets.UTF_8);
        assertThat(lines).doesNotContain("\r").doesNotContain("[#");
        assertThat(lines.lines()).hasSize(2).allMatch(l -> l.contains(" done: "));
        java.util.List<String> rows = table.toString().lines().filter(l -> l.contains(" ms ")).toList();
        assertThat(rows).hasSize(2);
        assertThat(rows.get(0).indexOf(" ms ")).isEqualTo(rows.get(1).indexOf(" ms "));
        // the header's "ttft p50" ends where the first row's "… ms" does
        assertThat(table.toString().lines().findFirst().orElseThrow().indexOf("ttft p50") + 8)
                .isEqualTo(rows.get(0).indexOf(" ms ") + 3);
    }

    @Test
    void simulate_withoutACompletedRequest_printsADash_notNaN(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("idle.yaml");
        java.nio.file.Files.writeString(file, """
                name: idle
                duration_s: 20
                hardware:
                  h100: {step_ms: 6.0, prefill_ms_per_token: 0.0002, decode_ms_per_seq: 0.05, max_seqs: 64,
                         kv_cache_tokens: 400000, chunk_tokens: 4096}
                workload:
                  default: {turns_mean: 3, think_s: 5, first_prompt_tokens: 500, new_tokens_per_turn: 50,
                            output_tokens: 100}
                topology:
                  gateway_clusters: [{id: east, region: us-east}]
                  engine_clusters: [{id: gpu-east, region: us-east}]
                  network_rtt_ms: {east: {gpu-east: 2}}
                  models: [{id: m, output_tokens: 100}]
                  engines: [{id: e1, cluster: gpu-east, models: [m], hardware: h100}]
                  classes: [{id: c, model: m, priority: 0}]
                  demand_rps: {east: {c: 0}}
                """);
        StringWriter table = new StringWriter();
        int code = new picocli.CommandLine(new SimulateCommand(new PrintWriter(table, true),
                new java.io.PrintStream(new java.io.ByteArrayOutputStream(), true, java.nio.charset.StandardCharsets.UTF_8)))
                .execute(file.toString(), "--policies", "sextant,nearest", "--out", dir.resolve("out").toString());

        assertThat(code).isZero();
        java.util.List<String> rows = table.toString().lines()
                .filter(l -> l.startsWith("sextant") || l.startsWith("nearest")).toList();
        assertThat(rows).hasSize(2).allMatch(l -> l.contains(" – ") && !l.contains("NaN"));
    }
}
