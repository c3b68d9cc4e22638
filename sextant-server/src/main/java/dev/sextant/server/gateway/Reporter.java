package dev.sextant.server.gateway;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sextant.request.Outcome;
import dev.sextant.request.ReuseTimes;
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
import java.util.concurrent.atomic.LongAdder;
import java.util.logging.Logger;

/**
 * The gateway's side of the signal path: counts arrivals per class, and per engine how each attempt ended, its
 * latencies (first byte, between chunks, end to end), new connections' set-up time and round-trip probes, and per
 * engine cluster the probes' round trips; every few seconds it posts them to the control plane's {@code /v1/reports}
 * from its own thread (JSON in {@code docs/servers.md}, "Signal reports"). The request path only adds to counters made
 * once per engine ({@link EngineStats}): adders, and for each latency's sum and count a lock of two additions
 * that threads seldom share ({@link Mean}); no allocation. A failed post is logged and dropped; a request never
 * waits for it.
 */
final class Reporter implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(Reporter.class.getName());
    /** The most of a control plane's answer to a report that is read: it answers 204, or an error of a line. */
    static final int MAX_ANSWER_BYTES = 64 * 1024;

    /**
     * A sum of durations and their count, from which a report's mean (ms) follows. Each sample goes whole into one of
     * a few cells, a cell's sum and count under the cell's lock, and a drain takes each cell whole: with a pair of
     * adders a drain between a sample's sum and its count moved the count into the next report without its time
     * ({@code ttft_ms} 0 beside {@code ttft_count} 1). A thread keeps to the cell of its id, so the event loops, a
     * few fixed threads with consecutive ids, seldom share one; one lock for all of them took ten times the adders'
     * time when two threads added at once ({@code ReporterMeanBenchmark}, BENCHMARKS.md).
     */
    static final class Mean {
        /** Cells: the smallest power of two at least twice the processors (at most 64), so that threads seldom meet. */
        static final int CELLS = Math.min(64, Integer.highestOneBit(
                Math.max(1, Runtime.getRuntime().availableProcessors()) * 4 - 1));

        private final Cell[] cells = new Cell[CELLS];

        Mean() {
            for (int i = 0; i < CELLS; i++) {
                cells[i] = new Cell();
            }
        }

        /** One sample, nanoseconds ≥ 0. */
        void add(long nanos) {
            Cell c = cells[(int) Thread.currentThread().getId() & (CELLS - 1)];
            synchronized (c) {
                c.ms += nanos / 1e6;
                c.count++;
            }
        }

        /** Puts {@code <name>_ms} (the mean, omitted when there was no sample) and {@code <name>_count}, resetting. */
        void drainInto(ObjectNode o, String name) {
            long n = 0;
            double sum = 0;
            for (Cell c : cells) {
                synchronized (c) {
                    n += c.count;
                    sum += c.ms;
                    c.count = 0;
                    c.ms = 0;
                }
            }
            if (n > 0) {
                o.put(name + "_ms", sum / n);
            }
            o.put(name + "_count", n);
        }

        /** A part of the sum and count; padded to a cache line of its own, so that cells side by side do not share one. */
        @SuppressWarnings("unused")
        private static final class Cell {
            private long p0, p1, p2, p3, p4, p5, p6;
            double ms;
            long count;
            private long q0, q1, q2, q3, q4, q5, q6;
        }
    }

    /**
     * One engine's counters, made the first time the engine is seen and kept. Every attempt on the engine ends in
     * exactly one {@link #attempt(Outcome)}, so that a report's {@code requests} is the sum of its kinds; an attempt
     * whose request never reached the engine ({@link Outcome#NOT_SENT}) is in none, since it tells nothing of the
     * engine.
     */
    static final class EngineStats {
        private final LongAdder successes = new LongAdder();
        private final LongAdder connectErrors = new LongAdder();
        private final LongAdder timeouts = new LongAdder();
        private final LongAdder serverErrors = new LongAdder();
        private final LongAdder busy = new LongAdder();
        private final LongAdder overloaded = new LongAdder();
        private final LongAdder cancelled = new LongAdder();
        /** From the attempt's request written to the engine to the first chunk of its answer's body. */
        final Mean ttft = new Mean();
        /** Between two chunks of an answer's body. */
        final Mean tbt = new Mean();
        /** From the attempt's request written to the engine to the last byte of a complete answer. */
        final Mean e2e = new Mean();
        /** Opening a new connection to the engine: TCP connect, and the TLS handshake when there is one. */
        final Mean connect = new Mean();
        private final LongAdder probes = new LongAdder();
        private final LongAdder probeFailures = new LongAdder();

        /** An attempt on the engine ended so. */
        void attempt(Outcome outcome) {
            switch (outcome) {
                case SUCCESS, CLIENT_ERROR -> successes.increment(); // a complete answer: the engine did its work
                case CONNECT_ERROR -> connectErrors.increment();
                case TIMEOUT -> timeouts.increment();
                case SERVER_ERROR -> serverErrors.increment();
                case ENGINE_BUSY -> busy.increment();
                case SYSTEM_OVERLOADED -> overloaded.increment();
                case CANCELLED -> cancelled.increment();
                case NOT_SENT -> { } // a connection the engine closed before it read the request: no signal of it
            }
        }

        /** A round-trip probe of the engine ended, answered 2xx or not. */
        void probe(boolean ok) {
            probes.increment();
            if (!ok) {
                probeFailures.increment();
            }
        }

        private void drainInto(ObjectNode o) {
            long ok = successes.sumThenReset();
            long refused = connectErrors.sumThenReset();
            long timeout = timeouts.sumThenReset();
            long server = serverErrors.sumThenReset();
            long tooBusy = busy.sumThenReset();
            long over = overloaded.sumThenReset();
            long gone = cancelled.sumThenReset();
            o.put("requests", ok + refused + timeout + server + tooBusy + over + gone);
            o.put("successes", ok);
            o.put("errors", refused + timeout + server);
            o.put("connect_errors", refused);
            o.put("timeouts", timeout);
            o.put("server_errors", server);
            o.put("busy", tooBusy);
            o.put("overloaded", over);
            o.put("cancelled", gone);
            ttft.drainInto(o, "ttft");
            tbt.drainInto(o, "tbt");
            e2e.drainInto(o, "e2e");
            connect.drainInto(o, "connect");
            o.put("probes", probes.sumThenReset());
            o.put("probe_failures", probeFailures.sumThenReset());
        }
    }

    /**
     * The round trips measured to one engine cluster. Locked, not adders: a probe's round trip is a few a second, off
     * the request path, and the three figures must be of the same samples (with separate adders a drain between a
     * probe's count and its minimum reported {@code min} 9.2e12 ms, no sample's, beside {@code count} 1).
     */
    private static final class RoundTrips {
        private long minNanos = Long.MAX_VALUE;
        private double ms;
        private long count;

        synchronized void add(long nanos) {
            minNanos = Math.min(minNanos, nanos);
            ms += nanos / 1e6;
            count++;
        }

        /** {@code {"min", "mean", "count"}} in ms into {@code into} as {@code cluster}, unless there was no sample. */
        synchronized void drainInto(ObjectNode into, String cluster) {
            if (count > 0) {
                into.putObject(cluster).put("min", minNanos / 1e6).put("mean", ms / count).put("count", count);
            }
            minNanos = Long.MAX_VALUE;
            ms = 0;
            count = 0;
        }
    }

    private final String gatewayCluster;
    /**
     * This gateway's id among its cluster's gateways, 12 hex digits drawn at start: the control plane adds up the
     * reports of a cluster's gateways by it (a cluster with several gateways would otherwise be seen as one, each
     * report replacing the others'). A restarted gateway is a new instance; the old one's reports age out.
     */
    final String instance = newInstance();
    private final Map<String, LongAdder> demand = new ConcurrentHashMap<>();
    /**
     * The times between the end of a conversation's request and its next request, per class: what the control loop
     * reads how long an engine's prefix cache must keep a context from (docs/control-loop.md, "The prefix cache's
     * capacity"). 2^16 conversations in 512 KiB.
     */
    private final ReuseTimes reuse = new ReuseTimes(16);
    private final Map<String, EngineStats> engines = new ConcurrentHashMap<>();
    private final Map<String, RoundTrips> roundTrips = new ConcurrentHashMap<>();
    private final ScheduledExecutorService timer;
    private final HttpClient http;
    /** The control planes to send each report to (with etcd, every replica: a standby keeps its estimates warm). */
    private final java.util.function.Supplier<java.util.List<URI>> controlPlanes;
    private final dev.sextant.server.auth.BearerToken token;
    private long lastNanos = System.nanoTime();
    private volatile boolean failing;
    /** Engine id → requests placed on it and not ended, as the data plane counts them now (only those above 0). */
    private volatile java.util.function.Supplier<Map<String, Integer>> inFlight = Map::of;

    Reporter(String gatewayCluster, URI controlPlane, dev.sextant.server.auth.BearerToken token, Duration interval,
             dev.sextant.server.tls.ClientTls tls) {
        this(controlPlane == null ? null : () -> java.util.List.of(controlPlane), gatewayCluster, token, interval, tls);
    }

    /** Reports to the control planes {@code controlPlanes} names at each interval (base URLs), or none when null. */
    static Reporter toEach(String gatewayCluster, java.util.function.Supplier<java.util.List<URI>> controlPlanes,
                           dev.sextant.server.auth.BearerToken token, Duration interval,
                           dev.sextant.server.tls.ClientTls tls) {
        return new Reporter(controlPlanes, gatewayCluster, token, interval, tls);
    }

    private Reporter(java.util.function.Supplier<java.util.List<URI>> controlPlanes, String gatewayCluster,
                     dev.sextant.server.auth.BearerToken token, Duration interval, dev.sextant.server.tls.ClientTls tls) {
        this.gatewayCluster = gatewayCluster;
        this.token = token;
        this.controlPlanes = controlPlanes;
        if (controlPlanes == null) {
            this.timer = null;
            this.http = null;
            return;
        }
        this.http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2))
                .sslContext(dev.sextant.server.tls.TlsContexts.jdkClient(tls)).build();
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "sextant-gateway-reports");
            t.setDaemon(true);
            return t;
        });
        timer.scheduleAtFixedRate(this::send, interval.toMillis(), interval.toMillis(), TimeUnit.MILLISECONDS);
    }

    /**
     * A request classified into {@code classId} (null: not classified, not counted) arrived with conversation key
     * {@code key} (0: none) and a body of {@code bytes}: counted in the class's demand and, with its key, in the time
     * since its conversation's last request ended ({@link ReuseTimes}).
     */
    void request(String classId, long key, long bytes) {
        if (classId != null) {
            demand.computeIfAbsent(classId, k -> new LongAdder()).increment();
            if (key != 0) {
                reuse.arrived(reuse.counts(classId), key, bytes, System.nanoTime());
            }
        }
    }

    /**
     * The table of when each conversation's last request ended (on {@link System#nanoTime}), which the data plane reads
     * too (docs/request-path.md §4, "Spacing new conversations").
     */
    ReuseTimes lastEnds() {
        return reuse;
    }

    /** The request of conversation {@code key} (0: none) was answered whole at {@code nanos}. */
    void ended(long key, long nanos) {
        reuse.ended(key, nanos);
    }

    /**
     * Where each report reads the requests in flight per engine when it is made: what tells the control loop that an
     * engine was sent requests it has not answered, whatever its own gauges say (docs/control-loop.md, "STALLED").
     */
    void inFlightFrom(java.util.function.Supplier<Map<String, Integer>> source) {
        inFlight = source;
    }

    /** The counters of {@code engine}, made the first time. */
    EngineStats engine(String engine) {
        EngineStats s = engines.get(engine);
        return s != null ? s : engines.computeIfAbsent(engine, k -> new EngineStats());
    }

    /** A round trip to {@code engineCluster} measured by a probe, nanoseconds ≥ 0. */
    void roundTrip(String engineCluster, long nanos) {
        RoundTrips r = roundTrips.get(engineCluster);
        if (r == null) {
            r = roundTrips.computeIfAbsent(engineCluster, k -> new RoundTrips());
        }
        r.add(nanos);
    }

    /** The report of the interval since the last one, resetting the counters; JSON as documented in servers.md. */
    String drain() {
        long now = System.nanoTime();
        double seconds = Math.max(1e-3, (now - lastNanos) / 1e9);
        lastNanos = now;
        ObjectNode root = Http.JSON.createObjectNode();
        root.put("gateway", gatewayCluster);
        root.put("instance", instance);
        root.put("interval_seconds", seconds);
        ObjectNode d = root.putObject("demand_rps");
        ObjectNode a = root.putObject("arrivals");
        demand.forEach((c, adder) -> {
            long n = adder.sumThenReset();
            d.put(c, n / seconds);
            a.put(c, n);
        });
        ObjectNode e = root.putObject("engines");
        engines.forEach((id, s) -> s.drainInto(e.putObject(id)));
        ObjectNode held = root.putObject("in_flight");
        new java.util.TreeMap<>(inFlight.get()).forEach(held::put);
        ObjectNode rtt = root.putObject("rtt_ms");
        roundTrips.forEach((cluster, r) -> r.drainInto(rtt, cluster));
        ObjectNode times = root.putObject("reuse");
        reuse.drain().forEach((c, counts) -> {
            com.fasterxml.jackson.databind.node.ArrayNode arr = times.putArray(c);
            for (long n : counts) {
                arr.add(n);
            }
        });
        return root.toString();
    }

    private static String newInstance() {
        byte[] b = new byte[6];
        new java.security.SecureRandom().nextBytes(b);
        return java.util.HexFormat.of().formatHex(b);
    }

    private void send() {
        String report = drain();
        for (URI controlPlane : controlPlanes.get()) {
            send(URI.create(controlPlane.toString().replaceAll("/+$", "") + "/v1/reports"), report);
        }
    }

    private void send(URI uri, String report) {
        try {
            HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5))
                    .header("content-type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(report));
            if (token != null) {
                b.header("authorization", "Bearer " + token.current());
            }
            // the head within 5 s (the request's timeout), the whole answer (a 204, or a short error) within 10 and
            // MAX_ANSWER_BYTES: whatever answers at that address (a proxy, a wrong port) holds no more of the gateway
            HttpResponse<String> r = dev.sextant.server.internal.WholeAnswer.send(http, b.build(),
                    dev.sextant.server.internal.BoundedBody.ofString(MAX_ANSWER_BYTES), Duration.ofSeconds(10));
            if (r.statusCode() / 100 != 2) { // the control plane's error says why (a 403: whose token this is)
                String body = r.body() == null ? "" : r.body().strip();
                throw new java.io.IOException("HTTP " + r.statusCode() + (body.isEmpty() ? ""
                        : ": " + (body.length() <= 300 ? body : body.substring(0, 300) + "...")));
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
