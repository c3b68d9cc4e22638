package dev.sextant.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The bench scripts (sextant-server/bench) still work: shellcheck finds nothing in them, every run the docs cite is a
 * named run of {@code run.sh}, named runs go end to end under {@code run.sh NAME --smoke} (a second of load a step)
 * and print their result lines, and {@code etcd-cluster.sh --smoke} brings its fleet up. Runs in the integration-test phase, after the package phase has built
 * {@code sextant.jar} (sextant-app, before this module) and {@code benchmarks.jar} (this module).
 *
 * <p>By default one named run per script is smoked, the one with the most options set, to keep the build short (every
 * run starts its own JVMs and servers, and the smoke of every named run takes about four times as long);
 * {@code -Dbench.smoke=all} smokes every named run, {@code -Dbench.smoke=NAME,NAME} those. The tools are not
 * optional: a missing one fails the test with the Debian package to install ({@code .ci/run} installs them).
 * Run alone (the other tests matched by none):
 * {@code mvn -B -pl sextant-bench -am verify -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false}.
 */
class BenchScriptsIT {
    private static final Path ROOT = Path.of("").toAbsolutePath().getParent();
    private static final Path BENCH = ROOT.resolve("sextant-server/bench");
    private static final long SMOKE_DEADLINE_SECONDS = 300;

    /** One named run per script, the one that sets the most of its options. */
    private static final List<String> ONE_PER_SCRIPT = List.of("gateway", "alloc", "warmup", "streams", "streams-h2",
            "control-plane-l", "overload-priority-engines", "listener-floods", "tenant-burst", "soak-2min");

    /** The lines each script prints at the end of a run (patterns found in its output, multiline). */
    private static final Map<String, List<String>> RESULT_LINES = Map.of(
            "proxy.sh", List.of("^round=1 sextant offered=5000 requests=[1-9]\\d* .*cpu_us_per_req=",
                    "^sextant offered=5000 added_p99_ms median=", "^sextant gateway-measured overhead: requests=[1-9]",
                    "^round=1 haproxy offered=0 requests=[1-9]", "^sextant max_rps_to_haproxy median="),
            "alloc.sh", List.of("^round=1 gateway=this-tree requests=[1-9]\\d* young_gcs_in_window=\\d+ bytes_per_req=\\d+"),
            "warmup.sh", List.of("^rep=1 target=engine run=1 requests=[1-9]", "^rep=1 target=warm run=1 requests=[1-9]",
                    "^target=cold run=1 p99_ms median="),
            "streams.sh", List.of("^open streams at 1 s: \\d+", "^RESULT streams=[1-9]", "^gateway status codes: .*200="),
            "streams-h2.sh", List.of("^requests: 100 total", "^gateway status codes: 200=100\\b",
                    "^engine generated tokens: 100 \\(expected 100"),
            "control-l.sh", List.of("^after start: [1-9]\\d* solves", "^first polls after a publication: 16 polls",
                    "^explain \\S+ \\(2\\): ", "^engines not healthy in the control plane's log: 0$",
                    "^control plane RSS: \\d+ MiB"),
            "overload.sh", List.of("^unloaded high answers=[1-9]", "^overload (high|normal|low) answers=[1-9]",
                    "^probe gateway-healthz answers=", "^overload totals: client requests [1-9]"),
            "tenant-burst.sh", List.of("^round=1 phase=alone tenant=b answers=[1-9]",
                    "^round=1 phase=burst tenant=a answers=[1-9]", "^round=1 phase=fair tenant=b answers=[1-9]",
                    "^b ttft_p99 burst/alone median=", "^burst b refused: shed=\\d+ other=\\d+"),
            "listener-floods.sh", List.of("^round=1 listener=(control|gateway) flood=bodies ",
                    "^(engine|gateway) slow-heads non2xx=\\d+ socket_errors=\\d+ \\(all rounds\\)"),
            "soak.sh", List.of("^RESULT plain answers=[1-9]", "^RESULT stream answers=[1-9]",
                    "^Netty LEAK reports in the gateway log: 0$", "^gateway status counts: .*:200="));

    /** What a proxy.sh run with MAX_ONLY=1 prints instead: no paced rounds, only the maximum throughput's. */
    private static final List<String> MAX_ONLY_LINES = List.of(
            "^round=1 sextant offered=0 requests=[1-9]\\d* .*cpu_us_per_req=", "^round=1 haproxy offered=0 requests=[1-9]",
            "^sextant max_rps_to_haproxy median=");

    /** The tools a script needs, with the Debian package that has each. */
    private static final Map<String, String> PACKAGES = Map.of("wrk", "wrk", "curl", "curl", "haproxy", "haproxy",
            "tcpdump", "tcpdump", "h2load", "nghttp2-client", "jcmd", "a JDK", "shellcheck", "shellcheck",
            "etcd", "etcd-server");

    @Test
    void shellcheck_findsNothing() throws Exception {
        requireTools("shellcheck");
        List<String> command = new ArrayList<>(List.of("shellcheck", "-x"));
        try (Stream<Path> files = Files.list(BENCH)) {
            files.filter(f -> f.toString().endsWith(".sh")).sorted().forEach(f -> command.add(f.getFileName().toString()));
        }
        Result r = run(BENCH, 120, command);
        assertThat(r.output).as("shellcheck's findings").isEmpty();
        assertThat(r.exit).isZero();
    }

    @Test
    void everyRunTheDocsCite_isANamedRun_ofAScriptThatExists() throws Exception {
        Map<String, Run> runs = namedRuns();
        assertThat(runs).containsKeys(ONE_PER_SCRIPT.toArray(String[]::new));
        runs.values().forEach(run -> assertThat(BENCH.resolve(run.script)).isExecutable());
        assertThat(runs.values().stream().map(Run::script).distinct())
                .containsExactlyInAnyOrderElementsOf(RESULT_LINES.keySet());

        Pattern cited = Pattern.compile("bench/run\\.sh ([a-z0-9-]+)");
        Pattern withOptions = Pattern.compile("[A-Z_]+=\\S+ (sextant-server/)?bench/(?!run\\.sh)\\w+\\.sh");
        Set<String> citations = new TreeSet<>();
        List<String> scriptsWithOptions = new ArrayList<>();
        List<Path> docs = new ArrayList<>(List.of(ROOT.resolve("BENCHMARKS.md")));
        try (Stream<Path> files = Files.list(ROOT.resolve("docs"))) {
            files.filter(f -> f.toString().endsWith(".md")).forEach(docs::add);
        }
        for (Path doc : docs) {
            String text = Files.readString(doc);
            Matcher m = cited.matcher(text);
            while (m.find()) {
                citations.add(m.group(1));
            }
            // a doc cites the named run, not the script with options in front of it
            text.lines().filter(l -> withOptions.matcher(l).find())
                    .forEach(l -> scriptsWithOptions.add(doc.getFileName() + ": " + l));
        }
        assertThat(scriptsWithOptions).as("lines that cite a script with its options").isEmpty();
        assertThat(citations).as("runs cited in BENCHMARKS.md and docs/").isNotEmpty();
        assertThat(runs.keySet()).containsAll(citations);
    }

    @ParameterizedTest(name = "run.sh {0} --smoke")
    @MethodSource("smoked")
    void namedRun_goesEndToEnd_andPrintsItsResultLines(String name) throws Exception {
        Run run = namedRuns().get(name);
        assertThat(run).as("a named run").isNotNull();
        requireTools(run.tools());
        Result r = run(ROOT, SMOKE_DEADLINE_SECONDS, List.of(BENCH.resolve("run.sh").toString(), name, "--smoke"));
        assertThat(r.exit).as("exit status of run.sh %s --smoke; its output:%n%s", name, r.output).isZero();
        for (String line : run.command.contains("MAX_ONLY=1") ? MAX_ONLY_LINES : RESULT_LINES.get(run.script)) {
            assertThat(r.output).as("a line matching %s in:%n%s", line, r.output)
                    .containsPattern(Pattern.compile(line, Pattern.MULTILINE));
        }
    }

    /**
     * {@code etcd-cluster.sh}, a runbook rather than a benchmark (no named run): its etcd members, control planes and
     * engines start, and the engine it registers through etcd reaches both control planes' topology.
     */
    @Test
    void etcdCluster_smoke_startsItsFleet_andTheRegisteredEngineReachesBothControlPlanes() throws Exception {
        requireTools("etcd", "curl");
        Result r = run(ROOT, SMOKE_DEADLINE_SECONDS, List.of(BENCH.resolve("etcd-cluster.sh").toString(), "--smoke"));
        assertThat(r.exit).as("exit status of etcd-cluster.sh --smoke; its output:%n%s", r.output).isZero();
        assertThat(r.output).contains("control plane 7071: east-2 registered through etcd")
                .contains("control plane 7072: east-2 registered through etcd");
    }

    static List<String> smoked() throws Exception {
        String which = System.getProperty("bench.smoke", "");
        if (which.isBlank()) {
            return ONE_PER_SCRIPT;
        }
        return which.equals("all") ? List.copyOf(namedRuns().keySet()) : Arrays.asList(which.split(","));
    }

    /** A named run: the script it runs and its whole command (settings, script, arguments). */
    private record Run(String script, String command) {
        /** The tools the run needs besides bash and a JDK's. */
        String[] tools() {
            List<String> tools = new ArrayList<>(List.of("curl", "jcmd"));
            tools.add(script.equals("streams-h2.sh") ? "h2load" : "wrk");
            if (script.equals("proxy.sh")) {
                tools.add("haproxy");
            }
            if (command.contains("CAPTURE=1")) {
                tools.add("tcpdump");
            }
            return tools.toArray(String[]::new);
        }
    }

    /** The named runs by name, from {@code run.sh --list}: a line with the name, then one with the command. */
    private static Map<String, Run> namedRuns() throws Exception {
        Result r = run(ROOT, 30, List.of(BENCH.resolve("run.sh").toString(), "--list"));
        assertThat(r.exit).as(r.output).isZero();
        Map<String, Run> runs = new LinkedHashMap<>();
        String[] lines = r.output.split("\n");
        Pattern script = Pattern.compile("(\\S+\\.sh)");
        for (int i = 0; i + 1 < lines.length; i += 2) {
            Matcher m = script.matcher(lines[i + 1]);
            assertThat(m.find()).as("a script in %s", lines[i + 1]).isTrue();
            String name = lines[i].split("\\s+")[0];
            assertThat(runs.put(name, new Run(m.group(1), lines[i + 1].strip()))).as("a second run named " + name).isNull();
        }
        return runs;
    }

    private static void requireTools(String... tools) throws Exception {
        for (String tool : tools) {
            Result r = run(ROOT, 30, List.of("sh", "-c", "command -v " + tool));
            assertThat(r.exit).as("%s is needed (Debian package: %s; .ci/run installs it)", tool, PACKAGES.get(tool))
                    .isZero();
        }
    }

    private record Result(int exit, String output) {}

    /** Runs a command to its end or its deadline (then it and its children are killed and the test fails). */
    private static Result run(Path dir, long deadlineSeconds, List<String> command) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
        pb.environment().remove("OUT");
        Process p = pb.start();
        CompletableFuture<String> output = CompletableFuture.supplyAsync(() -> readAll(p.getInputStream()));
        if (!p.waitFor(deadlineSeconds, TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroy);
            p.destroy();
            p.waitFor(10, TimeUnit.SECONDS);
            throw new AssertionError(command + " did not end within " + deadlineSeconds + " s; its output:\n"
                    + output.getNow("(unread)"));
        }
        return new Result(p.exitValue(), output.get(10, TimeUnit.SECONDS));
    }

    private static String readAll(InputStream in) {
        try (in) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
