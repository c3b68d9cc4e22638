package dev.sextant.server.control;

import dev.sextant.config.ConfigProblem;
import dev.sextant.config.TopologyException;
import dev.sextant.config.TopologyLoader;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.server.internal.JvmMeters;
import dev.sextant.server.internal.Listen;
import dev.sextant.server.internal.ListenException;
import dev.sextant.server.internal.OversizedAwareAggregator;
import dev.sextant.server.tls.TlsContexts;
import dev.sextant.signal.EngineMetrics;
import dev.sextant.signal.PrometheusText;
import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Engine;
import dev.sextant.topology.Topology;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Collectors;

/**
 * The control plane: loads and watches the topology, scrapes engines and takes gateway reports (signal path),
 * solves with {@link Policies#optimal()} on a schedule and when its inputs change, and publishes a new snapshot
 * only when it differs materially (policy path). Serves {@code GET /v1/snapshot} (ETag, long-poll),
 * {@code GET /v1/explain}, {@code POST /v1/reports} (all three behind a bearer token), {@code /metrics} and
 * {@code /healthz}. See {@code docs/servers.md}.
 */
public final class ControlPlane implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(ControlPlane.class.getName());

    final ControlPlaneConfig config;
    final InMemoryPublisher publisher = SnapshotPublisher.inMemory();
    final Signals signals;
    final dev.sextant.server.auth.BearerToken token;
    final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final ScheduledExecutorService policy;
    private final HttpClient scraper;
    private final EventLoopGroup group;
    private final Channel serverChannel;
    private final JvmMeters jvm;
    private final ChannelGroup channels = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
    private final Counter solves;
    private final Counter publications;
    private final Counter scrapeFailures;
    private final Counter reloadFailures;
    private final Timer solveTime;
    final Counter unauthorized;
    final Counter reports;
    /** Largest request body: a report is a few KB even for a large fleet's gateway. */
    static final int MAX_BODY_BYTES = 1024 * 1024;
    private final java.util.concurrent.atomic.LongAdder oversizedBodies = new java.util.concurrent.atomic.LongAdder();
    private final SslContext serverTls;
    /** The state file, or null without one. */
    private final StateFile state;
    /** The snapshot the state file kept from a previous run, until the first solve takes it as its previous one. */
    private Snapshot restored;

    // policy-path state, touched only on the policy thread (and read through volatile fields)
    private volatile Topology topology;
    /** The last snapshot this control plane solved and published, with the topology it solved it from. */
    private volatile Solved solved;

    private record Solved(Topology topology, Snapshot snapshot) {
    }
    private volatile String topologyError;
    private String fingerprint;
    private Object lastInputs;
    private long lastSolveNanos;
    private long lastScrapeNanos = Long.MIN_VALUE / 2;
    private Map<String, Double> penalties = Map.of();

    private ControlPlane(ControlPlaneConfig config) throws TopologyException, InterruptedException {
        this.config = config;
        this.token = config.token();
        this.signals = new Signals(config.missedScrapes());
        this.topology = TopologyLoader.load(config.topologyFile());
        this.fingerprint = fingerprint();
        this.solves = Counter.builder("sextant.control.solves").description("optimizer runs").register(registry);
        this.publications = Counter.builder("sextant.control.publications")
                .description("snapshots published (a new version for the gateways)").register(registry);
        this.scrapeFailures = Counter.builder("sextant.control.scrape.failures")
                .description("engine /metrics scrapes that failed or timed out").register(registry);
        this.reloadFailures = Counter.builder("sextant.control.topology.reload.failures")
                .description("topology file changes refused as invalid (the previous one stays in force)").register(registry);
        this.unauthorized = Counter.builder("sextant.control.unauthorized.requests")
                .description("requests refused for a missing or wrong bearer token").register(registry);
        this.reports = Counter.builder("sextant.control.reports").description("gateway reports taken")
                .register(registry);
        io.micrometer.core.instrument.FunctionCounter.builder("sextant.control.oversized.bodies", oversizedBodies,
                        java.util.concurrent.atomic.LongAdder::sum)
                .description("request bodies over " + MAX_BODY_BYTES + " bytes, refused with 413").register(registry);
        this.solveTime = Timer.builder("sextant.control.solve.time").description("time of one optimizer run")
                .publishPercentileHistogram().register(registry);
        this.state = config.stateFile() == null ? null : new StateFile(config.stateFile(),
                Counter.builder("sextant.control.state.write.failures")
                        .description("published snapshots that could not be written to the state file")
                        .register(registry));
        this.restored = state == null ? null : state.restore();
        Gauge.builder("sextant.control.snapshot.version", () -> {
            Snapshot s = publisher.current();
            return s == null ? 0 : s.version();
        }).description("version of the snapshot published last").register(registry);
        Gauge.builder("sextant.control.topology.invalid", () -> topologyError == null ? 0 : 1)
                .description("1 while the topology file on disk is invalid and the last valid one is in force").register(registry);
        // TLS files are read before anything starts, so a bad file stops the start with its key and path
        this.serverTls = config.tls() == null ? null : TlsContexts.server(config.tls());
        this.scraper = HttpClient.newBuilder().connectTimeout(config.scrapeTimeout())
                .sslContext(TlsContexts.jdkClient(config.engineTls())).build();
        solveAndMaybePublish("start");
        this.policy = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "sextant-policy");
            t.setDaemon(true);
            return t;
        });
        policy.scheduleWithFixedDelay(this::tick, config.watchInterval().toMillis(), config.watchInterval().toMillis(),
                TimeUnit.MILLISECONDS);
        this.group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        ServerBootstrap b = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        channels.add(ch);
                        if (serverTls != null) {
                            ch.pipeline().addLast(serverTls.newHandler(ch.alloc()));
                        }
                        ch.pipeline().addLast(new HttpServerCodec(),
                                new OversizedAwareAggregator(MAX_BODY_BYTES, oversizedBodies),
                                new ControlHandler(ControlPlane.this));
                    }
                });
        try {
            serverChannel = Listen.on(b, config.host(), config.port());
        } catch (RuntimeException | InterruptedException e) {
            policy.shutdownNow();
            group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
            throw e;
        }
        jvm = JvmMeters.bindTo(registry);
        LOG.info("control plane listening on " + uri() + ", topology "
                + config.topologyFile() + ", snapshot " + publisher.current().version());
    }

    /**
     * Loads the topology, solves and publishes the first snapshot, then binds.
     *
     * @throws TopologyException when the topology file is invalid (file, line and field in the problems)
     * @throws IllegalStateException when the address cannot be bound
     */
    public static ControlPlane start(ControlPlaneConfig config) throws TopologyException {
        try {
            return new ControlPlane(config);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting", e);
        } catch (ListenException e) {
            throw e; // already names the address
        } catch (RuntimeException e) {
            throw new IllegalStateException("cannot start control plane on " + config.host() + ":" + config.port()
                    + ": " + e.getMessage(), e);
        }
    }

    /** The port it listens on. */
    public int port() {
        return ((InetSocketAddress) serverChannel.localAddress()).getPort();
    }

    /** Its base URL, {@code http://host:port}, or {@code https://host:port} with TLS. */
    public URI uri() {
        return URI.create((config.tls() == null ? "http://" : "https://") + config.host() + ":" + port());
    }

    /** The snapshot published now (never null once started). */
    public Snapshot current() {
        return publisher.current();
    }

    /**
     * What {@code GET /v1/snapshot?gateway=ID} sends: the current snapshot as that gateway cluster needs it
     * ({@link Snapshot#forGateway}), its ETag and its JSON, made once per publication and gateway cluster on
     * the view threads (never an event loop) and shared by every gateway of the cluster; null for a gateway
     * cluster the snapshot does not route. On the L fleet the whole snapshot is 32 MB of JSON and about
     * 0.45 s to write, which every poll used to pay on an event loop; a view is 2.4 MB and 20 ms.
     */
    java.util.concurrent.CompletableFuture<GatewayView> view(String gateway) {
        Snapshot s = publisher.current();
        if (s == null || !s.routes().containsKey(gateway)) {
            return java.util.concurrent.CompletableFuture.completedFuture(null);
        }
        return views.get(s, gateway, g -> java.util.concurrent.CompletableFuture.supplyAsync(
                () -> GatewayView.of(s.forGateway(g)), viewMaker));
    }

    /** The views of the current publication, by gateway cluster. */
    private final KeptFor<Snapshot, String, java.util.concurrent.CompletableFuture<GatewayView>> views =
            new KeptFor<>();
    private final java.util.concurrent.ExecutorService viewMaker = Executors.newFixedThreadPool(2, r -> {
        Thread t = new Thread(r, "sextant-views");
        t.setDaemon(true);
        return t;
    });

    /** One gateway cluster's view of a publication, as sent. */
    record GatewayView(Snapshot snapshot, String etag, byte[] json) {
        static GatewayView of(Snapshot view) {
            return new GatewayView(view, dev.sextant.server.internal.Http.etag(view),
                    dev.sextant.config.SnapshotJson.write(view).getBytes(StandardCharsets.UTF_8));
        }
    }

    /** The topology in force (the last valid version of the file). */
    public Topology topology() {
        return topology;
    }

    /** The topology the current snapshot was solved from (health and demand applied), for explanations. */
    Topology solvedTopology() {
        return solved.topology();
    }

    /**
     * The explanation of how the current snapshot routes {@code classId} at {@code gateway}, computed on the
     * explanation thread, never on an event loop: on a large fleet it compares with two baseline policies'
     * whole solves, which are kept for as long as the solved topology holds (one publication), so only the
     * first explanation after a publication pays for them.
     */
    java.util.concurrent.CompletableFuture<dev.sextant.policy.Explanation> explain(String gateway, String classId) {
        // the snapshot and the topology it was solved from, as one pair (the current snapshot may be that one
        // republished under a higher version, with the same content)
        Solved now = solved;
        Topology t = now.topology();
        Snapshot snapshot = now.snapshot();
        return java.util.concurrent.CompletableFuture.supplyAsync(
                () -> dev.sextant.policy.Explainer.explain(t, snapshot, gateway, classId, name -> baseline(t, name)),
                explainer);
    }

    private Snapshot baseline(Topology t, String name) {
        return baselines.get(t, name, n -> Policies.byName(n).solve(t, SolveOptions.defaults()));
    }

    /** The baseline policies' snapshots of the solved topology, by policy name. */
    private final KeptFor<Topology, String, Snapshot> baselines = new KeptFor<>();
    private final java.util.concurrent.ExecutorService explainer = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "sextant-explain");
        t.setDaemon(true);
        return t;
    });

    /** The last reload error, or null when the file in force is the file on disk. */
    String topologyError() {
        return topologyError;
    }

    /** Runs a policy-path step now and waits for it (tests; the schedule does the same every watch interval). */
    public void tickNow() {
        try {
            policy.submit(this::tick).get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("policy step failed: " + e, e);
        }
    }

    private void tick() {
        try {
            long now = System.nanoTime();
            reloadIfChanged();
            if (now - lastScrapeNanos >= config.scrapeInterval().toNanos()) {
                lastScrapeNanos = now;
                scrapeAll();
                penalties = signals.evaluatePenalties(topology, publisher.current(), config.ttftOutlierFactor(),
                        config.errorRateLimit());
            }
            if (now - lastSolveNanos >= config.solveInterval().toNanos()) {
                solveAndMaybePublish("schedule");
            } else if (!Objects.equals(inputs(), lastInputs)) {
                solveAndMaybePublish("inputs changed");
            }
        } catch (RuntimeException e) {
            LOG.log(Level.SEVERE, "policy step failed; keeping snapshot "
                    + (publisher.current() == null ? "none" : publisher.current().version()), e);
        }
    }

    private void reloadIfChanged() {
        String fp = fingerprint();
        if (fp == null || fp.equals(fingerprint)) {
            return;
        }
        fingerprint = fp;
        try {
            topology = TopologyLoader.load(config.topologyFile());
            if (topologyError != null) {
                LOG.warning("topology " + config.topologyFile() + " is valid again");
            }
            topologyError = null;
            LOG.info("topology " + config.topologyFile() + " reloaded");
        } catch (TopologyException e) {
            reloadFailures.increment();
            topologyError = e.problems().stream().map(ConfigProblem::toString).collect(Collectors.joining("; "));
            LOG.severe("TOPOLOGY RELOAD FAILED, keeping the previous version in force: " + topologyError);
        }
    }

    private String fingerprint() {
        try {
            byte[] bytes = Files.readAllBytes(config.topologyFile());
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (IOException e) {
            if (topologyError == null) {
                topologyError = ConfigProblem.cannotRead(e);
                LOG.severe("TOPOLOGY " + config.topologyFile() + ": " + topologyError + "; keeping the version in force");
            }
            return null;
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private void scrapeAll() {
        long timeoutMs = config.scrapeTimeout().toMillis();
        List<java.util.concurrent.CompletableFuture<?>> all = new ArrayList<>();
        for (Engine e : topology.engines()) {
            URI uri = URI.create(e.endpoint().replaceAll("/+$", "") + "/metrics");
            HttpRequest req = HttpRequest.newBuilder(uri).timeout(config.scrapeTimeout()).GET().build();
            all.add(scraper.sendAsync(req, HttpResponse.BodyHandlers.ofString()).handle((r, err) -> {
                if (err != null) {
                    scrapeFailures.increment();
                    signals.scrapeFailed(e.id(), String.valueOf(err.getMessage() == null ? err : err.getMessage()));
                } else if (r.statusCode() != 200) {
                    scrapeFailures.increment();
                    signals.scrapeFailed(e.id(), "HTTP " + r.statusCode());
                } else {
                    try {
                        signals.scraped(e.id(), EngineMetrics.from(PrometheusText.parse(r.body())), System.nanoTime());
                    } catch (RuntimeException ex) {
                        scrapeFailures.increment();
                        signals.scrapeFailed(e.id(), "unparsable metrics: " + ex.getMessage());
                    }
                }
                return null;
            }));
        }
        try {
            java.util.concurrent.CompletableFuture.allOf(all.toArray(new java.util.concurrent.CompletableFuture[0]))
                    .get(timeoutMs + 1000, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            LOG.fine("scrape round incomplete: " + e);
        }
    }

    private record Inputs(Topology topology, Map<String, Double> health, Map<String, Double> penalties,
                          Map<String, Map<String, Long>> demandBuckets) {
    }

    private Inputs inputs() {
        Topology t = topology;
        Map<String, Map<String, Double>> demand = demand(t);
        Map<String, Map<String, Long>> buckets = new java.util.TreeMap<>();
        // demand in 10% steps (log scale), so that noise in observed demand does not trigger solves
        demand.forEach((g, m) -> m.forEach((c, v) -> buckets.computeIfAbsent(g, k -> new java.util.TreeMap<>())
                .put(c, Math.round(Math.log1p(v) / Math.log(1.1)))));
        return new Inputs(t, signals.health(), penalties, buckets);
    }

    private Map<String, Map<String, Double>> demand(Topology t) {
        return signals.demand(t, config.demand(), System.nanoTime(), 3 * config.scrapeInterval().toNanos()
                + java.time.Duration.ofSeconds(15).toNanos());
    }

    private void solveAndMaybePublish(String why) {
        lastSolveNanos = System.nanoTime();
        Inputs in = inputs();
        lastInputs = in;
        Topology t = in.topology();
        Map<String, Double> health = in.health();
        List<Engine> engines = new ArrayList<>();
        for (Engine e : t.engines()) {
            double h = health.getOrDefault(e.id(), 1.0);
            engines.add(h < e.health() ? e.withHealth(h) : e);
        }
        Topology solveFor = t.withEngines(engines).withDemand(demand(t));
        Snapshot prev = publisher.current();
        // the first solve after a restart goes on from the snapshot the state file kept: the next version, and
        // slot tables rebalanced from the ones the gateways hold
        Snapshot base = prev != null ? prev : restored;
        SolveOptions options = new SolveOptions(base == null ? 1 : base.version() + 1, base, in.penalties(),
                SolveOptions.DEFAULT_GAP_TOLERANCE);
        long start = System.nanoTime();
        Snapshot next;
        try {
            next = Policies.optimal().solve(solveFor, options);
        } catch (RuntimeException e) {
            LOG.log(Level.SEVERE, "solve failed (" + why + "); keeping snapshot "
                    + (prev == null ? "none" : prev.version()), e);
            if (prev == null) {
                throw e;
            }
            return;
        }
        solveTime.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
        solves.increment();
        String change = prev == null ? (base == null ? "first snapshot"
                : "first snapshot, going on from snapshot " + base.version() + " of the state file")
                : materialChange(prev, next, config.weightHysteresis());
        if (change != null) {
            solved = new Solved(solveFor, next);
            publisher.publish(next);
            restored = null;
            keep(next);
            publications.increment();
            LOG.info("published snapshot " + next.version() + " (" + why + "; " + change + ")");
        }
    }

    /**
     * Why {@code next} differs materially from {@code prev}, or null when it does not: a weight or shed fraction
     * moved by more than {@code hysteresis}, or the engines, their endpoints, models, regions or effective
     * capacities (more than 5%), the gateway clusters or the classes changed.
     */
    static String materialChange(Snapshot prev, Snapshot next, double hysteresis) {
        if (!prev.engines().keySet().equals(next.engines().keySet())) {
            return "engines changed";
        }
        for (Map.Entry<String, EngineState> e : next.engines().entrySet()) {
            EngineState a = prev.engines().get(e.getKey());
            EngineState b = e.getValue();
            if (!a.endpoint().equals(b.endpoint()) || !a.models().equals(b.models()) || !a.region().equals(b.region())) {
                return "engine " + e.getKey() + " changed";
            }
            double ca = a.effectiveCapacityRps();
            double cb = b.effectiveCapacityRps();
            if (Math.abs(ca - cb) > 0.05 * Math.max(ca, cb)) {
                return String.format("engine %s effective capacity %.1f → %.1f req/s", e.getKey(), ca, cb);
            }
        }
        if (!prev.routes().keySet().equals(next.routes().keySet())) {
            return "gateway clusters changed";
        }
        for (Map.Entry<String, Map<String, Route>> g : next.routes().entrySet()) {
            Map<String, Route> before = prev.routes().get(g.getKey());
            if (!before.keySet().equals(g.getValue().keySet())) {
                return "classes of " + g.getKey() + " changed";
            }
            for (Map.Entry<String, Route> c : g.getValue().entrySet()) {
                Route a = before.get(c.getKey());
                Route b = c.getValue();
                if (Math.abs(a.shedFraction() - b.shedFraction()) > hysteresis) {
                    return String.format("%s/%s shed %.3f → %.3f", g.getKey(), c.getKey(), a.shedFraction(),
                            b.shedFraction());
                }
                String id = a.firstWeightMoved(b, hysteresis);
                if (id != null) {
                    return String.format("%s/%s weight of %s %.3f → %.3f", g.getKey(), c.getKey(), id,
                            a.weights().getOrDefault(id, 0.0), b.weights().getOrDefault(id, 0.0));
                }
            }
        }
        return null;
    }

    /**
     * A gateway holds snapshot version {@code held}, at or above this control plane's current one with other
     * content: this control plane restarted and its versions started again from 1. Republishes the current
     * snapshot as {@code held + 1} (on the policy thread, ordered with solves), so that versions stay monotone for
     * every gateway and the fleet takes this control plane's snapshots again.
     */
    void catchUp(long held) {
        policy.execute(() -> {
            Snapshot current = publisher.current();
            if (current == null || held < current.version() || held == Long.MAX_VALUE) {
                return;
            }
            Snapshot next = current.sealed(held + 1);
            publisher.publish(next);
            keep(next);
            publications.increment();
            LOG.warning("a gateway holds snapshot version " + held + ", at or above this control plane's "
                    + current.version() + " (restarted?): republished snapshot " + current.version() + " as version "
                    + next.version());
        });
    }

    /** Writes {@code s} to the state file, if there is one (on its own thread). */
    private void keep(Snapshot s) {
        if (state != null) {
            state.save(s);
        }
    }

    /** Stops the server and the policy loop; finishes writing the state file. */
    @Override
    public void close() {
        policy.shutdownNow();
        if (state != null) {
            state.close();
        }
        explainer.shutdownNow();
        viewMaker.shutdownNow();
        serverChannel.close().awaitUninterruptibly();
        channels.close().awaitUninterruptibly();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly();
        jvm.close();
    }
}
