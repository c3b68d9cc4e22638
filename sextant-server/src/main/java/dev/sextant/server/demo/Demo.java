package dev.sextant.server.demo;

import dev.sextant.config.TopologyException;
import dev.sextant.server.control.ControlPlane;
import dev.sextant.server.control.ControlPlaneConfig;
import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.server.gateway.Gateway;
import dev.sextant.server.gateway.GatewayConfig;
import dev.sextant.server.gateway.SnapshotSource;
import dev.sextant.server.internal.Numbers;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The whole system in one process on loopback: six emulated engines in three regions, a control plane and two
 * gateways (gateway clusters {@code east} in us-east and {@code eu} in eu-west). The built-in topology is a small
 * cousin of the design's worked example: us-east's two engines (2 × 40 req/s) cannot carry east's 100 req/s, so
 * part of it spills to us-west, 60 ms away; class {@code chat-eu} may only be served in eu-west. Each engine emulates
 * the topology's round trip to each gateway cluster, so those 60 ms are really there and the gateways' probes measure
 * them.
 *
 * <p>The control plane plans for the topology's demand ({@link Demand#CONFIGURED}) when nothing drives load, and for
 * what the gateways observe ({@link Demand#OBSERVED}) when {@link #loadDriver} does: its mix is the topology's demand
 * scaled to the rate asked for, so that at {@link #TOPOLOGY_RPS} the loop learns from the load the demand the
 * topology states.
 */
public final class Demo implements AutoCloseable {
    /** The model every demo engine serves. */
    public static final String MODEL = "llama-3.1-8b";

    /** Tokens of each answer: the topology's {@code output_tokens}, and what the load driver asks for. */
    static final int OUTPUT_TOKENS = 32;

    /** Every engine's rating in the topology, req/s. */
    static final double CAPACITY_RPS = 40;

    /** Engine id → engine cluster; two engines per cluster, one cluster per region. */
    static final Map<String, String> ENGINES = new LinkedHashMap<>();

    static {
        ENGINES.put("use-1", "gpu-us-east");
        ENGINES.put("use-2", "gpu-us-east");
        ENGINES.put("usw-1", "gpu-us-west");
        ENGINES.put("usw-2", "gpu-us-west");
        ENGINES.put("eu-1", "gpu-eu-west");
        ENGINES.put("eu-2", "gpu-eu-west");
    }

    /**
     * The built-in topology's round trips, gateway cluster → engine cluster → ms: written into its
     * {@code network_rtt_ms}, and emulated by each engine for requests from each gateway cluster, so that a request
     * from {@code east} to us-west really takes 60 ms longer than one to us-east.
     */
    static final Map<String, Map<String, Double>> NETWORK_RTT_MS = new LinkedHashMap<>();

    static {
        Map<String, Double> east = new LinkedHashMap<>();
        east.put("gpu-us-east", 2.0);
        east.put("gpu-us-west", 60.0);
        east.put("gpu-eu-west", 80.0);
        Map<String, Double> eu = new LinkedHashMap<>();
        eu.put("gpu-us-east", 80.0);
        eu.put("gpu-us-west", 140.0);
        eu.put("gpu-eu-west", 2.0);
        NETWORK_RTT_MS.put("east", east);
        NETWORK_RTT_MS.put("eu", eu);
    }

    /**
     * The built-in topology's demand, gateway cluster → class → req/s: written into its {@code demand_rps}, and the
     * mix of {@link #loadDriver}, scaled to the rate asked for.
     */
    static final Map<String, Map<String, Double>> DEMAND_RPS = new LinkedHashMap<>();

    static {
        DEMAND_RPS.put("east", Map.of("chat", 100.0));
        Map<String, Double> eu = new LinkedHashMap<>();
        eu.put("chat", 20.0);
        eu.put("chat-eu", 30.0);
        DEMAND_RPS.put("eu", eu);
    }

    /** The topology's whole demand, req/s: the load at which the driver offers each class what the topology says. */
    public static final double TOPOLOGY_RPS = 150;

    /** Class → the {@code x-sextant-residency} header that selects it (classes not listed need none). */
    static final Map<String, String> RESIDENCY = Map.of("chat-eu", "eu-west");

    /** What the demo's control plane plans for. */
    public enum Demand {
        /**
         * The topology's {@code demand_rps} only ({@code demand: configured}): the story holds without load, where
         * observed demand would follow the few requests of a demo left idle.
         */
        CONFIGURED("configured"),
        /** What the gateways report ({@code demand: observed}, the control plane's default). */
        OBSERVED("observed");

        private final String setting;

        Demand(String setting) {
            this.setting = setting;
        }

        /** The control plane's {@code demand} setting. */
        public String setting() {
            return setting;
        }
    }

    private final List<EngineEmulator> engines = new ArrayList<>();
    private final ControlPlane controlPlane;
    private final List<Gateway> gateways = new ArrayList<>();
    private final Path topologyFile;
    private final String token;

    private final Demand demand;

    private Demo(int controlPort, int gatewayPort, Demand demand) throws IOException, TopologyException {
        this.demand = demand;
        Map<String, Integer> ports = new LinkedHashMap<>();
        try {
            for (String id : ENGINES.keySet()) {
                EngineEmulator e = EngineEmulator.start(rated(EngineConfig.defaults(id, MODEL))
                        .withNetworkRttMs(roundTripsTo(ENGINES.get(id))));
                engines.add(e);
                ports.put(id, e.port());
            }
            topologyFile = Files.createTempFile("sextant-demo-", ".yaml");
            topologyFile.toFile().deleteOnExit();
            Files.writeString(topologyFile, topology(ports));
            byte[] t = new byte[16];
            new SecureRandom().nextBytes(t);
            token = HexFormat.of().formatHex(t);
            controlPlane = ControlPlane.start(ControlPlaneConfig.defaults(topologyFile, token)
                    .withAddress("127.0.0.1", controlPort).withDemand(demand.setting()));
            int port = gatewayPort;
            for (String cluster : List.of("east", "eu")) {
                GatewayConfig gc = GatewayConfig.defaults(cluster).withAddress("127.0.0.1", port == 0 ? 0 : port++)
                        .withAccessLog(false).withControlPlane(controlPlane.uri(), token, Duration.ofSeconds(2));
                gateways.add(Gateway.start(gc, SnapshotSource.longPoll(controlPlane.uri(), cluster, token,
                        Duration.ofSeconds(30)), 2));
            }
        } catch (RuntimeException | IOException | TopologyException e) {
            close();
            throw e;
        }
    }

    /**
     * Starts everything, the control plane planning for the topology's demand; returns when all of it listens.
     *
     * @param controlPort  control plane port (0: ephemeral)
     * @param gatewayPort  first gateway's port, the second gets the next one (0: both ephemeral)
     */
    public static Demo start(int controlPort, int gatewayPort) throws IOException, TopologyException {
        return start(controlPort, gatewayPort, Demand.CONFIGURED);
    }

    /**
     * Starts everything; returns when all of it listens.
     *
     * @param controlPort  control plane port (0: ephemeral)
     * @param gatewayPort  first gateway's port, the second gets the next one (0: both ephemeral)
     * @param demand       what the control plane plans for: {@link Demand#OBSERVED} when a load driver runs
     */
    public static Demo start(int controlPort, int gatewayPort, Demand demand) throws IOException, TopologyException {
        return new Demo(controlPort, gatewayPort, demand);
    }

    /** What the control plane plans for. */
    public Demand demand() {
        return demand;
    }

    /**
     * Starts a load driver on the gateways: the topology's demand per gateway cluster and class, scaled to
     * {@code rps} in all, with the control plane's estimates in each summary.
     *
     * @param rps   requests per second in all; at {@link #TOPOLOGY_RPS}, each class gets what the topology says
     * @param every summary interval
     * @param out   where summaries go
     */
    public LoadDriver loadDriver(double rps, Duration every, PrintStream out) {
        List<URI> uris = gatewayUris();
        List<LoadDriver.Stream> mix = new ArrayList<>();
        int i = 0;
        for (Map.Entry<String, Map<String, Double>> g : DEMAND_RPS.entrySet()) {
            URI uri = uris.get(i++);
            g.getValue().forEach((c, r) -> mix.add(new LoadDriver.Stream(g.getKey(), uri, c, RESIDENCY.get(c), r)));
        }
        return new LoadDriver(mix, ENGINES, new LoadDriver.Watch(controlPlaneUri(), token), rps, every, out);
    }

    /** The demand of the built-in topology, as its summary line says it: "east chat 100, eu chat 20 + chat-eu 30". */
    public static String demandSummary() {
        List<String> parts = new ArrayList<>();
        DEMAND_RPS.forEach((g, row) -> parts.add(g + " " + String.join(" + ", row.entrySet().stream()
                .map(e -> e.getKey() + " " + Math.round(e.getValue())).toList())));
        return String.join(", ", parts) + " req/s";
    }

    /** Gateway cluster → round trip in ms to {@code engineCluster}, what an engine there emulates. */
    static Map<String, Double> roundTripsTo(String engineCluster) {
        Map<String, Double> out = new java.util.TreeMap<>();
        NETWORK_RTT_MS.forEach((gateway, row) -> out.put(gateway, row.get(engineCluster)));
        return out;
    }

    /**
     * {@code c} with the batch that makes it carry its rating of the demo's answers, {@link #CAPACITY_RPS} of
     * {@link #OUTPUT_TOKENS} tokens each, at its own pace: the smallest batch b with
     * b / (tokens × (decode base + b × per-sequence ms)) ≥ the rating (prefill of the load's short prompts left out:
     * a fraction of a step). The topology then states what the engines do, so east's 100 req/s really is more than
     * its two engines carry at 90% and the spill to us-west lasts; an emulator batching 64 would carry several times
     * its rating, and once the loop had learned that, east would have no reason to send anything 60 ms away.
     */
    static EngineConfig rated(EngineConfig c) {
        int b = 1;
        while (b < c.maxSequences()
                && b * 1000 / (OUTPUT_TOKENS * (c.decodeBaseMs() + b * c.decodeMsPerSequence())) < CAPACITY_RPS) {
            b++;
        }
        return c.withLatency(b, c.prefillMsPerToken(), c.decodeBaseMs(), c.decodeMsPerSequence());
    }

    /** The demo's engines, in the order of {@link #ENGINES}. */
    List<EngineEmulator> engines() {
        return List.copyOf(engines);
    }

    /** The built-in topology with the engines on {@code ports}. */
    static String topology(Map<String, Integer> ports) {
        StringBuilder y = new StringBuilder();
        y.append("""
                # Sextant demo: us-east is short of capacity at the default load; chat-eu stays in eu-west.
                gateway_clusters:
                  - {id: east, region: us-east}
                  - {id: eu, region: eu-west}
                engine_clusters:
                  - {id: gpu-us-east, region: us-east}
                  - {id: gpu-us-west, region: us-west}
                  - {id: gpu-eu-west, region: eu-west}
                network_rtt_ms:
                """);
        NETWORK_RTT_MS.forEach((gateway, row) -> y.append("  ").append(gateway).append(": {")
                .append(String.join(", ", row.entrySet().stream()
                        .map(e -> e.getKey() + ": " + Numbers.plain(e.getValue())).toList()))
                .append("}\n"));
        y.append("""
                models:
                  - {id: llama-3.1-8b, output_tokens: %d}
                engines:
                """.formatted(OUTPUT_TOKENS));
        ports.forEach((id, port) -> y.append("  - {id: ").append(id).append(", cluster: ").append(ENGINES.get(id))
                .append(", endpoint: 'http://127.0.0.1:").append(port)
                .append("', models: [llama-3.1-8b], capacity_rps: ").append(Numbers.plain(CAPACITY_RPS))
                .append(", profile: {ttft_ms: 15, tbt_ms: 9, tbt_slope: 0.5}}\n"));
        y.append("""
                classes:
                  - {id: chat, model: llama-3.1-8b, priority: 0}
                  - {id: chat-eu, model: llama-3.1-8b, residency: [eu-west], priority: 1}
                demand_rps:
                """);
        DEMAND_RPS.forEach((gateway, row) -> y.append("  ").append(gateway).append(": {")
                .append(String.join(", ", row.entrySet().stream()
                        .map(e -> e.getKey() + ": " + Math.round(e.getValue())).toList()))
                .append("}\n"));
        y.append("headroom: 0.1\n");
        return y.toString();
    }

    /** Gateway base URLs, {@code east} first. */
    public List<URI> gatewayUris() {
        List<URI> out = new ArrayList<>();
        gateways.forEach(g -> out.add(URI.create("http://127.0.0.1:" + g.port())));
        return out;
    }

    /** The control plane's base URL. */
    public URI controlPlaneUri() {
        return controlPlane.uri();
    }

    /** The bearer token of the control plane's snapshot, explain and report endpoints. */
    public String token() {
        return token;
    }

    /** The generated topology file the control plane watches. */
    public Path topologyFile() {
        return topologyFile;
    }

    /** Stops gateways (draining), control plane and engines. */
    @Override
    public void close() {
        gateways.forEach(Gateway::close);
        if (controlPlane != null) {
            controlPlane.close();
        }
        engines.forEach(EngineEmulator::close);
        try {
            if (topologyFile != null) {
                Files.deleteIfExists(topologyFile);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
