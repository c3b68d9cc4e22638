package dev.sextant.server.gateway;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sextant.server.internal.Http;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.DoubleAdder;
import java.util.concurrent.atomic.LongAdder;
import java.util.logging.Logger;

/**
 * The gateway's side of the signal path: counts demand per class and per-engine TTFT, TBT and errors on the
 * request path (adders only), and every few seconds posts them to the control plane's {@code /v1/reports} from
 * its own thread. A failed post is logged and dropped; a request never waits for it.
 */
final class Reporter implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(Reporter.class.getName());

    private static final class EngineStats {
        final LongAdder requests = new LongAdder();
        final LongAdder errors = new LongAdder();
        final DoubleAdder ttftMs = new DoubleAdder();
        final LongAdder ttftCount = new LongAdder();
        final DoubleAdder tbtMs = new DoubleAdder();
        final LongAdder tbtCount = new LongAdder();
    }

    private final String gatewayCluster;
    private final Map<String, LongAdder> demand = new ConcurrentHashMap<>();
    private final Map<String, EngineStats> engines = new ConcurrentHashMap<>();
    private final ScheduledExecutorService timer;
    private final HttpClient http;
    private final URI uri;
    private final dev.sextant.server.auth.BearerToken token;
    private long lastNanos = System.nanoTime();
    private volatile boolean failing;

    Reporter(String gatewayCluster, URI controlPlane, dev.sextant.server.auth.BearerToken token, Duration interval,
             dev.sextant.server.tls.ClientTls tls) {
        this.gatewayCluster = gatewayCluster;
        this.token = token;
        if (controlPlane == null) {
            this.timer = null;
            this.http = null;
            this.uri = null;
            return;
        }
        this.uri = URI.create(controlPlane.toString().replaceAll("/+$", "") + "/v1/reports");
        this.http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2))
                .sslContext(dev.sextant.server.tls.TlsContexts.jdkClient(tls)).build();
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "sextant-gateway-reports");
            t.setDaemon(true);
            return t;
        });
        timer.scheduleAtFixedRate(this::send, interval.toMillis(), interval.toMillis(), TimeUnit.MILLISECONDS);
    }

    void request(String classId) {
        if (classId != null) {
            demand.computeIfAbsent(classId, k -> new LongAdder()).increment();
        }
    }

    void attempt(String engine, boolean failure) {
        EngineStats s = engines.computeIfAbsent(engine, k -> new EngineStats());
        s.requests.increment();
        if (failure) {
            s.errors.increment();
        }
    }

    void ttft(String engine, long nanos) {
        EngineStats s = engines.computeIfAbsent(engine, k -> new EngineStats());
        s.ttftMs.add(nanos / 1e6);
        s.ttftCount.increment();
    }

    void tbt(String engine, long nanos) {
        EngineStats s = engines.computeIfAbsent(engine, k -> new EngineStats());
        s.tbtMs.add(nanos / 1e6);
        s.tbtCount.increment();
    }

    /** The report of the interval since the last one, resetting the counters; JSON as documented in servers.md. */
    String drain() {
        long now = System.nanoTime();
        double seconds = Math.max(1e-3, (now - lastNanos) / 1e9);
        lastNanos = now;
        ObjectNode root = Http.JSON.createObjectNode();
        root.put("gateway", gatewayCluster);
        root.put("interval_seconds", seconds);
        ObjectNode d = root.putObject("demand_rps");
        demand.forEach((c, n) -> d.put(c, n.sumThenReset() / seconds));
        ObjectNode e = root.putObject("engines");
        engines.forEach((id, s) -> {
            ObjectNode o = e.putObject(id);
            long req = s.requests.sumThenReset();
            long err = s.errors.sumThenReset();
            long tc = s.ttftCount.sumThenReset();
            double tms = s.ttftMs.sumThenReset();
            long bc = s.tbtCount.sumThenReset();
            double bms = s.tbtMs.sumThenReset();
            o.put("requests", req);
            o.put("errors", err);
            if (tc > 0) {
                o.put("ttft_ms", tms / tc);
            }
            if (bc > 0) {
                o.put("tbt_ms", bms / bc);
            }
        });
        return root.toString();
    }

    private void send() {
        try {
            HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5))
                    .header("content-type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(drain()));
            if (token != null) {
                b.header("authorization", "Bearer " + token.current());
            }
            HttpResponse<Void> r = http.send(b.build(), HttpResponse.BodyHandlers.discarding());
            if (r.statusCode() / 100 != 2) {
                throw new java.io.IOException("HTTP " + r.statusCode());
            }
            if (failing) {
                LOG.info("reports to " + uri.getAuthority() + " delivered again");
                failing = false;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            if (!failing) {
                LOG.warning("cannot send reports to " + uri + ": " + e + " (dropped; retrying next interval)");
                failing = true;
            }
        }
    }

    @Override
    public void close() {
        if (timer != null) {
            timer.shutdownNow();
        }
    }
}
