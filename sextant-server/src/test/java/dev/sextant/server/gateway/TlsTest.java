package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.config.TopologyLoader;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.server.control.ControlPlane;
import dev.sextant.server.control.ControlPlaneConfig;
import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.server.internal.Http;
import dev.sextant.signal.PrometheusText;
import dev.sextant.server.tls.ClientTls;
import dev.sextant.server.tls.ServerTls;
import dev.sextant.server.tls.TestPki;
import dev.sextant.server.tls.TlsContexts;
import dev.sextant.snapshot.Snapshot;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.bouncycastle.asn1.x509.GeneralName;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * TLS between gateways, control plane and engines, on loopback with a CA and certificates made at test time: the
 * whole path verified end to end, and refused when a certificate is not trusted or does not name the host.
 */
class TlsTest {
    static final String TOKEN = "tls-test-token-41c9";

    @TempDir
    Path dir;
    TestPki pki;
    TestPki rogue;
    ClientTls trusting;
    HttpClient client;
    final List<AutoCloseable> open = new ArrayList<>();

    @BeforeEach
    void pki() throws Exception {
        pki = new TestPki(dir, "sextant");
        rogue = new TestPki(dir, "rogue");
        trusting = ClientTls.trusting(pki.caFile);
        client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).sslContext(TlsContexts.jdkClient(trusting))
                .build();
    }

    @AfterEach
    void close() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private <T extends AutoCloseable> T keep(T t) {
        open.add(t);
        return t;
    }

    private EngineEmulator engine(String id, ServerTls tls) {
        return keep(EngineEmulator.start(EngineConfig.defaults(id, "m").withLatency(64, 0, 1, 0).withDefaultMaxTokens(4),
                tls, null));
    }

    private static String yaml(Map<String, EngineEmulator> engines) {
        StringBuilder y = new StringBuilder("gateway_clusters: [{id: gw, region: eu-west}]\n"
                + "engine_clusters: [{id: c-eu, region: eu-west}]\n"
                + "network_rtt_ms: {gw: {c-eu: 2}}\n"
                + "models: [{id: m, output_tokens: 4}]\nengines:\n");
        engines.forEach((id, e) -> y.append("  - {id: ").append(id).append(", cluster: c-eu, endpoint: 'https://127.0.0.1:")
                .append(e.port()).append("', models: [m], capacity_rps: 100, profile: {ttft_ms: 20, tbt_ms: 5}}\n"));
        y.append("classes: [{id: chat, model: m}]\ndemand_rps: {gw: {chat: 20}}\n");
        return y.toString();
    }

    private HttpResponse<String> post(URI base, String body) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create(base + "/v1/chat/completions")).timeout(Duration.ofSeconds(20))
                .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> get(URI uri) throws Exception {
        return client.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(20)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void everyHopOverTls_withVerifiedCertificates_servesAndScrapes() throws Exception {
        Map<String, EngineEmulator> engines = new LinkedHashMap<>();
        engines.put("e-1", engine("e-1", pki.issue("e-1").server()));
        engines.put("e-2", engine("e-2", pki.issue("e-2").server()));
        Path file = Files.writeString(dir.resolve("topology.yaml"), yaml(engines));
        ControlPlane cp = keep(ControlPlane.start(ControlPlaneConfig.defaults(file, TOKEN)
                .withIntervals(Duration.ofHours(1), Duration.ofHours(1), Duration.ofMillis(1), Duration.ofSeconds(10), 2)
                .withTls(pki.issue("control-plane").server(), trusting)));
        assertThat(cp.uri().getScheme()).isEqualTo("https");

        cp.tickNow(); // scrapes both engines over https
        JsonNode health = Http.JSON.readTree(get(URI.create(cp.uri() + "/healthz")).body());
        for (String id : engines.keySet()) {
            assertThat(health.path("engines").path(id).path("healthy").asBoolean()).as(id).isTrue();
            assertThat(health.path("engines").path(id).path("scrape_error").isNull()).as(id).isTrue();
            assertThat(health.path("engines").path(id).path("missed_scrapes").asInt()).as(id).isZero();
        }

        GatewayConfig config = GatewayConfig.defaults("gw").withAccessLog(false)
                .withControlPlane(cp.uri(), TOKEN, Duration.ofMillis(100))
                .withTls(pki.issue("gateway").server(), trusting);
        Gateway gw = keep(Gateway.start(config,
                SnapshotSource.longPoll(cp.uri(), "gw", TOKEN, Duration.ofSeconds(20), trusting), 2));
        URI base = URI.create("https://127.0.0.1:" + gw.port());
        for (int i = 0; i < 10; i++) {
            HttpResponse<String> r = post(base, Fleet.chat("k" + i, i % 2 == 0, 4));
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("x-sextant-engine").orElseThrow()).isIn("e-1", "e-2");
            assertThat(r.body()).contains(i % 2 == 0 ? "data: [DONE]" : "\"finish_reason\"");
        }
        assertThat(engines.values().stream().mapToLong(EngineEmulator::generatedTokens).sum()).isEqualTo(40);
        // the reports reach the control plane over TLS too, with the token
        assertThat(Fleet.await(() -> metric(cp, "sextant_control_reports_total") >= 1, Duration.ofSeconds(10))).isTrue();
        assertThat(metric(cp, "sextant_control_unauthorized_requests_total")).isZero();

        // a plain-HTTP client gets no answer from a TLS listener
        assertThatThrownBy(() -> Fleet.HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gw.port()
                + "/healthz")).timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.ofString()))
                .isInstanceOf(java.io.IOException.class);
    }

    private double metric(ControlPlane cp, String name) {
        try {
            return AuthTest.counter(get(URI.create(cp.uri() + "/metrics")).body(), name);
        } catch (Exception e) {
            return -1;
        }
    }

    @Test
    void controlPlaneWithAnUntrustedCertificate_isRefused_andNoSnapshotIsAccepted() throws Exception {
        assertControlPlaneRefused(rogue.issue("control-plane").server(), "PKIX");
    }

    @Test
    void controlPlaneWhoseCertificateNamesAnotherHost_isRefused() throws Exception {
        ServerTls wrongName = pki.issue("elsewhere", new GeneralName(GeneralName.dNSName, "elsewhere.example")).server();
        assertControlPlaneRefused(wrongName, "127.0.0.1");
    }

    private void assertControlPlaneRefused(ServerTls cpTls, String reason) throws Exception {
        Map<String, EngineEmulator> engines = Map.of("e-1", engine("e-1", pki.issue("e-1").server()));
        Path file = Files.writeString(dir.resolve("topology.yaml"), yaml(engines));
        ControlPlane cp = keep(ControlPlane.start(ControlPlaneConfig.defaults(file, TOKEN)
                .withIntervals(Duration.ofHours(1), Duration.ofHours(1), Duration.ofHours(1), Duration.ofSeconds(10), 2)
                .withTls(cpTls, trusting)));
        List<Snapshot> received = new CopyOnWriteArrayList<>();
        try (LogCapture logs = new LogCapture();
             SnapshotSource source = SnapshotSource.longPoll(cp.uri(), "gw", TOKEN, Duration.ofSeconds(5), trusting)) {
            source.start(received::add);
            assertThat(Fleet.await(() -> logs.any("unreachable", "SSLHandshakeException"), Duration.ofSeconds(20)))
                    .as("a log line naming the handshake failure").isTrue();
            assertThat(logs.lines().stream().filter(l -> l.contains("SSLHandshakeException")).findFirst().orElseThrow())
                    .contains(reason);
            assertThat(received).as("snapshots accepted from an unverified control plane").isEmpty();
        }
    }

    @Test
    void engineWithAnUntrustedCertificate_getsNoRequest_andIsNotScrapedAsHealthy() throws Exception {
        EngineEmulator bad = engine("e-1", rogue.issue("e-1").server());
        Map<String, EngineEmulator> engines = Map.of("e-1", bad);
        Path file = Files.writeString(dir.resolve("topology.yaml"), yaml(engines));
        ControlPlane cp = keep(ControlPlane.start(ControlPlaneConfig.defaults(file, TOKEN)
                .withIntervals(Duration.ofHours(1), Duration.ofHours(1), Duration.ofMillis(1), Duration.ofSeconds(10), 1)
                .withTls(null, trusting)));
        cp.tickNow();
        JsonNode e1 = Http.JSON.readTree(Fleet.get(cp.port(), "/healthz").body()).path("engines").path("e-1");
        assertThat(e1.path("healthy").asBoolean()).isFalse();
        assertThat(e1.path("scrape_error").asText()).contains("PKIX");

        Snapshot snapshot = Policies.optimal().solve(TopologyLoader.load(yaml(engines), "t.yaml"), SolveOptions.defaults());
        Gateway gw = keep(Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false).withTls(null, trusting),
                SnapshotSource.fixed(snapshot), 2));
        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 4));
        assertThat(r.statusCode()).isBetween(502, 503);
        assertThat(r.body()).contains("e-1").contains("PKIX");
        assertThat(bad.generatedTokens()).isZero();
    }

    @Test
    void probesAndConnectTimes_overTls_aTrustedEngineAnswers_anUntrustedOneIsAConnectError() throws Exception {
        Map<String, EngineEmulator> engines = new LinkedHashMap<>();
        engines.put("e-1", engine("e-1", pki.issue("e-1").server()));
        engines.put("e-2", engine("e-2", rogue.issue("e-2").server()));
        Snapshot snapshot = Policies.optimal().solve(TopologyLoader.load(yaml(engines), "t.yaml"), SolveOptions.defaults());
        Gateway gw = keep(Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false).withTls(null, trusting)
                        .withControlPlane(URI.create("https://127.0.0.1:9"), (String) null, Duration.ofHours(1))
                        .withProbeInterval(Duration.ofMillis(50)),
                SnapshotSource.fixed(snapshot), 1));
        HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k", false, 2));
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("x-sextant-engine")).hasValue("e-1");

        Map<String, Long> sums = new java.util.HashMap<>();
        java.util.List<JsonNode> rtts = new CopyOnWriteArrayList<>();
        assertThat(Fleet.await(() -> {
            try {
                JsonNode report = Http.JSON.readTree(gw.reporter.drain());
                for (String e : List.of("e-1", "e-2")) {
                    for (String f : List.of("probes", "probe_failures", "connect_count", "successes")) {
                        sums.merge(e + "." + f, report.path("engines").path(e).path(f).asLong(), Long::sum);
                    }
                }
                if (report.path("rtt_ms").has("c-eu")) {
                    rtts.add(report.path("rtt_ms").path("c-eu"));
                }
            } catch (java.io.IOException e) {
                throw new IllegalStateException(e);
            }
            return sums.get("e-1.probes") >= 1 && sums.get("e-2.probe_failures") >= 1;
        }, Duration.ofSeconds(30))).isTrue();
        assertThat(sums.get("e-1.probe_failures")).isZero();
        assertThat(sums.get("e-2.probes")).as("every probe of the untrusted engine failed")
                .isEqualTo(sums.get("e-2.probe_failures"));
        assertThat(rtts).as("round trips from the trusted engine's answers").isNotEmpty();
        assertThat(sums.get("e-1.successes")).isEqualTo(1);
        assertThat(sums.get("e-1.connect_count")).as("the request's TLS connection, handshake done").isEqualTo(1);
        assertThat(PrometheusText.parse(Fleet.get(gw.port(), "/metrics").body()).samples("sextant_gateway_probes_total")
                .stream().filter(x -> "connect_error".equals(x.labels().get("outcome"))).findFirst().orElseThrow()
                .value()).as("the handshake refused").isPositive();
    }

    @Test
    void mutualTls_controlPlaneRequiringClientCertificates_servesOnlyHoldersOfOne() throws Exception {
        Map<String, EngineEmulator> engines = Map.of("e-1", engine("e-1", pki.issue("e-1").server()));
        Path file = Files.writeString(dir.resolve("topology.yaml"), yaml(engines));
        TestPki.Issued cpCert = pki.issue("control-plane");
        ControlPlane cp = keep(ControlPlane.start(ControlPlaneConfig.defaults(file, TOKEN)
                .withIntervals(Duration.ofHours(1), Duration.ofHours(1), Duration.ofHours(1), Duration.ofSeconds(10), 2)
                .withTls(new ServerTls(cpCert.certificateFile(), cpCert.keyFile(), pki.caFile), trusting)));
        TestPki.Issued gwCert = pki.issue("gateway");
        TestPki.Issued rogueCert = rogue.issue("gateway");
        List<Snapshot> withCert = new CopyOnWriteArrayList<>();
        List<Snapshot> withRogueCert = new CopyOnWriteArrayList<>();
        List<Snapshot> without = new CopyOnWriteArrayList<>();
        try (LogCapture logs = new LogCapture();
             SnapshotSource a = SnapshotSource.longPoll(cp.uri(), "gw", TOKEN, Duration.ofSeconds(5),
                     new ClientTls(pki.caFile, gwCert.certificateFile(), gwCert.keyFile()));
             SnapshotSource b = SnapshotSource.longPoll(cp.uri(), "gw", TOKEN, Duration.ofSeconds(5),
                     new ClientTls(pki.caFile, rogueCert.certificateFile(), rogueCert.keyFile()));
             SnapshotSource c = SnapshotSource.longPoll(cp.uri(), "gw", TOKEN, Duration.ofSeconds(5), trusting)) {
            a.start(withCert::add);
            b.start(withRogueCert::add);
            c.start(without::add);
            assertThat(Fleet.await(() -> !withCert.isEmpty(), Duration.ofSeconds(20))).isTrue();
            assertThat(withCert.get(0)).isEqualTo(cp.current());
            assertThat(Fleet.await(() -> logs.lines().stream().filter(l -> l.contains("unreachable")).count() >= 2,
                    Duration.ofSeconds(20))).as("both clients without a trusted certificate refused").isTrue();
            assertThat(withRogueCert).isEmpty();
            assertThat(without).isEmpty();
        }
    }

    @Test
    void unusableTlsFiles_failTheStart_namingTheKeyAndFile() throws Exception {
        Path missing = dir.resolve("nope.pem");
        assertThatThrownBy(() -> EngineEmulator.start(EngineConfig.defaults("e", "m"),
                new ServerTls(missing, missing, null), null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tls_cert_file")
                .hasMessageContaining("nope.pem");
        Path garbage = Files.writeString(dir.resolve("garbage.pem"), "not a certificate");
        TestPki.Issued ok = pki.issue("x");
        assertThatThrownBy(() -> TlsContexts.server(new ServerTls(garbage, ok.keyFile(), null)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("garbage.pem");
        assertThatThrownBy(() -> TlsContexts.client(ClientTls.trusting(garbage)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("garbage.pem");
    }
}
