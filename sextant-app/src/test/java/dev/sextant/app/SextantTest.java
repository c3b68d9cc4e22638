package dev.sextant.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.config.SnapshotJson;
import dev.sextant.policy.Explanation;
import dev.sextant.policy.RoutingPolicy;
import dev.sextant.policy.SolveOptions;
import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Objective;
import dev.sextant.snapshot.RetryBudget;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SextantTest {

    static final String TALK = Path.of("..", "examples", "talk.yaml").toString();

    /** What a fake policy was asked to do. */
    final List<Topology> topologies = new ArrayList<>();
    final List<SolveOptions> options = new ArrayList<>();

    String stdout = "";
    String stderr = "";

    static Snapshot snapshot(String policy, double eastLoad, double meanLatency, double gap) {
        return new Snapshot(1, "", policy, 0.8, RetryBudget.DEFAULT,
                Map.of("east", Map.of("chat", new Route("llama-3.1-70b", List.of(), 0, 120,
                        Map.of("east-1", eastLoad / 120, "west-1", 1 - eastLoad / 120), 0, 4100))),
                Map.of("east-1", new EngineState("gpu-east", "us-east", "http://127.0.0.1:9101", List.of("llama-3.1-70b"),
                                eastLoad, 100, 90, eastLoad / 100, 4000, 9000, 0, 1),
                        "west-1", new EngineState("gpu-west", "us-west", "http://127.0.0.1:9102",
                                List.of("llama-3.1-70b"), 160 - eastLoad, 80, 72, (160 - eastLoad) / 80, 4000, 9000, 0, 1)),
                Map.of("east", Map.of("gpu-east", 2.0, "gpu-west", 60.0)),
                new Objective(meanLatency, meanLatency * 160, meanLatency * 160 * (1 - gap), gap, 0, 3));
    }

    RoutingPolicy fake(String name, Snapshot result) {
        return new RoutingPolicy() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public Snapshot solve(Topology topology, SolveOptions o) {
                topologies.add(topology);
                options.add(o);
                return result;
            }
        };
    }

    static final Explanation EXPLANATION = new Explanation("east", "chat", 120, 4100, 0, List.of(
            new Explanation.EngineLine("east-1", 0.7, 2, 4000, 4100, 0.93, 0, 1, "nearest")), List.of(),
            List.of("east-1 is nearest."));

    Services fakes() {
        Map<String, Snapshot> byName = Map.of(
                "optimal", snapshot("optimal", 88, 4500, 2e-7),
                "nearest", snapshot("nearest", 120, Double.POSITIVE_INFINITY, Double.NaN),
                "waterfall", snapshot("waterfall", 90, 4950, Double.NaN),
                "proportional", snapshot("proportional", 89, 9000, Double.NaN));
        return new Services(name -> fake(name, byName.get(name)),
                (t, s, g, c) -> EXPLANATION, e -> "explained " + e.gateway() + "/" + e.classId());
    }

    int run(Services services, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Sextant.run(services, new PrintWriter(out), new PrintWriter(err), args);
        stdout = out.toString();
        stderr = err.toString();
        return code;
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"solve", "explain", "compare", "demo", "gateway",
        "control-plane", "engine", "register", "simulate", "sweep"})
    void everyCommand_answersHelp_bothWays(String command) {
        // "Try 'sextant solve --help'" is what a usage error says: it must work
        assertThat(run(fakes(), command, "--help")).as(stderr).isZero();
        assertThat(stdout).startsWith("Usage: sextant " + command);
        assertThat(run(fakes(), "help", command)).as(stderr).isZero();
        assertThat(stdout).startsWith("Usage: sextant " + command);
        assertThat(run(fakes(), command, "--version")).as(stderr).isZero();
        assertThat(stdout).startsWith("sextant ");
    }

    @Test
    void engineHelp_listsTheEmulatorsOptions_besidesConfig() {
        assertThat(run(fakes(), "engine", "--help")).as(stderr).isZero();
        assertThat(stdout).contains("--config=ENGINE.yaml").contains("The emulator's options")
                .contains("--max-seqs N").contains("(default: 64)").contains("--decode-base-ms X")
                .contains("--scheduling-policy fcfs|priority").contains("--admin-token-file FILE")
                .contains("--max-buffered-body-bytes N");
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"-V", "--version"})
    void version_printsTheVersionMavenBuilt(String option) {
        assertThat(run(fakes(), option)).as(stderr).isZero();
        assertThat(stdout.strip()).matches("sextant \\d+\\.\\d+\\.\\d+(-SNAPSHOT)?");
    }

    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.CsvSource(delimiter = '|', textBlock = """
            no etcd            | --id e1 --endpoint http://127.0.0.1:9 --cluster c --hardware h --models m                         | register: --etcd: missing (expected: the etcd members, or --config with an etcd map)
            bad endpoint       | --etcd http://127.0.0.1:9 --id e1 --endpoint 127.0.0.1:9 --cluster c --hardware h --models m       | register: --endpoint: '127.0.0.1:9' (expected: an http:// or https:// URL with a host, such as http://10.0.0.7:8000)
            id with slash      | --etcd http://127.0.0.1:9 --id a/b --endpoint http://h:1 --cluster c --hardware h --models m       | register: --id: 'a/b' (expected: a non-empty id without /)
            bad scheduling     | --etcd http://127.0.0.1:9 --id e1 --endpoint http://h:1 --cluster c --hardware h --models m --priority-scheduling fifo | register: --priority-scheduling: 'fifo' (expected: none, lower_first or higher_first)
            relative metrics   | --etcd http://127.0.0.1:9 --id e1 --endpoint http://h:1 --cluster c --hardware h --models m --metrics-path metrics | register: --metrics-path: 'metrics' (expected: a path starting with /, or none for an engine without metrics)
            zero health period | --etcd http://127.0.0.1:9 --id e1 --endpoint http://h:1 --cluster c --hardware h --models m --health-interval 0 | register: --health-interval: 0.0 (expected: seconds from 0.1 to 3600)
            nanosecond health  | --etcd http://127.0.0.1:9 --id e1 --endpoint http://h:1 --cluster c --hardware h --models m --health-interval 1e-9 | register: --health-interval: 1.0E-9 (expected: seconds from 0.1 to 3600)
            yearly health      | --etcd http://127.0.0.1:9 --id e1 --endpoint http://h:1 --cluster c --hardware h --models m --health-interval 3e7 | register: --health-interval: 3.0E7 (expected: seconds from 0.1 to 3600)
            etcd not a URL     | --etcd ftp://h:1 --id e1 --endpoint http://h:1 --cluster c --hardware h --models m                 | register: --etcd: ftp://h:1 (expected: http://host:port or https://host:port)
            """)
    void register_badInput_isRefusedNamingTheOption_beforeAnythingStarts(String kind, String args, String message) {
        String[] words = ("register " + args.trim()).split(" +");
        assertThat(run(fakes(), words)).as(kind).isEqualTo(Sextant.EXIT_BAD_INPUT);
        assertThat(stderr.lines().toList()).as(kind).containsExactly(message);
    }

    @Test
    void unknownCommand_isNamed_withTheCommandsThereAre() {
        assertThat(run(fakes(), "x")).isEqualTo(Sextant.EXIT_BAD_INPUT);
        assertThat(stderr.lines().toList()).containsExactly(
                "sextant: unknown command 'x' (expected one of: solve, explain, compare, demo, gateway, control-plane,"
                        + " engine, hash-key, register, simulate, sweep, accuracy, help)",
                "Try 'sextant --help'.");
        assertThat(stdout).isEmpty();
    }

    @Test
    void unknownOption_isStillReportedAsAnOption() {
        assertThat(run(fakes(), "--frobnicate")).isEqualTo(Sextant.EXIT_BAD_INPUT);
        assertThat(stderr).startsWith("sextant: Unknown option: '--frobnicate'");
    }

    @Test
    void solve_talkYaml_printsSnapshotJsonOfChosenPolicy() {
        int code = run(fakes(), "solve", TALK, "--policy", "waterfall");

        assertThat(code).isZero();
        assertThat(stdout).isEqualTo(SnapshotJson.write(snapshot("waterfall", 90, 4950, Double.NaN)));
        assertThat(stderr).isEmpty();
        assertThat(options).singleElement().isEqualTo(SolveOptions.defaults());
        assertThat(topologies.get(0).affinityDiscountMs()).isEqualTo(Topology.DEFAULT_AFFINITY_DISCOUNT_MS);
    }

    @Test
    void solve_options_reachThePolicy(@TempDir Path dir) throws Exception {
        Snapshot previous = snapshot("optimal", 88, 4500, 2e-7).sealed(7);
        Path prev = dir.resolve("prev.json");
        Files.writeString(prev, SnapshotJson.write(previous));

        int code = run(fakes(), "solve", TALK, "--previous", prev.toString(), "--gap-tolerance", "1e-4",
                "--affinity-discount-ms", "5");

        assertThat(code).as(stderr).isZero();
        assertThat(options).singleElement().satisfies(o -> {
            assertThat(o.version()).isEqualTo(8);
            assertThat(o.previous()).isEqualTo(previous);
            assertThat(o.gapTolerance()).isEqualTo(1e-4);
        });
        assertThat(topologies.get(0).affinityDiscountMs()).isEqualTo(5);
    }

    @Test
    void solve_badYaml_exits2WithFileAndLineAndNoStackTrace(@TempDir Path dir) throws Exception {
        Path bad = dir.resolve("bad.yaml");
        Files.writeString(bad, Files.readString(Path.of(TALK)).replace("capacity_rps: 80", "capacity_rps: -3"));

        int code = run(Services.production(), "solve", bad.toString());

        assertThat(code).isEqualTo(2);
        assertThat(stderr).isEqualTo(bad + ":26: engines[1].capacity_rps: -3.0 (expected: a finite number > 0)\n");
        assertThat(stdout).isEmpty();
    }

    @Test
    void solve_yamlSyntaxError_exits2WithLine(@TempDir Path dir) throws Exception {
        Path bad = dir.resolve("bad.yaml");
        Files.writeString(bad, "gateway_clusters:\n  - {id: east\nengines: [\n");

        int code = run(Services.production(), "solve", bad.toString());

        assertThat(code).isEqualTo(2);
        assertThat(stderr).startsWith(bad + ":").contains("YAML syntax").doesNotContain("\tat ");
    }

    @Test
    void solve_missingFile_exits2() {
        assertThat(run(Services.production(), "solve", "no-such.yaml")).isEqualTo(2);
        assertThat(stderr).startsWith("no-such.yaml: cannot read");
    }

    @Test
    void solve_badPreviousSnapshot_exits2WithFileAndLine(@TempDir Path dir) throws Exception {
        Path prev = dir.resolve("prev.json");
        Files.writeString(prev, "{\n  \"version\": -1\n}\n");

        int code = run(fakes(), "solve", TALK, "--previous", prev.toString());

        assertThat(code).isEqualTo(2);
        assertThat(stderr).startsWith(prev + ":").hasLineCount(1);
        assertThat(options).isEmpty();
    }

    /** The next version of Long.MAX_VALUE overflowed: "internal error". Above 2^53 − 1 no control plane reaches. */
    @Test
    void solve_previousSnapshotOfAVersionNoControlPlaneReaches_exits2AtItsLine(@TempDir Path dir) throws Exception {
        Path prev = dir.resolve("prev.json");
        Files.writeString(prev, SnapshotJson.write(snapshot("optimal", 88, 4500, 2e-7).sealed(Long.MAX_VALUE)));
        int line = lineOf(Files.readString(prev), "\"version\"");

        int code = run(Services.production(), "solve", TALK, "--previous", prev.toString());

        assertThat(code).as(stderr).isEqualTo(2);
        assertThat(stderr).startsWith(prev + ":" + line + ": version: a previous snapshot's version "
                + Long.MAX_VALUE + " (expected: 1..9007199254740991").hasLineCount(1);
        Files.writeString(prev, SnapshotJson.write(snapshot("optimal", 88, 4500, 2e-7).sealed((1L << 53) - 1)));
        assertThat(run(Services.production(), "solve", TALK, "--previous", prev.toString())).as(stderr).isZero();
        assertThat(SnapshotJson.read(stdout).version()).isEqualTo(1L << 53);
    }

    private static int lineOf(String text, String needle) {
        return text.substring(0, text.indexOf(needle)).split("\n", -1).length;
    }

    @Test
    void solve_badOptionValues_exit2WithOneLineEach() {
        assertThat(run(fakes(), "solve", TALK, "--policy", "fastest")).isEqualTo(2);
        assertThat(stderr).isEqualTo("solve: --policy: 'fastest' (expected one of [optimal, nearest, waterfall, proportional])\n");

        assertThat(run(fakes(), "solve", TALK, "--gap-tolerance", "0")).isEqualTo(2);
        assertThat(stderr).contains("--gap-tolerance: 0.0 (expected: > 0)");

        assertThat(run(fakes(), "solve", TALK, "--affinity-discount-ms", "-1")).isEqualTo(2);
        assertThat(stderr).contains("--affinity-discount-ms: -1.0");
        assertThat(run(fakes(), "solve", TALK, "--affinity-discount-ms", "1e40")).isEqualTo(2);
        assertThat(stderr).contains("--affinity-discount-ms: 1.0E40 (expected: a number from 0 to 100000000, like "
                + "affinity_discount_ms in a topology file)");

        assertThat(run(fakes(), "solve", TALK, "--gap-tolerance", "tiny")).isEqualTo(2);
        assertThat(stderr).startsWith("solve: Invalid value for option '--gap-tolerance'");

        assertThat(run(fakes(), "solve", TALK, "--frobnicate")).isEqualTo(2);
        assertThat(stderr).startsWith("solve: Unknown option: '--frobnicate'");

        assertThat(run(fakes(), "solve")).isEqualTo(2);
        assertThat(run(fakes())).isEqualTo(2);
        assertThat(run(fakes(), "frobnicate")).isEqualTo(2);
        assertThat(options).isEmpty();
    }

    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.CsvSource(delimiter = '|', textBlock = """
            demo --load -5                        | --load: -5.0 (expected: 0..10000 requests per second)
            demo --load 1e12                      | --load: 1.0E12 (expected: 0..10000
            demo --every 0                        | --every: 0.0 (expected: seconds from 0.1 to 86400)
            demo --every 1e-9                     | --every: 1.0E-9 (expected: seconds from 0.1 to 86400)
            demo --every 1e300                    | --every: 1.0E300 (expected: seconds from 0.1 to 86400)
            demo --port 70000                     | --port: 70000 (expected: 0..65535, 0 for any free port)
            demo --control-port -1                | --control-port: -1 (expected: 0..65535
            demo --duration -1                    | --duration: -1.0 (expected: seconds >= 0; 0 or none: until Ctrl-C)
            gateway --config x.yaml --duration -1 | --duration: -1.0
            gateway --config x.yaml --port 70000  | --port: 70000
            control-plane --config x.yaml --duration NaN | --duration: NaN
            """)
    void serverOptionsOutOfRange_exit2BeforeAnythingStarts(String args, String says) {
        // nothing starts: the options are checked before a config file (here none) is read or a port opened
        assertThat(run(fakes(), args.split(" "))).isEqualTo(2);
        assertThat(stderr).contains(says).doesNotContain("internal error");
    }

    @Test
    void solve_policyFails_exits1WithMessageAndStackTraceOnlyWhenVerbose() {
        Services broken = new Services(name -> {
            throw new UnsupportedOperationException(name + ": being built");
        }, (t, s, g, c) -> EXPLANATION, e -> "");

        assertThat(run(broken, "solve", TALK)).isEqualTo(1);
        assertThat(stderr).isEqualTo("solve: internal error: java.lang.UnsupportedOperationException: optimal: being built\n");

        assertThat(run(broken, "solve", TALK, "--verbose")).isEqualTo(1);
        assertThat(stderr).contains("\tat ");
    }

    @Test
    void explain_printsExplainersText() {
        int code = run(fakes(), "explain", TALK, "--gateway", "east", "--class", "chat");

        assertThat(code).as(stderr).isZero();
        assertThat(stdout).startsWith("explained east/chat\nEstimates behind it (docs/control-loop.md):\nEngines:\n"
                + "  east-1 HEALTHY (health 1.00): capacity 100 req/s as configured (no evidence yet).")
                .as("the engines the explanation names, nothing of a step that never ran").doesNotContain("west-1")
                .doesNotContain("Last step")
                .contains("Demand:\n  east/chat: 120.0 req/s — configured (no report yet)\n")
                .contains("Round trips:\n  east → gpu-east: 2.0 ms").contains("east → gpu-west: 60.0 ms")
                .doesNotContain("west/chat");
    }

    @Test
    void explain_json_printsExplanationRecordInSnakeCase() throws Exception {
        int code = run(fakes(), "explain", TALK, "--gateway", "east", "--class", "chat", "--json");

        assertThat(code).as(stderr).isZero();
        assertThat(stdout).contains("\"class_id\" : \"chat\"").contains("\"engine_latency_ms\" : 4000.0");
        com.fasterxml.jackson.databind.JsonNode estimates = dev.sextant.server.internal.Http.JSON.readTree(stdout)
                .path("estimates");
        assertThat(estimates.path("engines").fieldNames()).toIterable().containsExactly("east-1");
        assertThat(estimates.path("engines").path("east-1").path("condition").asText()).isEqualTo("healthy");
        assertThat(estimates.path("engines").path("east-1").path("capacity_rps").asDouble()).isEqualTo(100.0);
        assertThat(estimates.path("demand").path("chat").path("rps").asDouble()).isEqualTo(120.0);
        assertThat(estimates.path("round_trips").path("gpu-west").path("ms").asDouble()).isEqualTo(60.0);
        assertThat(estimates.path("last_step").isNull()).isTrue();
    }

    @Test
    void explain_unknownGatewayOrClass_exits2() {
        assertThat(run(fakes(), "explain", TALK, "--gateway", "north", "--class", "chat")).isEqualTo(2);
        assertThat(stderr).isEqualTo("explain: --gateway: unknown gateway cluster 'north' (expected one of [east, west])\n");

        assertThat(run(fakes(), "explain", TALK, "--gateway", "east", "--class", "batch")).isEqualTo(2);
        assertThat(stderr).isEqualTo("explain: --class: unknown class 'batch' (expected one of [chat])\n");

        assertThat(run(fakes(), "explain", TALK, "--class", "chat")).isEqualTo(2);
        assertThat(stderr).contains("--gateway");
    }

    @Test
    void compare_printsOneRowPerPolicyWithRatioToOptimal() {
        int code = run(fakes(), "compare", TALK);

        assertThat(code).as(stderr).isZero();
        String[] lines = stdout.split("\n");
        assertThat(lines).hasSize(5);
        assertThat(lines[0]).startsWith("policy").contains("mean latency ms", "worst utilization", "shed req/s", "gap",
                "vs optimal");
        assertThat(lines[1]).matches("optimal\\s+4500\\.0\\s+100\\.0%\\s+0\\.0\\s+2\\.0e-07\\s+1\\.00x");
        assertThat(lines[2]).matches("nearest\\s+unbounded \\(engine east-1 over capacity\\)\\s+133\\.3%\\s+0\\.0\\s+-\\s+unbounded");
        assertThat(lines[3]).matches("waterfall\\s+4950\\.0\\s+100\\.0%\\s+0\\.0\\s+-\\s+1\\.10x");
        assertThat(lines[4]).matches("proportional\\s+9000\\.0\\s+98\\.9%\\s+0\\.0\\s+-\\s+2\\.00x");
    }

    @Test
    void compare_policyFails_showsItInItsRowAndExits1() {
        Services fakes = fakes();
        Services oneBroken = new Services(name -> {
            if (name.equals("waterfall")) {
                throw new UnsupportedOperationException("waterfall: being built");
            }
            return fakes.policies().apply(name);
        }, fakes.explain(), fakes.toText());

        assertThat(run(oneBroken, "compare", TALK)).isEqualTo(1);
        assertThat(stdout).contains("waterfall     failed: waterfall: being built").contains("1.00x");
    }
}
