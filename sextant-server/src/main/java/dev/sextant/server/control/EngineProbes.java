package dev.sextant.server.control;

import dev.sextant.control.Canary;
import dev.sextant.control.ControlLoop;
import dev.sextant.control.EngineScrape;
import dev.sextant.request.Ticker;
import dev.sextant.server.internal.BoundedBody;
import dev.sextant.server.tls.TlsContexts;
import dev.sextant.signal.EngineMetrics;
import dev.sextant.signal.PrometheusText;
import dev.sextant.topology.Engine;
import dev.sextant.topology.Topology;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;
import java.util.stream.Collectors;

/**
 * What the control plane asks the engines itself (signal path): a scrape of each engine's {@code /metrics} every
 * scrape interval ({@link EngineScrape}), and the canaries the loop finds due ({@link Canaries}). Both go out on
 * one HTTP client, with the engines' TLS, and their results go to the loop. Scrape rounds and canaries are started
 * on the policy thread; they end on the HTTP client's threads.
 */
final class EngineProbes implements AutoCloseable {
    /** The control plane's logger: one name for operators to set, whichever part of it speaks. */
    private static final Logger LOG = Logger.getLogger(ControlPlane.class.getName());
    /** A canary's longest run, request to {@code [DONE]}. */
    static final Duration CANARY_TIMEOUT = Duration.ofSeconds(10);
    /** What a scrape of an engine registered without metrics says: it is not sent. */
    static final String NO_METRICS = "registered without metrics";
    /**
     * The largest {@code /metrics} body read: a vLLM or SGLang engine's is tens of kilobytes (hundreds with many LoRA
     * adapters); more is no engine's, and held whole it would be the control plane's memory.
     */
    static final long MAX_METRICS_BYTES = 16L << 20;
    /** Canaries in flight at most. */
    static final int CANARIES_IN_FLIGHT = 16;

    /** Each engine's scrapes as this shell saw them: consecutive failures and the last one's reason. */
    record ScrapeState(int misses, String error) {
    }

    private final Duration scrapeTimeout;
    private final Duration scrapeInterval;
    private final Ticker ticker;
    private final ControlLoop loop;
    private final HttpClient client;
    private final Canaries canaries;
    private final Counter scrapeFailures;
    private final Map<String, ScrapeState> scrapes = new ConcurrentHashMap<>();

    // touched only on the policy thread
    private long lastScrapeNanos;
    private boolean scrapedOnce;
    private Map<String, String> endpoints = Map.of();
    private Topology endpointsOf;

    /**
     * @param config   the scrape timeout and interval, and the engines' TLS
     * @param ticker   the control plane's ticker
     * @param loop     where every scrape and canary result goes
     * @param registry where the scrape failures and the canaries are counted
     */
    EngineProbes(ControlPlaneConfig config, Ticker ticker, ControlLoop loop, MeterRegistry registry) {
        this.scrapeTimeout = config.scrapeTimeout();
        this.scrapeInterval = config.scrapeInterval();
        this.ticker = ticker;
        this.loop = loop;
        this.scrapeFailures = Counter.builder("sextant.control.scrape.failures")
                .description("engine /metrics scrapes that failed or timed out").register(registry);
        this.client = HttpClient.newBuilder().connectTimeout(config.scrapeTimeout())
                .sslContext(TlsContexts.jdkClient(config.engineTls())).build();
        this.canaries = new Canaries(client, ticker, CANARY_TIMEOUT, CANARIES_IN_FLIGHT, config.engineToken(),
                loop::observe, registry);
    }

    /** Each engine's scrapes as seen here, by engine id. */
    Map<String, ScrapeState> scrapes() {
        return scrapes;
    }

    /** Forgets the scrapes of the engines {@code t} no longer has. */
    void retain(Topology t) {
        scrapes.keySet().retainAll(t.engines().stream().map(Engine::id).collect(Collectors.toSet()));
    }

    /**
     * Scrapes every engine of {@code topology} when the first round or the scrape interval is due, and waits for
     * the round to end.
     *
     * @param registered the registered engines' metrics paths by id, null for one without metrics; an engine
     *                   not in it is scraped at {@code /metrics}
     */
    void scrapeIfDue(Topology topology, Map<String, String> registered) {
        long now = ticker.nanos();
        if (!scrapedOnce || now - lastScrapeNanos >= scrapeInterval.toNanos()) {
            scrapedOnce = true;
            lastScrapeNanos = now;
            scrapeAll(topology, registered);
        }
    }

    /** Scrapes every engine's {@code /metrics} and gives the loop what each said; waits for the round to end. */
    private void scrapeAll(Topology topology, Map<String, String> paths) {
        long timeoutMs = scrapeTimeout.toMillis();
        List<CompletableFuture<?>> all = new ArrayList<>();
        Map<String, CompletableFuture<HttpResponse<String>>> sent = new HashMap<>();
        for (Engine e : topology.engines()) {
            String path = paths.containsKey(e.id()) ? paths.get(e.id()) : "/metrics";
            if (path == null) { // registered without metrics: judged from gateway outcomes and canaries
                scrapes.merge(e.id(), new ScrapeState(1, NO_METRICS),
                        (a, b) -> new ScrapeState(a.misses() + 1, NO_METRICS));
                loop.observe(EngineScrape.failed(e.id(), ticker.nanos(), NO_METRICS));
                continue;
            }
            URI uri;
            try {
                uri = URI.create(e.endpoint().replaceAll("/+$", "") + path);
            } catch (IllegalArgumentException ex) {
                scrapeFailed(e.id(), "bad endpoint: " + ex.getMessage());
                continue;
            }
            HttpRequest req = HttpRequest.newBuilder(uri).timeout(scrapeTimeout).GET().build();
            // the request's timeout ends at the answer's head: a body that trickles is ended by the round's deadline
            // below, and a body beyond MAX_METRICS_BYTES is not read
            CompletableFuture<HttpResponse<String>> scrape = client.sendAsync(req, BoundedBody.ofString(MAX_METRICS_BYTES));
            sent.put(e.id(), scrape);
            all.add(scrape.handle((r, err) -> {
                if (err instanceof CancellationException) {
                    return null; // cancelled at the round's deadline, which says so
                }
                if (err != null) {
                    Throwable t = err instanceof java.util.concurrent.CompletionException && err.getCause() != null
                            ? err.getCause() : err;
                    scrapeFailed(e.id(), t.getMessage() == null ? t.toString() : t.getMessage());
                } else if (r.statusCode() != 200) {
                    scrapeFailed(e.id(), "HTTP " + r.statusCode());
                } else {
                    EngineMetrics m;
                    try {
                        m = EngineMetrics.from(PrometheusText.parse(r.body()));
                    } catch (RuntimeException ex) {
                        scrapeFailed(e.id(), "unparsable metrics: " + ex.getMessage());
                        return null;
                    }
                    scrapes.put(e.id(), new ScrapeState(0, null));
                    loop.observe(EngineScrape.of(e.id(), ticker.nanos(), m));
                }
                return null;
            }));
        }
        long deadlineMs = timeoutMs + 1000;
        try {
            CompletableFuture.allOf(all.toArray(new CompletableFuture[0])).get(deadlineMs, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            LOG.fine("scrape round incomplete: " + e);
        }
        // what has not ended is a failed scrape, and its connection is closed: left running, a scrape whose body
        // never ends would hold a connection for good, and one more each round
        sent.forEach((engine, scrape) -> {
            if (scrape.cancel(true)) { // false when it ended meanwhile, and said so itself
                scrapeFailed(engine, "no whole answer within " + deadlineMs + " ms");
            }
        });
    }

    private void scrapeFailed(String engine, String why) {
        scrapeFailures.increment();
        scrapes.merge(engine, new ScrapeState(1, why), (a, b) -> new ScrapeState(a.misses() + 1, why));
        loop.observe(EngineScrape.failed(engine, ticker.nanos(), why));
    }

    /** Sends the canaries the loop finds due to their engines in {@code topology}; never blocks. */
    void sendCanaries(Topology topology) {
        List<Canary> due = loop.canariesDue();
        if (due.isEmpty()) {
            return;
        }
        if (topology != endpointsOf) {
            Map<String, String> m = new HashMap<>();
            topology.engines().forEach(e -> m.put(e.id(), e.endpoint()));
            endpoints = m;
            endpointsOf = topology;
        }
        for (Canary c : due) {
            String endpoint = endpoints.get(c.engine());
            if (endpoint != null) {
                canaries.send(c, endpoint);
            }
        }
    }

    /** Stops sending canaries; those in flight end without reaching the loop. */
    @Override
    public void close() {
        canaries.close();
    }
}
