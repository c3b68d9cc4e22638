package dev.sextant.server.demo;

import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Recorder;

/**
 * A simple open-loop client for the demo: sends streaming chat requests at a fixed rate to the gateways (three
 * quarters to the first, the rest to the second, half of those restricted to eu-west), with conversations of a
 * few turns each, and prints one summary line every interval: requests, errors, TTFT p50/p99 as the client saw
 * it, and each engine's share.
 */
public final class LoadDriver implements AutoCloseable {
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(2)).build();
    private final ScheduledExecutorService timer = Executors.newScheduledThreadPool(1, r -> {
        Thread t = new Thread(r, "sextant-demo-load");
        t.setDaemon(true);
        return t;
    });
    private final List<URI> gateways;
    /**
     * Most requests per second one driver offers: far beyond what the demo's engines serve (6 × 40 req/s), and
     * bounded so that a tick (10 ms) sends at most 100 requests instead of looping without end.
     */
    public static final double MAX_RPS = 10_000;
    private final double rps;
    private final PrintStream out;
    private final Recorder ttft = new Recorder(3);
    private final LongAdder sent = new LongAdder();
    private final LongAdder ok = new LongAdder();
    private final LongAdder errors = new LongAdder();
    private final LongAdder shed = new LongAdder();
    private final Map<String, LongAdder> byEngine = new ConcurrentHashMap<>();
    private final AtomicLong seq = new AtomicLong();
    private final long startNanos = System.nanoTime();
    private double carry;

    /**
     * Starts sending.
     *
     * @param gateways gateway base URLs (at least one)
     * @param rps      requests per second, &gt; 0
     * @param every    summary interval
     * @param out      where summaries go
     */
    public LoadDriver(List<URI> gateways, double rps, Duration every, PrintStream out) {
        if (!(rps > 0 && rps <= MAX_RPS)) {
            throw new IllegalArgumentException("load: " + rps + " (expected: > 0 and <= " + MAX_RPS + " req/s)");
        }
        this.gateways = List.copyOf(gateways);
        this.rps = rps;
        this.out = out;
        timer.scheduleAtFixedRate(this::tick, 0, 10, TimeUnit.MILLISECONDS);
        timer.scheduleAtFixedRate(this::summary, every.toMillis(), every.toMillis(), TimeUnit.MILLISECONDS);
    }

    private void tick() {
        carry += rps / 100.0;
        while (carry >= 1) {
            carry -= 1;
            send();
        }
    }

    private void send() {
        long n = seq.incrementAndGet();
        int g = gateways.size() == 1 || n % 4 != 0 ? 0 : 1;
        boolean eu = g == 1 && n % 8 == 0;
        String conversation = "conv-" + (n / 4) % 500; // a conversation comes back every ~500 × 4 requests
        String body = "{\"model\":\"" + Demo.MODEL + "\",\"stream\":true,\"max_tokens\":16,\"prompt_cache_key\":\""
                + conversation + "\",\"messages\":[{\"role\":\"user\",\"content\":\"Tell me about turn " + n + "\"}]}";
        HttpRequest.Builder b = HttpRequest.newBuilder(gateways.get(g).resolve("/v1/chat/completions"))
                .timeout(Duration.ofSeconds(60)).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (eu) {
            b.header("x-sextant-residency", "eu-west");
        }
        sent.increment();
        long start = System.nanoTime();
        http.sendAsync(b.build(), info -> {
            if (info.statusCode() == 429) {
                shed.increment();
            }
            info.headers().firstValue("x-sextant-engine")
                    .ifPresent(e -> byEngine.computeIfAbsent(e, k -> new LongAdder()).increment());
            return HttpResponse.BodySubscribers.fromLineSubscriber(new Lines(start, info.statusCode()));
        }).whenComplete((r, err) -> {
            if (err != null) {
                errors.increment();
            }
        });
    }

    private final class Lines implements Flow.Subscriber<String> {
        private final long start;
        private final int status;
        private boolean first = true;
        private boolean failed;

        Lines(long start, int status) {
            this.start = start;
            this.status = status;
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
                ttft.recordValue(Math.max(1, (System.nanoTime() - start) / 1000));
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
            } else if (status != 429) {
                errors.increment();
            }
        }
    }

    private void summary() {
        var h = ttft.getIntervalHistogram();
        long total = byEngine.values().stream().mapToLong(LongAdder::sum).sum();
        StringBuilder shares = new StringBuilder();
        new TreeMap<>(byEngine).forEach((e, c) -> shares.append(' ').append(e).append(' ')
                .append(Math.round(100.0 * c.sum() / Math.max(1, total))).append('%'));
        long done = ok.sum() + errors.sum() + shed.sum();
        out.printf("t=%4ds  requests %d  ok %d  errors %d  shed %d  in flight %d  TTFT p50 %.1f ms  p99 %.1f ms  |%s%n",
                Math.round((System.nanoTime() - startNanos) / 1e9), sent.sum(), ok.sum(), errors.sum(), shed.sum(),
                Math.max(0, sent.sum() - done),
                h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(50) / 1000.0,
                h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(99) / 1000.0, shares);
        out.flush();
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
        timer.shutdownNow();
    }
}
