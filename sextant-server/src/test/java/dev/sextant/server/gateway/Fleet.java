package dev.sextant.server.gateway;

import dev.sextant.config.TopologyLoader;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;

/**
 * Emulated engines on loopback and the topology that names them: two regions, eu-west (engines eu-1, eu-2) and
 * us-east (us-1, us-2), one gateway cluster "gw" in eu-west, classes "chat" (any region) and "chat-eu" (eu-west
 * only), both of model "m".
 */
public final class Fleet implements AutoCloseable {
    public static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    public final Map<String, EngineEmulator> engines = new LinkedHashMap<>();
    public final Topology topology;

    public Fleet(double decodeBaseMs) {
        for (String id : List.of("eu-1", "eu-2", "us-1", "us-2")) {
            engines.put(id, EngineEmulator.start(EngineConfig.defaults(id, "m").withLatency(64, 0.0, decodeBaseMs, 0.0)
                    .withDefaultMaxTokens(8)));
        }
        this.topology = topology(engines);
    }

    static Topology topology(Map<String, EngineEmulator> engines) {
        try {
            return TopologyLoader.load(yaml(engines, 150), "fleet.yaml");
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** The topology's YAML with {@code chatDemand} req/s of class chat. */
    public String yaml(double chatDemand) {
        return yaml(engines, chatDemand);
    }

    static String yaml(Map<String, EngineEmulator> engines, double chatDemand) {
        StringBuilder y = new StringBuilder();
        y.append("gateway_clusters: [{id: gw, region: eu-west}]\n");
        y.append("engine_clusters: [{id: c-eu, region: eu-west}, {id: c-us, region: us-east}]\n");
        y.append("network_rtt_ms: {gw: {c-eu: 2, c-us: 10}}\n");
        y.append("models: [{id: m, output_tokens: 8}]\n");
        y.append("engines:\n");
        engines.forEach((id, e) -> y.append("  - {id: ").append(id).append(", cluster: ")
                .append(id.startsWith("eu") ? "c-eu" : "c-us").append(", endpoint: 'http://127.0.0.1:")
                .append(e.port()).append("', models: [m], capacity_rps: 100, profile: {ttft_ms: 20, tbt_ms: 5}}\n"));
        y.append("classes: [{id: chat, model: m}, {id: chat-eu, model: m, residency: [eu-west]}]\n");
        y.append("demand_rps: {gw: {chat: ").append(chatDemand).append(", chat-eu: 40}}\n");
        return y.toString();
    }

    /**
     * The snapshot of one gateway cluster {@code gw} and one class {@code chat} of model {@code m} served by engines
     * {@code e1}, {@code e2}, … at these ports (stand-ins a test runs itself), in one engine cluster.
     */
    /**
     * A stand-in engine on a loopback port: each request is shown to {@code seen} (its body still unread), then read
     * whole and answered with an empty chat completion.
     */
    static com.sun.net.httpserver.HttpServer recordingEngine(
            java.util.function.Consumer<com.sun.net.httpserver.HttpExchange> seen) throws java.io.IOException {
        com.sun.net.httpserver.HttpServer engine = com.sun.net.httpserver.HttpServer.create(
                new java.net.InetSocketAddress("127.0.0.1", 0), 0);
        engine.createContext("/", ex -> {
            seen.accept(ex);
            ex.getRequestBody().readAllBytes();
            byte[] body = "{\"id\":\"x\",\"object\":\"chat.completion\",\"choices\":[]}"
                    .getBytes(java.nio.charset.StandardCharsets.UTF_8);
            ex.getResponseHeaders().add("content-type", "application/json");
            ex.sendResponseHeaders(200, body.length);
            ex.getResponseBody().write(body);
            ex.close();
        });
        engine.start();
        return engine;
    }

    static Snapshot standIns(int... ports) {
        StringBuilder y = new StringBuilder("gateway_clusters: [{id: gw, region: r}]\n"
                + "engine_clusters: [{id: c, region: r}]\nnetwork_rtt_ms: {gw: {c: 1}}\n"
                + "models: [{id: m, output_tokens: 8}]\nclasses: [{id: chat, model: m}]\n"
                + "demand_rps: {gw: {chat: 10}}\nengines:\n");
        for (int i = 0; i < ports.length; i++) {
            y.append("  - {id: e").append(i + 1).append(", cluster: c, endpoint: 'http://127.0.0.1:").append(ports[i])
                    .append("', models: [m], capacity_rps: 100, profile: {ttft_ms: 20, tbt_ms: 5}}\n");
        }
        try {
            return Policies.optimal().solve(TopologyLoader.load(y.toString(), "stand-ins.yaml"), SolveOptions.defaults());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    public Snapshot snapshot() {
        return Policies.optimal().solve(topology, SolveOptions.defaults());
    }

    /** The snapshot at {@code chatDemand} req/s of class chat. */
    public Snapshot snapshot(double chatDemand) {
        try {
            return Policies.optimal().solve(TopologyLoader.load(yaml(chatDemand), "fleet.yaml"), SolveOptions.defaults());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        engines.values().forEach(EngineEmulator::close);
    }

    public static HttpResponse<String> post(int port, String path, String body, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(20)).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    public static HttpResponse<String> get(int port, String path) throws Exception {
        return send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(20)).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    /**
     * Sends once more when the client's pooled connection turns out to be one the gateway had just
     * closed (after a 413, or after ending a stream with an error event, the gateway closes by design):
     * the JDK client can hand out such a connection before it has seen the close, and then fails with
     * no bytes received. Clients do the same retry (the OpenAI SDKs retry connection errors); the
     * assertions still see every status and body the gateway sent.
     */
    public static <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler)
            throws Exception {
        try {
            return HTTP.send(request, handler);
        } catch (java.io.IOException e) {
            if (!String.valueOf(e.getMessage()).contains("received no bytes")) {
                throw e;
            }
            return HTTP.send(request, handler);
        }
    }

    public static String chat(String key, boolean stream, int maxTokens) {
        return "{\"model\":\"m\",\"stream\":" + stream + ",\"max_tokens\":" + maxTokens
                + (key == null ? "" : ",\"prompt_cache_key\":\"" + key + "\"")
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}";
    }

    /**
     * Replaces {@code file}'s content in one step, as configuration management does (a written temporary file moved
     * over it): a reload never reads it half written, so the failures counted are those of the content alone.
     */
    public static void rewrite(java.nio.file.Path file, String content) throws java.io.IOException {
        java.nio.file.Path next = file.resolveSibling(file.getFileName() + ".next");
        java.nio.file.Files.writeString(next, content);
        java.nio.file.Files.move(next, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    /** Polls {@code condition} until true or {@code timeout}; false when the deadline passed. */
    public static boolean await(BooleanSupplier condition, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (condition.getAsBoolean()) {
                return true;
            }
            Thread.sleep(10);
        }
        return condition.getAsBoolean();
    }

    static List<String> list(String... s) {
        return new ArrayList<>(List.of(s));
    }
}
