package dev.sextant.server.reliability;

import dev.sextant.config.TopologyLoader;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.request.DataPlaneOptions;
import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.server.gateway.Gateway;
import dev.sextant.server.gateway.GatewayConfig;
import dev.sextant.server.gateway.SnapshotSource;
import dev.sextant.snapshot.Snapshot;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The loopback fleet of the fault cases: emulated engines eu-1, eu-2 (eu-west) and us-1, us-2 (us-east) serving
 * model {@code m}, a decoy x-1 in eu-west serving only model {@code other} (no request for {@code m} may ever reach
 * it), optional extra endpoints that are not emulators (a black hole, a closed port), and one gateway (cluster
 * {@code gw}, eu-west) with short timeouts: connect 300 ms, first byte 1 s, idle 1 s, total 4 s. (Short enough to keep
 * the cases fast, long enough that a loaded 2-core CI machine does not trip them on healthy engines.)
 */
final class Rig implements AutoCloseable {
    static final Duration CONNECT = Duration.ofMillis(300);
    static final Duration FIRST_BYTE = Duration.ofSeconds(1);
    static final Duration IDLE = Duration.ofSeconds(1);
    static final Duration TOTAL = Duration.ofSeconds(4);
    /**
     * How long a client waits before it calls a request hung: the gateway's total timeout plus a margin for a
     * machine busy with other builds.
     */
    static final Duration CLIENT_DEADLINE = TOTAL.plusSeconds(4);
    /** Requests of the warm-up every case starts with (JIT, pooled connections, a banked retry budget). */
    static final int WARM_UP = 100;
    static final List<String> ENGINES = List.of("eu-1", "eu-2", "us-1", "us-2", "x-1");

    /**
     * For reading the gateway's /metrics between fault steps; HTTP/1.1 like {@link Traffic}'s client (these tests are
     * about engine faults). With the JDK client's default, an h2c upgrade, one run in about a dozen once failed here
     * reading the metrics: the gateway answered the upgraded request together with its 101, which that client does not
     * always take whole. The gateway now waits for the client's preface ({@code GatewayH2cUpgradeTest}).
     */
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(2)).build();

    final Map<String, EngineEmulator> engines = new LinkedHashMap<>();
    final Map<String, String> endpoints = new LinkedHashMap<>();
    private final Map<String, EngineConfig> configs = new LinkedHashMap<>();
    private final List<AutoCloseable> closeables = new CopyOnWriteArrayList<>();
    /** Engines stopped by {@link #kill}: what they generated still counts. */
    private final List<EngineEmulator> killed = new CopyOnWriteArrayList<>();
    /** Counts of generations by request id of the engines that are not emulators. */
    private final List<java.util.function.ToIntFunction<String>> otherGenerations = new CopyOnWriteArrayList<>();
    Gateway gateway;
    private long gatewayStartNanos;

    /**
     * Starts the emulated engines (steps of {@code decodeBaseMs}); {@code extra} adds engines of model {@code m}
     * that are not emulators (id → endpoint; an id starting with {@code eu-} is in eu-west, others in us-east).
     */
    Rig(double decodeBaseMs, Map<String, String> extra) {
        for (String id : ENGINES) {
            EngineConfig c = EngineConfig.defaults(id, id.startsWith("x-") ? "other" : "m")
                    .withLatency(64, 0.0, decodeBaseMs, 0.0).withDefaultMaxTokens(8);
            EngineEmulator e = EngineEmulator.start(c);
            configs.put(id, c.withPort(e.port()));
            engines.put(id, e);
            endpoints.put(id, "http://127.0.0.1:" + e.port());
        }
        endpoints.putAll(extra);
    }

    Rig(double decodeBaseMs) {
        this(decodeBaseMs, Map.of());
    }

    /** The topology's YAML: class chat (model m, anywhere), chat-eu (m, eu-west only), other (model other). */
    String yaml(double chatDemand) {
        StringBuilder y = new StringBuilder();
        y.append("gateway_clusters: [{id: gw, region: eu-west}]\n");
        y.append("engine_clusters: [{id: c-eu, region: eu-west}, {id: c-us, region: us-east}]\n");
        y.append("network_rtt_ms: {gw: {c-eu: 2, c-us: 10}}\n");
        y.append("models: [{id: m, output_tokens: 8}, {id: other, output_tokens: 8}]\n");
        y.append("engines:\n");
        endpoints.forEach((id, endpoint) -> y.append("  - {id: ").append(id).append(", cluster: ")
                .append(id.startsWith("us-") ? "c-us" : "c-eu").append(", endpoint: '").append(endpoint)
                .append("', models: [").append(id.startsWith("x-") ? "other" : "m")
                .append("], capacity_rps: 100, profile: {ttft_ms: 20, tbt_ms: 5}}\n"));
        y.append("classes: [{id: chat, model: m}, {id: chat-eu, model: m, residency: [eu-west]}, {id: other, model: other}]\n");
        y.append("demand_rps: {gw: {chat: ").append(chatDemand).append(", chat-eu: 40, other: 1}}\n");
        return y.toString();
    }

    Snapshot snapshot() {
        try {
            return Policies.optimal().solve(TopologyLoader.load(yaml(150), "faults.yaml"), SolveOptions.defaults());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The data plane's defaults without the latency outlier rule: on a CI machine busy with other builds a healthy
     * engine's TTFT can pass 5× its profile, and an ejection the case did not cause would change where its traffic
     * goes. Failures (connect errors, 5xx, timeouts) still eject after 5 in a row.
     */
    static DataPlaneOptions options() {
        return DataPlaneOptions.builder().ttftOutlierFactor(0).build();
    }

    static GatewayConfig gatewayConfig(DataPlaneOptions options) {
        return GatewayConfig.defaults("gw").withAccessLog(Boolean.getBoolean("sextant.faults.accessLog")).withTimeouts(CONNECT, FIRST_BYTE, IDLE, TOTAL)
                .withOptions(options);
    }

    /** Starts the gateway on a fixed snapshot of this fleet. */
    Gateway startGateway(DataPlaneOptions options) {
        return startGateway(gatewayConfig(options), SnapshotSource.fixed(snapshot()));
    }

    Gateway startGateway(GatewayConfig config, SnapshotSource source) {
        gateway = Gateway.start(config, source, 2);
        gatewayStartNanos = System.nanoTime();
        return gateway;
    }

    /**
     * Sends {@link #WARM_UP} requests before the fault, as a gateway that has been serving for a while: the JIT has
     * compiled the request path, connections are pooled, and the retry budget has banked its deposits. Every one
     * must complete.
     */
    void warmUp(Traffic traffic) throws InterruptedException {
        Tally t = new Tally("warm-up");
        traffic.run(t, WARM_UP, 8, i -> { });
        if (t.completedCount() != WARM_UP) {
            t.print();
            throw new IllegalStateException("warm-up: " + t.row());
        }
    }

    /** Stops engine {@code id} at once: its listening socket and every connection close. */
    void kill(String id) {
        EngineEmulator e = engines.remove(id);
        e.close();
        killed.add(e);
    }

    /** Starts engine {@code id} again on its old port (after {@link #kill}). */
    void restart(String id) {
        engines.put(id, EngineEmulator.start(configs.get(id)));
    }

    /** The gateway's {@code sextant_gateway_retries_total}. */
    long retriesTotal() throws IOException, InterruptedException {
        return counter("sextant_gateway_retries_total");
    }

    /**
     * Every request the gateway sent again: its budgeted retries and its requeues (retries after a connection could
     * not be made, which the retry budget does not count).
     */
    long resentTotal() throws IOException, InterruptedException {
        return retriesTotal() + counter("sextant_gateway_requeues_total");
    }

    private long counter(String name) throws IOException, InterruptedException {
        String text = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.port() + "/metrics"))
                .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()).body();
        for (String line : text.split("\n")) {
            if (line.startsWith(name)) {
                return (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        throw new IllegalStateException("no " + name + " in /metrics");
    }

    /**
     * The retry budget's bound for {@code admitted} requests since the gateway started (request-path.md §5):
     * r(u)·N + floor·T + 1, with u and the curve from the held snapshot and T the seconds since the start.
     */
    double retryBound(long admitted) {
        Snapshot s = gateway.plane().snapshot();
        double seconds = (System.nanoTime() - gatewayStartNanos) / 1e9;
        return s.retryBudget().ratio(s.fleetUtilization()) * admitted + s.retryBudget().minRetriesPerSecond() * seconds
                + 1;
    }

    /**
     * How many attempts generated request {@code requestId} (produced at least one of its tokens), over every engine
     * of the fleet, stopped ones included, and the other engines {@link #countGenerations} was given.
     */
    int generations(String requestId) {
        int n = 0;
        for (EngineEmulator e : engines.values()) {
            n += e.generations(requestId);
        }
        for (EngineEmulator e : killed) {
            n += e.generations(requestId);
        }
        for (java.util.function.ToIntFunction<String> other : otherGenerations) {
            n += other.applyAsInt(requestId);
        }
        return n;
    }

    /** Counts the generations of an engine that is not an emulator, by request id, with the fleet's. */
    void countGenerations(java.util.function.ToIntFunction<String> byRequestId) {
        otherGenerations.add(byRequestId);
    }

    /** Requests received by every engine of {@code ids} so far. */
    long received(String... ids) {
        long n = 0;
        for (String id : ids) {
            EngineEmulator e = engines.get(id);
            n += e == null ? 0 : e.requestsReceived();
        }
        return n;
    }

    /**
     * A port that accepts TCP connections and never reads or writes a byte: an engine that hangs before HTTP.
     * Returns its endpoint.
     */
    static String blackHole(List<AutoCloseable> owner) {
        try {
            ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            List<Socket> held = new CopyOnWriteArrayList<>();
            Thread t = new Thread(() -> {
                while (!server.isClosed()) {
                    try {
                        held.add(server.accept());
                    } catch (IOException e) {
                        return;
                    }
                }
            }, "black-hole");
            t.setDaemon(true);
            t.start();
            owner.add(() -> {
                server.close();
                for (Socket s : held) {
                    s.close();
                }
            });
            return "http://127.0.0.1:" + server.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * A port whose SYNs are never answered: a listening socket that never accepts, with its accept queue filled,
     * so the kernel drops further connection attempts (a black-holed network path). Returns its endpoint.
     */
    static String unansweredSyn(List<AutoCloseable> owner) {
        try {
            ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
            owner.add(server);
            boolean full = false;
            for (int i = 0; i < 8 && !full; i++) { // the queue holds backlog + 1; then connects time out, quickly
                Socket s = new Socket();
                try {
                    s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getLocalPort()), 200);
                    owner.add(s);
                } catch (java.net.SocketTimeoutException timedOut) {
                    s.close();
                    full = true;
                }
            }
            if (!full) { // the case would not test what it says
                throw new IllegalStateException("connects to a full accept queue were answered, not dropped");
            }
            return "http://127.0.0.1:" + server.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A loopback port nothing listens on: connections are refused. */
    static String closedPort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return "http://127.0.0.1:" + s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Closes {@code c} with this rig. */
    void own(AutoCloseable c) {
        closeables.add(c);
    }

    @Override
    public void close() {
        if (gateway != null) {
            gateway.close();
        }
        engines.values().forEach(EngineEmulator::close);
        for (AutoCloseable c : closeables) {
            try {
                c.close();
            } catch (Exception ignored) {
                // best effort: the test is over
            }
        }
    }
}
