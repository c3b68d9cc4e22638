package dev.sextant.server.control;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.sextant.config.TopologyLoader;
import dev.sextant.control.ControlLoop;
import dev.sextant.request.Ticker;
import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.server.internal.TestHttpServers;
import dev.sextant.topology.Topology;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The control plane's scrapes of engines that answer {@code /metrics} with what no engine sends: a body beyond
 * {@link EngineProbes#MAX_METRICS_BYTES} is not read, and one that trickles on past the scrape's round ends there, its
 * connection closed; each is a failed scrape with its reason, and an engine beside them is scraped as ever.
 */
class EngineProbesTest {
    @Test
    void aBodyTooLarge_andOneThatNeverEnds_areFailedScrapes_andTheirConnectionsClosed() throws Exception {
        HttpServer big = TestHttpServers.loopback();
        big.createContext("/", ex -> {
            ex.sendResponseHeaders(200, 0); // chunked: no length announced
            byte[] line = "# HELP x a comment no scrape needs\n".repeat(1000).getBytes();
            try (OutputStream out = ex.getResponseBody()) {
                for (long sent = 0; sent <= EngineProbes.MAX_METRICS_BYTES; sent += line.length) {
                    out.write(line);
                }
            } catch (IOException e) {
                // the scrape stopped reading
            }
        });
        CountDownLatch trickleCut = new CountDownLatch(1);
        HttpServer trickle = TestHttpServers.loopback();
        trickle.createContext("/", ex -> {
            ex.sendResponseHeaders(200, 0);
            try (OutputStream out = ex.getResponseBody()) {
                for (int i = 0; i < 600; i++) { // a minute, a comment line every 100 ms
                    out.write("# still here\n".getBytes());
                    out.flush();
                    Thread.sleep(100);
                }
            } catch (IOException e) {
                trickleCut.countDown(); // the connection was closed under it
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        big.start();
        trickle.start();
        try (EngineEmulator ok = EngineEmulator.start(EngineConfig.defaults("ok", "m"))) {
            Topology t = TopologyLoader.load("gateway_clusters: [{id: gw, region: r}]\n"
                    + "engine_clusters: [{id: c, region: r}]\nnetwork_rtt_ms: {gw: {c: 1}}\n"
                    + "models: [{id: m, output_tokens: 8}]\nclasses: [{id: chat, model: m}]\n"
                    + "demand_rps: {gw: {chat: 10}}\nengines:\n"
                    + engine("big", big.getAddress().getPort()) + engine("trickle", trickle.getAddress().getPort())
                    + engine("ok", ok.port()), "probes.yaml");
            ControlPlaneConfig config = ControlPlaneConfig.defaults(Path.of("probes.yaml"), "tok").withIntervals(
                    Duration.ofSeconds(10), Duration.ofSeconds(1), Duration.ofSeconds(5), Duration.ofSeconds(2), 3);
            ControlLoop loop = ControlLoop.create(t, config.controlOptions(), Ticker.system(), null);
            EngineProbes probes = new EngineProbes(config, Ticker.system(), loop, new SimpleMeterRegistry());

            probes.scrapeIfDue(t, Map.of()); // one round, to its deadline

            assertThat(probes.scrapes().get("big").error())
                    .isEqualTo("a body of more than 16777216 bytes (expected: at most 16777216 bytes)");
            assertThat(probes.scrapes().get("trickle").error()).isEqualTo("no whole answer within 3000 ms");
            assertThat(probes.scrapes().get("ok").misses()).as("scraped as ever: %s", probes.scrapes().get("ok"))
                    .isZero();
            assertThat(trickleCut.await(30, TimeUnit.SECONDS)).as("the trickling answer's connection closed").isTrue();
            probes.close();
        } finally {
            big.stop(0);
            trickle.stop(0);
        }
    }

    private static String engine(String id, int port) {
        return "  - {id: " + id + ", cluster: c, endpoint: 'http://127.0.0.1:" + port + "', models: [m], "
                + "capacity_rps: 100, profile: {ttft_ms: 20, tbt_ms: 5}}\n";
    }
}
