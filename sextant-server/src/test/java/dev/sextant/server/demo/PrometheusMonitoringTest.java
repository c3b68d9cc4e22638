package dev.sextant.server.demo;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.server.gateway.Fleet;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sextant's Prometheus files ({@code examples/prometheus}, docs/monitoring.md) hold with the real Prometheus (Debian's
 * package, which {@code .ci/run} installs): {@code promtool} checks the example configuration and runs the rules' unit
 * tests, and a Prometheus server scraping the demo's gateways, control plane and engines finds every target up, every
 * metric the rules read (but those of set-ups the demo does not have, each found in the docs instead), the recording
 * rules' values, every query of the Grafana dashboard ({@code examples/grafana}) taken and with a value, no alert on
 * the healthy demo, and an alert once the topology file on disk is made invalid.
 */
class PrometheusMonitoringTest {
    private static final Path ROOT = Path.of("").toAbsolutePath().getParent();
    private static final Path EXAMPLES = ROOT.resolve("examples/prometheus");
    private static final Path DASHBOARD = ROOT.resolve("examples/grafana/sextant-dashboard.json");
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private static final ObjectMapper JSON = new ObjectMapper();
    /** A metric name in a PromQL expression: not part of a recording rule's name (those hold colons). */
    private static final Pattern METRIC = Pattern.compile("(?<![\\w:])(sextant_[a-z0-9_]+|up)(?![\\w:])");
    /**
     * Metrics the rules read that the demo cannot show, by the set-up that has them, and the doc whose metrics table
     * names them.
     */
    private static final Map<String, String> NOT_IN_THE_DEMO = Map.of(
            "sextant_etcd_leader", "docs/etcd.md", // control planes over etcd
            "sextant_etcd_reachable", "docs/etcd.md", // gateways over etcd
            "sextant_control_state_write_failures_total", "docs/servers.md", // a state_file
            "sextant_gateway_tenants_reload_failures_total", "docs/servers.md"); // a tenants_file

    @Test
    void promtool_checksTheExampleConfiguration_andRunsTheRulesUnitTests() throws Exception {
        Result check = run(60, "promtool", "check", "config", "prometheus.yml");
        assertThat(check.exit()).as(check.output()).isZero();
        assertThat(check.output()).contains("SUCCESS: 1 rule files found").doesNotContain("FAILED");
        Result tests = run(60, "promtool", "test", "rules", "sextant-rules.test.yml");
        assertThat(tests.exit()).as(tests.output()).isZero();
        assertThat(tests.output()).contains("SUCCESS").doesNotContain("FAILED");
        // every alert of the rules is tested
        Set<String> alerts = new TreeSet<>();
        Set<String> tested = new TreeSet<>();
        for (JsonNode g : new YAMLMapper().readTree(EXAMPLES.resolve("sextant-rules.yml").toFile()).path("groups")) {
            g.path("rules").forEach(r -> {
                if (r.has("alert")) {
                    alerts.add(r.path("alert").asText());
                }
            });
        }
        for (JsonNode t : new YAMLMapper().readTree(EXAMPLES.resolve("sextant-rules.test.yml").toFile()).path("tests")) {
            t.path("alert_rule_test").forEach(a -> {
                if (!a.path("exp_alerts").isEmpty()) {
                    tested.add(a.path("alertname").asText());
                }
            });
        }
        assertThat(alerts).hasSizeGreaterThan(10);
        Set<String> untested = new TreeSet<>(alerts);
        untested.removeAll(tested);
        assertThat(untested).as("alerts no unit test shows firing").isEmpty();
        String doc = Files.readString(ROOT.resolve("docs/monitoring.md"));
        assertThat(alerts).allSatisfy(a -> assertThat(doc).as("docs/monitoring.md explains %s", a)
                .contains("\n### " + a + "\n"));
    }

    @Test
    void aRealPrometheus_scrapesTheDemo_readsEveryMetricItsRulesRead_andAlertsOnAnInvalidTopology(@TempDir Path dir)
            throws Exception {
        try (Demo demo = Demo.start(0, 0)) {
            List<String> gateways = new ArrayList<>();
            demo.gatewayUris().forEach(u -> gateways.add("'" + u.getAuthority() + "'"));
            List<String> engines = new ArrayList<>();
            for (EngineEmulator e : demo.engines()) {
                engines.add("'127.0.0.1:" + e.port() + "'");
            }
            String controlPlane = demo.controlPlaneUri().getAuthority();
            Files.copy(EXAMPLES.resolve("sextant-rules.yml"), dir.resolve("sextant-rules.yml"));
            // the example's configuration with the demo's addresses, and scrapes and evaluations every second
            Files.writeString(dir.resolve("prometheus.yml"), Files.readString(EXAMPLES.resolve("prometheus.yml"))
                    .replace("scrape_interval: 15s", "scrape_interval: 1s")
                    .replace("evaluation_interval: 15s", "evaluation_interval: 1s")
                    .replace("['127.0.0.1:8080', '127.0.0.1:8081']", gateways.toString())
                    .replace("['127.0.0.1:7070']", "['" + controlPlane + "']")
                    .replace("['127.0.0.1:9101', '127.0.0.1:9102']", engines.toString()));
            int port;
            try (ServerSocket s = new ServerSocket(0)) {
                port = s.getLocalPort();
            }
            URI prometheus = URI.create("http://127.0.0.1:" + port);
            Path log = dir.resolve("prometheus.log");
            Process p = new ProcessBuilder(tool("prometheus"), "--config.file=" + dir.resolve("prometheus.yml"),
                    "--storage.tsdb.path=" + dir.resolve("data"), "--web.listen-address=127.0.0.1:" + port)
                    .redirectErrorStream(true).redirectOutput(log.toFile()).start();
            try {
                int targets = gateways.size() + 1 + engines.size();
                assertThat(Fleet.await(() -> targetsUp(prometheus) == targets, Duration.ofSeconds(60)))
                        .as("all %d targets up; Prometheus's log:%n%s", targets, tail(log)).isTrue();

                // answers through a gateway, for the histograms the recording rules read: a counter that a scrape first sees
                // at its final count has no rate, so requests go on until the rates show them
                URI east = demo.gatewayUris().get(0);
                String p99 = "instance:sextant_gateway_ttft_seconds:p99_5m{instance=\"" + east.getAuthority() + "\"}";
                String classP99 = "instance_class:sextant_gateway_class_ttft_seconds:p99_5m{instance=\""
                        + east.getAuthority() + "\",class=\"chat\"}";
                int[] sent = {0};
                assertThat(Fleet.await(() -> {
                    chat(east, sent[0]++);
                    return query(prometheus, p99 + " > 0").size() == 1 && query(prometheus, classP99 + " > 0").size() == 1;
                }, Duration.ofSeconds(60))).as("the p99 TTFT of the east gateway and of its class chat recorded: %s %s",
                        query(prometheus, p99), query(prometheus, classP99)).isTrue();

                Set<String> read = metricsTheRulesRead();
                assertThat(read).contains("up", "sextant_gateway_fallback", "sextant_control_policy_failing");
                for (String name : read) {
                    if (NOT_IN_THE_DEMO.containsKey(name)) {
                        assertThat(Files.readString(ROOT.resolve(NOT_IN_THE_DEMO.get(name))))
                                .as("%s, which the demo cannot show, is in the metrics of %s", name,
                                        NOT_IN_THE_DEMO.get(name))
                                .contains("`" + name.replaceFirst("_total$", ""));
                        continue;
                    }
                    assertThat(Fleet.await(() -> !query(prometheus, "count(" + name + ")").isEmpty(),
                            Duration.ofSeconds(30))).as("Prometheus has %s from the demo", name).isTrue();
                }
                // every query of the Grafana dashboard is PromQL that Prometheus takes, and has a value on the demo
                for (String expr : dashboardQueries()) {
                    String promql = expr.replace("$__rate_interval", "1m");
                    assertThat(queryError(prometheus, promql)).as("Prometheus takes the dashboard's %s", promql)
                            .isEmpty();
                    assertThat(Fleet.await(() -> !query(prometheus, promql).isEmpty(), Duration.ofSeconds(30)))
                            .as("the dashboard's %s has a value on the demo", promql).isTrue();
                }
                assertThat(query(prometheus, "ALERTS")).as("no alert on the healthy demo").isEmpty();
                Files.writeString(demo.topologyFile(), "engines: [\n"); // what a half-saved edit leaves
                String pending = "ALERTS{alertname=\"SextantTopologyInvalid\",alertstate=\"pending\","
                        + "instance=\"" + controlPlane + "\"}";
                assertThat(Fleet.await(() -> query(prometheus, pending).size() == 1, Duration.ofSeconds(30)))
                        .as("the invalid topology raises its alert (pending for its 5 minutes): %s",
                                query(prometheus, "ALERTS")).isTrue();
            } finally {
                p.destroy();
                if (!p.waitFor(20, TimeUnit.SECONDS)) {
                    p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            }
        }
    }

    /**
     * The Grafana dashboard ({@code examples/grafana/sextant-dashboard.json}, docs/monitoring.md) is a dashboard Grafana
     * imports: unique panel ids, panels on its 24-column grid without overlapping, every panel described and reading
     * the dashboard's Prometheus variable, every query with its reference, every Sextant metric it reads in the
     * metrics tables of the docs; and the docs say how to load it. That each query is PromQL with a value on a running
     * fleet is checked against the demo, above.
     */
    @Test
    void theGrafanaDashboard_isWellFormed_readsDocumentedMetrics_andIsDocumented() throws Exception {
        JsonNode d = JSON.readTree(DASHBOARD.toFile());
        assertThat(d.path("uid").asText()).isNotEmpty();
        assertThat(d.path("templating").path("list").findValuesAsText("name")).contains("datasource");
        Set<Integer> ids = new TreeSet<>();
        List<int[]> boxes = new ArrayList<>();
        int queries = 0;
        for (JsonNode p : d.path("panels")) {
            String title = p.path("title").asText();
            assertThat(ids.add(p.path("id").asInt())).as("id of %s unique", title).isTrue();
            JsonNode g = p.path("gridPos");
            int[] box = {g.path("x").asInt(), g.path("y").asInt(), g.path("w").asInt(), g.path("h").asInt()};
            assertThat(box[0] + box[2]).as("%s within the grid's 24 columns", title).isLessThanOrEqualTo(24);
            assertThat(box[2] > 0 && box[3] > 0).as("%s has a size", title).isTrue();
            for (int[] other : boxes) {
                boolean apart = box[0] + box[2] <= other[0] || other[0] + other[2] <= box[0]
                        || box[1] + box[3] <= other[1] || other[1] + other[3] <= box[1];
                assertThat(apart).as("%s overlaps another panel", title).isTrue();
            }
            boxes.add(box);
            if ("row".equals(p.path("type").asText())) {
                continue;
            }
            assertThat(title).isNotEmpty();
            assertThat(p.path("description").asText()).as("%s described", title).isNotEmpty();
            assertThat(p.path("datasource").path("uid").asText()).as(title).isEqualTo("${datasource}");
            assertThat(p.path("targets")).as("%s queries something", title).isNotEmpty();
            for (JsonNode t : p.path("targets")) {
                assertThat(t.path("refId").asText()).as(title).isNotEmpty();
                assertThat(t.path("expr").asText()).as(title).isNotEmpty();
                queries++;
            }
        }
        assertThat(queries).isEqualTo(dashboardQueries().size()).isGreaterThan(20);
        String tables = Files.readString(ROOT.resolve("docs/servers.md"));
        for (String q : dashboardQueries()) {
            Matcher m = METRIC.matcher(q);
            while (m.find()) {
                String name = m.group(1).replaceFirst("_(total|bucket|sum|count)$", "");
                assertThat(tables).as("%s, which the dashboard reads, in the metrics of docs/servers.md", name)
                        .contains("`" + name);
            }
        }
        // the engines' names are those the control plane reads of vLLM and SGLang
        String engineMetrics = Files.readString(ROOT.resolve(
                "sextant-control/src/main/java/dev/sextant/signal/EngineMetrics.java"));
        Matcher engine = Pattern.compile("(?:vllm|sglang):[a-z_]+").matcher(String.join("\n", dashboardQueries()));
        int engineNames = 0;
        while (engine.find()) {
            String name = engine.group().replaceFirst("_bucket$", "");
            assertThat(engineMetrics).as("%s, which the dashboard reads, among the names EngineMetrics reads", name)
                    .contains("\"" + name + "\"");
            engineNames++;
        }
        assertThat(engineNames).isGreaterThan(8);
        assertThat(Files.readString(ROOT.resolve("docs/monitoring.md"))).contains("examples/grafana/sextant-dashboard.json");
    }

    /** Every query of the Grafana dashboard's panels. */
    private static List<String> dashboardQueries() throws IOException {
        List<String> out = new ArrayList<>();
        for (JsonNode p : JSON.readTree(DASHBOARD.toFile()).path("panels")) {
            p.path("targets").forEach(t -> out.add(t.path("expr").asText()));
        }
        return out;
    }

    /** Prometheus's error for {@code promql} (a parse error, say), or empty when it takes it. */
    private static String queryError(URI prometheus, String promql) {
        try {
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(prometheus.resolve("/api/v1/query?query="
                    + URLEncoder.encode(promql, StandardCharsets.UTF_8))).timeout(Duration.ofSeconds(5)).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            JsonNode body = JSON.readTree(r.body());
            return "success".equals(body.path("status").asText()) ? "" : r.statusCode() + " " + r.body();
        } catch (IOException e) {
            return e.toString();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return e.toString();
        }
    }

    /** One small streamed chat completion through {@code gateway} (only a streamed answer has a TTFT), answered 200. */
    private static void chat(URI gateway, int i) {
        try {
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(gateway.resolve("/v1/chat/completions"))
                    .timeout(Duration.ofSeconds(20)).header("content-type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"" + Demo.MODEL
                            + "\",\"max_tokens\":2,\"stream\":true,"
                            + "\"messages\":[{\"role\":\"user\",\"content\":\"hi " + i + "\"}]}"))
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The metric names in the rules' expressions. */
    private static Set<String> metricsTheRulesRead() throws IOException {
        Set<String> names = new TreeSet<>();
        for (JsonNode g : new YAMLMapper().readTree(EXAMPLES.resolve("sextant-rules.yml").toFile()).path("groups")) {
            for (JsonNode r : g.path("rules")) {
                Matcher m = METRIC.matcher(r.path("expr").asText());
                while (m.find()) {
                    names.add(m.group(1));
                }
            }
        }
        return names;
    }

    /** How many of Prometheus's active targets are up; -1 while it does not answer. */
    private static int targetsUp(URI prometheus) {
        JsonNode targets = get(prometheus.resolve("/api/v1/targets?state=active"));
        if (targets == null) {
            return -1;
        }
        int up = 0;
        for (JsonNode t : targets.path("data").path("activeTargets")) {
            up += "up".equals(t.path("health").asText()) ? 1 : 0;
        }
        return up;
    }

    /** The instant vector {@code promql} evaluates to now (empty while Prometheus does not answer). */
    private static List<JsonNode> query(URI prometheus, String promql) {
        JsonNode r = get(prometheus.resolve("/api/v1/query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8)));
        List<JsonNode> out = new ArrayList<>();
        if (r != null) {
            r.path("data").path("result").forEach(out::add);
        }
        return out;
    }

    private static JsonNode get(URI uri) {
        try {
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5)).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            return r.statusCode() == 200 ? JSON.readTree(r.body()) : null;
        } catch (IOException e) {
            return null; // not listening yet
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    private static String tail(Path log) throws IOException {
        List<String> lines = Files.exists(log) ? Files.readAllLines(log) : List.of();
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
    }

    /** A tool of Debian's prometheus package on the PATH; fails the test naming the package when it is not. */
    private static String tool(String name) {
        for (String d : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (!d.isEmpty() && Files.isExecutable(Path.of(d, name))) {
                return Path.of(d, name).toString();
            }
        }
        throw new AssertionError(name + " is not on the PATH: install Debian's prometheus package (.ci/run does)");
    }

    record Result(int exit, String output) {
    }

    /** Runs a tool of the prometheus package in {@link #EXAMPLES}; fails the test when it does not end in time. */
    private static Result run(int seconds, String name, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(tool(name));
        cmd.addAll(List.of(args));
        Path out = Files.createTempFile("promtool", ".out");
        try {
            Process p = new ProcessBuilder(cmd).directory(EXAMPLES.toFile()).redirectErrorStream(true)
                    .redirectOutput(out.toFile()).start();
            p.getOutputStream().close();
            boolean ended = p.waitFor(seconds, TimeUnit.SECONDS);
            if (!ended) {
                p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
            String text = Files.readString(out);
            assertThat(ended).as("%s ended within %d s; output:%n%s", cmd, seconds, text).isTrue();
            return new Result(p.exitValue(), text);
        } finally {
            Files.deleteIfExists(out);
        }
    }
}

