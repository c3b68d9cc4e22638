package dev.sextant.server.demo;

import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * A simple open-loop client for the demo: sends streaming chat requests at a fixed rate to the gateways, split
 * between its streams (gateway cluster, class) in proportion to their weights, with conversations of a few turns
 * each, and prints a summary every interval.
 *
 * <p>The summary, at most about 15 lines of at most {@value #WIDTH} columns: requests, errors, TTFT p50/p99 as the
 * client saw it; then per gateway cluster the demand the control plane plans for (observed or configured), and per
 * engine cluster that answered its requests in the interval their share (and the share the published snapshot plans),
 * the TTFT and end-to-end p50 the client saw there and the round trip the control plane believes in; then the control
 * plane's estimate of each engine's capacity (engines with the same estimate on one line) against its configured
 * rating, with its condition, and the last step of the control loop (published or kept, and why). The engine that
 * answered is the gateway's {@code x-sextant-engine} response header; the control plane's side comes from its
 * {@code /healthz} and {@code /v1/explain}.
 */
public final class LoadDriver implements AutoCloseable {
    /**
     * Most requests per second one driver offers: far beyond what the demo's engines serve (6 × 40 req/s), and
     * bounded so that a tick (10 ms) sends at most 100 requests instead of looping without end.
     */
    public static final double MAX_RPS = 10_000;
    /** The width the summary's lines keep to (longer ones wrap). */
    static final int WIDTH = 100;

    /**
     * One kind of request the driver sends.
     *
     * @param gateway      the gateway cluster's id, as the topology names it
     * @param uri          a gateway of that cluster
     * @param trafficClass the class these requests fall in (what the control plane is asked to explain)
     * @param residency    the {@code x-sextant-residency} header that selects it, or null for none
     * @param weight       its share of the rate, relative to the others' (&gt; 0)
     */
    public record Stream(String gateway, URI uri, String trafficClass, String residency, double weight) {
        public Stream {
            if (!(weight > 0) || Double.isInfinite(weight)) {
                throw new IllegalArgumentException("weight: " + weight + " (expected: > 0)");
            }
        }
    }

    /**
     * The control plane whose estimates the summary shows.
     *
     * @param uri   its base URL
     * @param token its bearer token (for {@code /v1/explain})
     */
    public record Watch(URI uri, String token) {
    }


    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(2)).build();
    private final ScheduledExecutorService timer = daemon("sextant-demo-load");
    /** Summaries on a thread of their own: asking the control plane must not delay the sending. */
    private final ScheduledExecutorService summaries = daemon("sextant-demo-summary");
    private final List<Stream> streams;
    private final double[] current;
    private final double totalWeight;
    private final long[] perStream;
    private final Map<String, String> engineClusters;
    private final Watch watch;
    private final double rps;
    private final PrintStream out;
    private final Recorder ttft = new Recorder(3);
    private final LongAdder sent = new LongAdder();
    private final LongAdder ok = new LongAdder();
    private final LongAdder errors = new LongAdder();
    private final LongAdder shed = new LongAdder();
    /** Gateway cluster → engine cluster → what its requests saw there in the current interval. */
    private final Map<String, Map<String, Route>> routes = new ConcurrentHashMap<>();
    private final AtomicLong seq = new AtomicLong();
    private final long startNanos = System.nanoTime();
    private double carry;
    private volatile boolean closed;

    /**
     * Starts sending.
     *
     * @param streams        what to send, at least one
     * @param engineClusters engine id → its engine cluster (an engine not listed is its own); the summary lists the
     *                       engine clusters in its order
     * @param watch          the control plane whose estimates each summary shows, or null for none
     * @param rps            requests per second in all, &gt; 0
     * @param every          summary interval
     * @param out            where summaries go
     */
    public LoadDriver(List<Stream> streams, Map<String, String> engineClusters, Watch watch, double rps,
                      Duration every, PrintStream out) {
        if (!(rps > 0 && rps <= MAX_RPS)) {
            throw new IllegalArgumentException("load: " + rps + " (expected: > 0 and <= " + MAX_RPS + " req/s)");
        }
        if (streams.isEmpty()) {
            throw new IllegalArgumentException("streams: none (expected: at least one)");
        }
        this.streams = List.copyOf(streams);
        this.current = new double[streams.size()];
        this.perStream = new long[streams.size()];
        this.totalWeight = streams.stream().mapToDouble(Stream::weight).sum();
        this.engineClusters = Collections.unmodifiableMap(new LinkedHashMap<>(engineClusters)); // in its order
        this.watch = watch;
        this.rps = rps;
        this.out = out;
        timer.scheduleAtFixedRate(this::tick, 0, 10, TimeUnit.MILLISECONDS);
        summaries.scheduleAtFixedRate(this::summary, every.toMillis(), every.toMillis(), TimeUnit.MILLISECONDS);
    }

    private static ScheduledExecutorService daemon(String name) {
        return Executors.newScheduledThreadPool(1, r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        });
    }

    private void tick() {
        carry += rps / 100.0;
        while (carry >= 1) {
            carry -= 1;
            send(next());
        }
    }

    /** Smooth weighted round robin: each stream's share of any run of requests is as near its weight's as can be. */
    private int next() {
        int best = 0;
        for (int i = 0; i < current.length; i++) {
            current[i] += streams.get(i).weight();
            if (current[i] > current[best]) {
                best = i;
            }
        }
        current[best] -= totalWeight;
        return best;
    }

    private void send(int stream) {
        Stream s = streams.get(stream);
        long n = seq.incrementAndGet();
        long k = perStream[stream]++;
        // a conversation comes back every ~500 × 4 requests of its stream
        String conversation = "conv-" + s.gateway() + "-" + s.trafficClass() + "-" + (k / 4) % 500;
        String body = "{\"model\":\"" + Demo.MODEL + "\",\"stream\":true,\"max_tokens\":" + Demo.OUTPUT_TOKENS
                + ",\"prompt_cache_key\":\""
                + conversation + "\",\"messages\":[{\"role\":\"user\",\"content\":\"Tell me about turn " + n + "\"}]}";
        HttpRequest.Builder b = HttpRequest.newBuilder(s.uri().resolve("/v1/chat/completions"))
                .timeout(Duration.ofSeconds(60)).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (s.residency() != null) {
            b.header("x-sextant-residency", s.residency());
        }
        sent.increment();
        long start = System.nanoTime();
        http.sendAsync(b.build(), info -> {
            if (info.statusCode() == 429) {
                shed.increment();
            }
            Route route = info.headers().firstValue("x-sextant-engine").map(e -> route(s.gateway(), e)).orElse(null);
            if (route != null) {
                route.requests.increment();
            }
            return HttpResponse.BodySubscribers.fromLineSubscriber(new Lines(start, info.statusCode(), route));
        }).whenComplete((r, err) -> {
            if (err != null) {
                errors.increment();
            }
        });
    }

    private Route route(String gateway, String engine) {
        return routes.computeIfAbsent(gateway, g -> new ConcurrentHashMap<>())
                .computeIfAbsent(engineClusters.getOrDefault(engine, engine), c -> new Route());
    }

    /** What the requests of one gateway cluster saw at one engine cluster. */
    private static final class Route {
        final LongAdder requests = new LongAdder();
        final Recorder ttft = new Recorder(3);
        final Recorder done = new Recorder(3);
    }

    private final class Lines implements Flow.Subscriber<String> {
        private final long start;
        private final int status;
        private final Route route;
        private boolean first = true;
        private boolean failed;

        Lines(long start, int status, Route route) {
            this.start = start;
            this.status = status;
            this.route = route;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(String line) {
            if (first && line.startsWith("data: ") && line.contains("\"content\":\"")
                    && !line.contains("\"content\":\"\"")) {
                first = false;
                long us = Math.max(1, (System.nanoTime() - start) / 1000);
                ttft.recordValue(us);
                if (route != null) {
                    route.ttft.recordValue(us);
                }
            }
            if (line.startsWith("data: {\"error\"")) {
                failed = true;
            }
        }

        @Override
        public void onError(Throwable t) {
            // counted once, where the whole exchange completes with this failure
        }

        @Override
        public void onComplete() {
            if (status == 200 && !failed) {
                ok.increment();
                if (route != null) {
                    route.done.recordValue(Math.max(1, (System.nanoTime() - start) / 1000));
                }
            } else if (status != 429) {
                errors.increment();
            }
        }
    }

    private void summary() {
        try {
            List<String> lines = summaryLines();
            if (closed) {
                return; // stopped while asking the control plane: the demo is going, and so is this summary
            }
            StringBuilder b = new StringBuilder();
            lines.forEach(l -> wrap(l, b));
            out.print(b);
            out.flush();
        } catch (RuntimeException e) {
            // a summary that failed must not end the summaries (scheduleAtFixedRate stops at an exception)
            if (!closed) {
                out.println("summary failed: " + e);
            }
        }
    }

    private List<String> summaryLines() {
        // ask the control plane first, while the interval's figures go on accumulating for a moment
        ControlView cp = watch == null ? null : ControlView.fetch(http, watch, streams);
        List<String> lines = new ArrayList<>();
        Histogram h = ttft.getIntervalHistogram();
        long done = ok.sum() + errors.sum() + shed.sum();
        lines.add(String.format(Locale.ROOT, "t=%4ds  requests %d  ok %d  errors %d  shed %d  in flight %d  "
                        + "TTFT p50 %.1f ms  p99 %.1f ms",
                Math.round((System.nanoTime() - startNanos) / 1e9), sent.sum(), ok.sum(), errors.sum(), shed.sum(),
                Math.max(0, sent.sum() - done), percentile(h, 50), percentile(h, 99)));
        Set<String> gateways = new LinkedHashSet<>();
        streams.forEach(s -> gateways.add(s.gateway()));
        routes.keySet().stream().sorted().forEach(gateways::add);
        int pad = gateways.stream().mapToInt(String::length).max().orElse(0);
        for (String g : gateways) {
            lines.add(String.format(Locale.ROOT, "  %-" + pad + "s  %s", g,
                    cp == null ? "" : cp.demand(g)).stripTrailing());
            lines.addAll(routeLines(g, cp));
        }
        if (cp != null) {
            lines.addAll(cp.engineLines());
            lines.add(cp.stepLine());
        }
        return lines;
    }

    private List<String> routeLines(String gateway, ControlView cp) {
        Map<String, Route> byCluster = routes.getOrDefault(gateway, Map.of());
        Map<String, long[]> counts = new LinkedHashMap<>();
        Map<String, Histogram[]> hists = new LinkedHashMap<>();
        Set<String> clusters = new LinkedHashSet<>(engineClusters.values());
        clusters.addAll(byCluster.keySet());
        long total = 0;
        for (String c : clusters) {
            Route r = byCluster.get(c);
            if (r == null) {
                // none of its requests went there yet: shown only where the snapshot plans some (below)
                counts.put(c, new long[]{0});
                hists.put(c, new Histogram[]{new Histogram(3), new Histogram(3)});
                continue;
            }
            long n = r.requests.sumThenReset();
            total += n;
            counts.put(c, new long[]{n});
            hists.put(c, new Histogram[]{r.ttft.getIntervalHistogram(), r.done.getIntervalHistogram()});
        }
        List<String> out = new ArrayList<>();
        int pad = clusters.stream().mapToInt(String::length).max().orElse(0);
        for (Map.Entry<String, long[]> e : counts.entrySet()) {
            String c = e.getKey();
            long n = e.getValue()[0];
            double planned = cp == null ? Double.NaN : cp.plannedShare(gateway, c, engineClusters);
            if (n == 0 && !(planned > 0)) {
                continue;
            }
            Histogram[] hs = hists.get(c);
            double rtt = cp == null ? Double.NaN : cp.roundTrip(gateway, c);
            out.add(String.format(Locale.ROOT, "    → %-" + pad + "s %4.0f%%%s  TTFT p50 %s p99 %s  done p50 %s%s", c,
                    100.0 * n / Math.max(1, total),
                    Double.isNaN(planned) ? "" : String.format(Locale.ROOT, " (plan %3.0f%%)", 100 * planned),
                    ms(percentile(hs[0], 50)), ms(percentile(hs[0], 99)), ms(percentile(hs[1], 50)),
                    Double.isNaN(rtt) ? "" : "  RTT " + ms(rtt)));
        }
        if (out.isEmpty() && total == 0) {
            out.add("    no answer in this interval");
        }
        return out;
    }

    private static double percentile(Histogram h, double p) {
        return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(p) / 1000.0;
    }

    private static String ms(double v) {
        return Double.isNaN(v) ? "   - ms" : String.format(Locale.ROOT, "%4.0f ms", v);
    }

    /** Appends {@code line}, wrapped at spaces to {@link #WIDTH} columns, continuation lines indented. */
    static void wrap(String line, StringBuilder out) {
        String rest = line;
        String indent = "";
        while (indent.length() + rest.length() > WIDTH) {
            int room = WIDTH - indent.length();
            int cut = rest.lastIndexOf(' ', room);
            if (cut <= rest.length() - rest.stripLeading().length()) {
                break; // a word longer than the line: leave it whole
            }
            out.append(indent).append(rest, 0, cut).append('\n');
            rest = rest.substring(cut + 1).stripLeading();
            indent = "        ";
        }
        out.append(indent).append(rest).append('\n');
    }

    /** Requests sent so far. */
    public long sent() {
        return sent.sum();
    }

    /** Requests answered completely with 200 so far. */
    public long ok() {
        return ok.sum();
    }

    /** Requests that failed (not counting 429 sheds). */
    public long errors() {
        return errors.sum();
    }

    @Override
    public void close() {
        closed = true;
        timer.shutdownNow();
        summaries.shutdownNow();
    }
}
