package dev.sextant.server.demo;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sextant.server.gateway.Fleet;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The demo's load driver counts every request once: answered, failed, shed or still in flight; and its summary shows
 * the loop: where each gateway cluster's requests went and what they saw there, the control plane's estimates, and
 * its last step, with the demand it plans for observed from the load.
 */
class LoadDriverTest {
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void underLoad_theSummaryShowsRoutesEstimatesAndTheStep_andTheControlPlanePlansForTheObservedDemand()
            throws Exception {
        try (Demo demo = Demo.start(0, 0, Demo.Demand.OBSERVED)) {
            Lines lines = new Lines();
            // 60 req/s split as the topology's demand (100 : 20 : 30): east 40, eu 8 of chat and 12 of chat-eu
            try (LoadDriver load = demo.loadDriver(60, Duration.ofMillis(1000),
                    new PrintStream(lines, true, StandardCharsets.UTF_8))) {
                // the control plane's engines have estimates from their scrapes, and its demand comes from reports
                boolean shown = Fleet.await(() -> {
                    String last = lines.lastSummary();
                    // the topology's demand is the floor of the first reports until they refute it (a few reports)
                    return last.contains("east  chat ") && last.contains(" req/s observed (configured 100)")
                            && last.contains(" req/s observed (configured 30)") && last.contains("estimated from ");
                }, Duration.ofSeconds(90));
                String last = lines.lastSummary();
                assertThat(shown).as(lines.toString()).isTrue();
                assertThat(last).as(last)
                        .containsPattern("(?m)^t= *\\d+s  requests \\d+  ok \\d+  errors 0  shed 0  in flight \\d+  "
                                + "TTFT p50 [0-9.]+ ms  p99 [0-9.]+ ms$")
                        // east's requests, and what they saw, per engine cluster
                        .containsPattern("(?m)^    → gpu-us-east +\\d+% \\(plan +\\d+%\\)  "
                                + "TTFT p50 +\\d+ ms p99 +\\d+ ms"
                                + "  done p50 +\\d+ ms  RTT +\\d+ ms$")
                        // eu's class chat-eu may only be served in eu-west
                        .containsPattern("(?m)^  eu    chat [0-9.]+ req/s observed \\(configured 20\\); "
                                + "chat-eu [0-9.]+ "
                                + "req/s observed \\(configured 30\\)(?:\\n    → [^\\n]*)*?\\n    → gpu-eu-west")
                        // the estimates, engines with the same one on one line, against their rating
                        .containsPattern("(?m)^  use-\\d( use-2)? +healthy +[0-9.]+ req/s \\(configured 40\\)"
                                + "(, [0-9.]+× slower)?: "
                                + "(estimated from \\d+ requests over [0-9.]+ (ms|s|min|h)|as configured)")
                        .containsPattern("(?m)^  last step: (published|kept) snapshot \\d+: .+");
                for (String summary : lines.summaries()) {
                    assertThat(summary.lines().count()).as(summary).isLessThanOrEqualTo(15);
                    assertThat(summary.lines()).as(summary).allMatch(l -> l.length() <= LoadDriver.WIDTH);
                }
                // and the control plane itself: its demand is what the gateways observe, and comes to the load's
                // split (the first reports may carry the start's backlog: a 2 s report of a burst)
                assertThat(Fleet.await(() -> between(demand(demo, "east", "chat"), 30, 50)
                        && between(demand(demo, "eu", "chat-eu"), 8, 16), Duration.ofSeconds(60)))
                        .as("east/chat near 40 req/s, eu/chat-eu near 12: %s, %s", demand(demo, "east", "chat"),
                                demand(demo, "eu", "chat-eu")).isTrue();
                assertThat(demand(demo, "east", "chat").path("why").asText()).startsWith("observed: ");
                assertThat(demand(demo, "eu", "chat-eu").path("why").asText()).startsWith("observed: ");
            }
        }
    }

    @Test
    void withoutLoad_theControlPlanePlansForTheTopologysDemand() throws Exception {
        try (Demo demo = Demo.start(0, 0)) {
            assertThat(demo.demand()).isEqualTo(Demo.Demand.CONFIGURED);
            JsonNode demand = explain(demo, "east", "chat").path("estimates").path("demand").path("chat");
            assertThat(demand.path("why").asText()).isEqualTo("configured (demand from reports is off)");
            assertThat(demand.path("rps").asDouble()).isEqualTo(100.0);
        }
    }

    @Test
    void theMix_isTheTopologysDemand() {
        assertThat(Demo.demandSummary()).isEqualTo("east chat 100, eu chat 20 + chat-eu 30 req/s");
        assertThat(Demo.DEMAND_RPS.values().stream().flatMap(m -> m.values().stream())
                .mapToDouble(Double::doubleValue).sum()).isEqualTo(Demo.TOPOLOGY_RPS);
        assertThat(Demo.topology(Map.of()))
                .contains("demand_rps:\n  east: {chat: 100}\n  eu: {chat: 20, chat-eu: 30}\n");
    }

    @Test
    void aLongLine_wrapsAtASpaceWithinTheWidth() {
        StringBuilder b = new StringBuilder();
        LoadDriver.wrap("  last step: " + "word ".repeat(40).strip(), b);
        assertThat(b.toString().lines()).hasSizeGreaterThan(1).allMatch(l -> l.length() <= LoadDriver.WIDTH);
        assertThat(b.toString().replaceAll("\\s+", " ").strip()).isEqualTo("last step: " + "word ".repeat(40).strip());
    }

    /** The control plane's estimate of the demand of {@code trafficClass} at {@code gateway}. */
    private static JsonNode demand(Demo demo, String gateway, String trafficClass) {
        try {
            return explain(demo, gateway, trafficClass).path("estimates").path("demand").path(trafficClass);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static boolean between(JsonNode demand, double low, double high) {
        double rps = demand.path("rps").asDouble(Double.NaN);
        return rps >= low && rps <= high;
    }

    private static JsonNode explain(Demo demo, String gateway, String trafficClass) throws Exception {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(demo.controlPlaneUri().resolve(
                        "/v1/explain?gateway=" + gateway + "&class=" + trafficClass))
                .header("authorization", "Bearer " + demo.token()).timeout(Duration.ofSeconds(20)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body());
    }

    /** What the driver printed; a summary begins with its "t=" line. */
    private static final class Lines extends ByteArrayOutputStream {
        synchronized List<String> summaries() {
            List<String> out = new ArrayList<>();
            for (String part : toString(StandardCharsets.UTF_8).split("(?m)^(?=t=)")) {
                if (part.startsWith("t=")) {
                    out.add(part);
                }
            }
            return out;
        }

        /** The last complete summary (one followed by the next), or "" before there is one. */
        String lastSummary() {
            List<String> s = summaries();
            return s.size() < 2 ? "" : s.get(s.size() - 2);
        }

        @Override
        public synchronized String toString() {
            return toString(StandardCharsets.UTF_8);
        }
    }

    @Test
    void aStreamCutAfterItsFirstChunk_isOneErrorPerRequest() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            Thread cutter = new Thread(() -> cutEveryStream(server), "stream-cutter");
            cutter.setDaemon(true);
            cutter.start();
            ByteArrayOutputStream lines = new ByteArrayOutputStream();
            LoadDriver load = new LoadDriver(List.of(new LoadDriver.Stream("east",
                    URI.create("http://127.0.0.1:" + server.getLocalPort()), "chat", null, 1)), Map.of(), null, 50,
                    Duration.ofMillis(200), new PrintStream(lines, true, StandardCharsets.UTF_8));
            assertThat(Fleet.await(() -> load.sent() >= 20, Duration.ofSeconds(20))).as("sent some").isTrue();
            load.close();
            Fleet.await(() -> load.errors() >= load.sent(), Duration.ofSeconds(20));
            assertThat(load.sent()).isPositive();
            assertThat(load.ok()).isZero();
            assertThat(load.errors()).as("errors, one per request sent").isEqualTo(load.sent());
            assertThat(lines.toString(StandardCharsets.UTF_8)).contains("in flight ");
        }
    }

    /** Answers each request with 200 and one SSE chunk, then closes the connection in the middle of the body. */
    private static void cutEveryStream(ServerSocket server) {
        while (!server.isClosed()) {
            try (Socket s = server.accept()) {
                InputStream in = s.getInputStream();
                byte[] buf = new byte[8192];
                int n = in.read(buf); // the request (small: one read holds it)
                if (n < 0) {
                    continue;
                }
                String chunk = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n";
                OutputStream out = s.getOutputStream();
                out.write(("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                        + Integer.toHexString(chunk.length()) + "\r\n" + chunk + "\r\n").getBytes(StandardCharsets.UTF_8));
                out.flush();
            } catch (Exception e) {
                // the server socket closed, or the client went: next one
            }
        }
    }
}
