package dev.sextant.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sextant.server.control.ControlPlane;
import dev.sextant.server.control.ControlPlaneConfig;
import dev.sextant.server.control.Leadership;
import dev.sextant.server.control.Registration;
import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.topology.Engine;
import dev.sextant.topology.PriorityScheduling;
import io.etcd.jetcd.Client;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Engines registering under leases (docs/etcd.md, "Engine registration"), with a real etcd, engine emulators and a
 * control plane whose topology file lists no engine: a registered engine joins and is taken into service once it
 * answered; one that never answered joins without traffic; registrations that do not fit are refused, logged and counted, and the
 * control plane goes on; an engine leaves when its registrar is closed, killed (its lease runs out) or finds the
 * engine no longer answering.
 */
class RegistrationIT extends OneEtcdMember {
    static final String FLEET = """
            gateway_clusters: [{id: east, region: us}]
            engine_clusters: [{id: c1, region: us}]
            network_rtt_ms: {east: {c1: 2}}
            models: [{id: m, output_tokens: 8}]
            hardware:
              h100: {capacity_rps: 100, profile: {ttft_ms: 20, tbt_ms: 5}}
            classes: [{id: chat, model: m}]
            demand_rps: {east: {chat: 20}}
            """;
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private static final ObjectMapper JSON = new ObjectMapper();

    static Registration engine(String id, EngineEmulator e, String metricsPath) {
        return new Registration(id, "http://127.0.0.1:" + e.port(), "c1", "h100", List.of("m"), PriorityScheduling.NONE,
                metricsPath);
    }

    static Set<String> engines(ControlPlane cp) {
        return cp.topology().engines().stream().map(Engine::id).collect(Collectors.toSet());
    }

    static JsonNode health(ControlPlane cp) {
        try {
            return JSON.readTree(HTTP.send(HttpRequest.newBuilder(cp.uri().resolve("/healthz")).build(),
                    HttpResponse.BodyHandlers.ofString()).body());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static String metrics(ControlPlane cp) {
        try {
            return HTTP.send(HttpRequest.newBuilder(cp.uri().resolve("/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static boolean inService(ControlPlane cp, String engine) {
        JsonNode e = health(cp).get("engines").get(engine);
        return e != null && e.get("healthy").asBoolean();
    }

    static boolean routed(ControlPlane cp, String engine) {
        var route = cp.current().routes().get("east").get("chat");
        return route.weights().getOrDefault(engine, 0.0) > 0;
    }

    @Test
    void registeredEngines_joinTheTopology_badOnesAreRefused_andEachLeavesWithItsRegistration(
            @org.junit.jupiter.api.io.TempDir Path tmp) throws Exception {
        Path topology = tmp.resolve("fleet.yaml");
        Files.writeString(topology, FLEET);
        EtcdOptions o = etcd.options("/registration");
        ControlPlaneConfig config = ControlPlaneConfig.defaults(topology, "tok").withAddress("127.0.0.1", 0)
                .withIntervals(Duration.ofSeconds(10), Duration.ofMillis(100), Duration.ofMillis(200),
                        Duration.ofSeconds(1), 3).withCanaryInterval(Duration.ofMillis(500));
        try (Client raw = Client.builder().endpoints(o.endpoints().toArray(new URI[0])).build();
             EngineEmulator e1 = EngineEmulator.start(EngineConfig.defaults("e1", "m"));
             EngineEmulator e2 = EngineEmulator.start(EngineConfig.defaults("e2", "m"));
             ControlPlane cp = ControlPlane.start(config, Leadership.alone(), Etcd.registry(o))) {
            assertThat(cp.topology().engines()).isEmpty();
            // what no registrar writes: garbage, a bad endpoint; and an engine that never answered
            put(raw, "/registration/engines/garbage", "endpoint=http://x");
            put(raw, "/registration/engines/bad-endpoint",
                    "{\"endpoint\":\"10.0.0.7:8000\",\"cluster\":\"c1\",\"hardware\":\"h100\",\"models\":[\"m\"]}");
            put(raw, "/registration/engines/silent", new Registration("silent", "http://127.0.0.1:9", "c1", "h100",
                    List.of("m"), PriorityScheduling.NONE, "/metrics").json());
            Duration health = Duration.ofMillis(200);
            EngineRegistrar north = Etcd.register(o, new Registration("north", "http://127.0.0.1:9", "c9", "h100",
                    List.of("m"), PriorityScheduling.NONE, "/metrics"), Duration.ofHours(1));
            EngineRegistrar a100 = Etcd.register(o, new Registration("a100", "http://127.0.0.1:9", "c1", "a100",
                    List.of("m"), PriorityScheduling.NONE, "/metrics"), Duration.ofHours(1));
            EngineRegistrar r1 = Etcd.register(o, engine("e1", e1, "/metrics"), health);
            EngineRegistrar r2 = Etcd.register(o, engine("e2", e2, null), health);

            assertThat(EtcdCluster.await(() -> engines(cp).equals(Set.of("e1", "e2", "silent")), Duration.ofSeconds(20)))
                    .as("registered engines join: " + engines(cp)).isTrue();
            // in service once seen answering, e2 (no metrics) through canaries; the optimizer may still leave one of
            // them without traffic when a canary found it slower than the other
            assertThat(EtcdCluster.await(() -> inService(cp, "e1") && inService(cp, "e2")
                    && (routed(cp, "e1") || routed(cp, "e2")), Duration.ofSeconds(30)))
                    .as("both in service once seen answering: " + health(cp).get("engines")).isTrue();
            JsonNode h = health(cp);
            assertThat(h.get("engines").get("silent").get("healthy").asBoolean())
                    .as("never answered: unproven, then down once a canary failed").isFalse();
            assertThat(routed(cp, "silent")).as("an engine never seen answering gets nothing").isFalse();
            assertThat(h.get("registered_engines").asInt()).isEqualTo(3);
            JsonNode refused = h.get("refused_registrations");
            assertThat(refused.get("garbage").asText()).startsWith("invalid: not JSON");
            assertThat(refused.get("bad-endpoint").asText()).startsWith("invalid: endpoint: '10.0.0.7:8000'");
            assertThat(refused.get("north").asText()).startsWith("unknown_cluster: cluster: unknown engine cluster 'c9'");
            assertThat(refused.get("a100").asText()).startsWith("unknown_hardware: hardware: unknown hardware kind 'a100'");
            String m = metrics(cp);
            assertThat(m).contains("sextant_control_registrations_refused_total{reason=\"invalid\"} 2.0",
                    "sextant_control_registrations_refused_total{reason=\"unknown_cluster\"} 1.0",
                    "sextant_control_registrations_refused_total{reason=\"unknown_hardware\"} 1.0",
                    "sextant_control_registered_engines 3.0");

            r2.halt(); // killed: its lease runs out
            north.close();
            a100.close();
            assertThat(EtcdCluster.await(() -> !engines(cp).contains("e2"), Duration.ofSeconds(20)))
                    .as("a killed registrar's engine leaves when its lease runs out").isTrue();
            e1.close(); // the engine dies; its registrar notices
            assertThat(EtcdCluster.await(() -> !r1.registered() && !engines(cp).contains("e1"), Duration.ofSeconds(20)))
                    .as("an engine that no longer answers its health checks leaves").isTrue();
            raw.getKVClient().delete(Keys.bytes("/registration/engines/silent")).get();
            assertThat(EtcdCluster.await(() -> cp.topology().engines().isEmpty(), Duration.ofSeconds(20))).isTrue();
            assertThat(EtcdCluster.await(() -> !routed(cp, "e1") && !routed(cp, "e2"), Duration.ofSeconds(20)))
                    .as("and its traffic with it").isTrue();
            r1.close();
        }
    }

    private static void put(Client c, String key, String value) throws Exception {
        c.getKVClient().put(Keys.bytes(key), Keys.bytes(value)).get();
    }
}
