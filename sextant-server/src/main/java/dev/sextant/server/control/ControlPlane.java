package dev.sextant.server.control;

import dev.sextant.config.TopologyException;
import dev.sextant.control.Condition;
import dev.sextant.control.ControlLoop;
import dev.sextant.control.EngineScrape;
import dev.sextant.control.Estimates;
import dev.sextant.control.GatewayReport;
import dev.sextant.control.Step;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.request.Ticker;
import dev.sextant.server.internal.AcceptedConnections;
import dev.sextant.server.internal.ConnectionCap;
import dev.sextant.server.internal.HeadCheck;
import dev.sextant.server.internal.JvmMeters;
import dev.sextant.server.internal.ListenerLimits;
import dev.sextant.server.internal.ReadAfterAnswer;
import dev.sextant.server.internal.RequestGuard;
import dev.sextant.server.internal.Listen;
import dev.sextant.server.internal.ListenException;
import dev.sextant.server.internal.OversizedAwareAggregator;
import dev.sextant.server.internal.Versions;
import dev.sextant.server.tls.TlsContexts;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.ssl.SslContext;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * The control plane: the shell around the {@link ControlLoop}, which does all the estimating and deciding. It loads
 * and watches the topology, scrapes engines ({@link EngineScrape}), takes gateway reports ({@link GatewayReport}) and
 * sends the loop's canaries (signal path); it steps the loop on a schedule and when the loop says something urgent
 * changed, and publishes the snapshots the loop decides to publish (policy path). The simulator runs the same loop on
 * the same records. Serves {@code GET /v1/snapshot} (ETag, long-poll), {@code GET /v1/explain},
 * {@code POST /v1/reports} (all three behind a bearer token), {@code /metrics} and {@code /healthz}. See
 * {@code docs/servers.md}; the loop's rules are in {@code docs/control-loop.md}.
 *
 * <p>Threads: the loop is stepped only on the policy thread; reports reach it through a signal thread of their
 * own, so that an event loop never waits for the loop's lock while a step solves; scrapes and canaries end on the
 * HTTP client's threads. {@code /healthz} and the gauges read the estimates the policy thread took last.
 *
 * <p>The shell owns the threads and the lifecycle (start, ticks, close) that every path above shares, and wires the
 * parts that do each path's work: requests in {@link ControlHandler} and who may make them in {@link Access};
 * reports in {@link ReportParser}; the topology file and registered engines in {@link TopologySource}; scrapes and
 * canaries in {@link EngineProbes}; publication, its fencing by {@link Leadership} and the state file in
 * {@link Publication}; the policy path's alarm in {@link PolicyAlarm}; the estimates' gauges in
 * {@link EstimateGauges}.
 */
public final class ControlPlane implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(ControlPlane.class.getName());
    /** Reports taken but not yet given to the loop, at most; beyond, a report is refused with 503. */
    static final int REPORT_QUEUE = 4096;

    final ControlPlaneConfig config;
    final InMemoryPublisher publisher = SnapshotPublisher.inMemory();
    final Ticker ticker = Ticker.system();
    final ControlLoop loop;
    /** Who a request's token speaks for, and the refusals of those it does not let in. */
    final Access access;
    final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final ScheduledExecutorService policy;
    /** Gives reports to the loop, in arrival order. */
    private final ThreadPoolExecutor signals;
    private final EngineProbes probes;
    private final EventLoopGroup group;
    private final Channel serverChannel;
    private final JvmMeters jvm;
    private final AcceptedConnections channels = new AcceptedConnections();
    /** Hashes the gateway clusters' views of each publication, remembering the engines' texts between them. */
    private final Snapshot.Hasher viewHasher = new Snapshot.Hasher();
    private final Counter solves;
    private final Timer solveTime;
    private final Map<String, Counter> steps = new HashMap<>();
    private final EstimateGauges estimates;
    final Counter reports;
    /** Largest request body: a report is a few KB even for a large fleet's gateway. */
    public static final int MAX_BODY_BYTES = 1024 * 1024;
    private final java.util.concurrent.atomic.LongAdder oversizedBodies = new java.util.concurrent.atomic.LongAdder();
    private final SslContext serverTls;
    /** How long an answer may wait for a client that does not read it before its connection is closed. */
    static final Duration UNREAD_ANSWER = Duration.ofSeconds(60);
    private final ConnectionCap connectionCap;
    private final HeadCheck.Budget bodyBudget;
    /** The state file, or null without one. */
    private final StateFile state;
    /** Whether this replica may publish; {@link Leadership#alone()} for a control plane that is the only one. */
    private final Leadership leadership;
    /** Publishes what the loop decides to, fenced by {@link #leadership}; keeps versions monotone. */
    final Publication publication;
    private final PolicyAlarm alarm;
    /** The topology file and the engines registered beside it ({@link EngineRegistry#none()}: the file's only). */
    private final TopologySource topologies;

    /**
     * The topology in force and the loop's last step, as the policy thread left them: what an event loop reads
     * (the loop's own accessors take its lock, which a step holds while it solves).
     */
    private volatile Topology topology;
    private volatile Step lastStep;

    // touched only on the policy thread
    private long lastSolveNanos;

    private ControlPlane(ControlPlaneConfig config, Leadership leadership, EngineRegistry engineRegistry)
            throws TopologyException, InterruptedException {
        this.config = config;
        this.leadership = leadership;
        this.access = new Access(config, registry);
        this.topologies = new TopologySource(config.topologyFile(), engineRegistry, registry);
        this.solves = Counter.builder("sextant.control.solves")
                .description("control loop steps run (each solves the optimizer on the estimates)").register(registry);
        this.reports = Counter.builder("sextant.control.reports").description("gateway reports taken")
                .register(registry);
        for (String outcome : List.of("published", "kept", "failed")) {
            steps.put(outcome, Counter.builder("sextant.control.steps").tag("outcome", outcome)
                    .description("control loop steps by outcome: published (a new snapshot), kept (the gain was below "
                            + "the threshold), failed (the solve failed)").register(registry));
        }
        Topology topology = topologies.current();
        this.connectionCap = new ConnectionCap("control plane", config.limits().maxConnections());
        this.bodyBudget = new HeadCheck.Budget(config.limits().maxBufferedBodyBytes());
        dev.sextant.server.internal.ListenerMeters.bind(registry, "sextant.control", connectionCap, bodyBudget);
        io.micrometer.core.instrument.FunctionCounter.builder("sextant.control.oversized.bodies", oversizedBodies,
                        java.util.concurrent.atomic.LongAdder::sum)
                .description("request bodies over " + MAX_BODY_BYTES + " bytes, refused with 413").register(registry);
        this.estimates = new EstimateGauges(registry);
        this.solveTime = Timer.builder("sextant.control.solve.time")
                .description("time of one control loop step: estimates, optimizer run and publication decision")
                .publishPercentileHistogram().register(registry);
        this.state = config.stateFile() == null ? null : new StateFile(config.stateFile(),
                Counter.builder("sextant.control.state.write.failures")
                        .description("published snapshots that could not be written to the state file")
                        .register(registry));
        Snapshot restored = state == null ? null : state.restore();
        Gauge.builder("sextant.control.snapshot.version", () -> {
            Snapshot s = publisher.current();
            return s == null ? 0 : s.version();
        }).description("version of the snapshot published last").register(registry);
        // TLS files are read before anything starts, so a bad file stops the start with its key and path
        this.serverTls = config.tls() == null ? null : TlsContexts.server(config.tls());
        this.loop = ControlLoop.create(topology, config.controlOptions(), ticker, restored);
        this.topology = topology;
        this.alarm = new PolicyAlarm(ticker, publisher::current, registry);
        this.publication = new Publication(loop, publisher, leadership, state, viewHasher, alarm, ticker, registry);
        this.probes = new EngineProbes(config, ticker, loop, registry);
        // the first snapshot is solved before any signal: the topology as configured
        step("start");
        if (publisher.current() == null) {
            probes.close();
            throw new IllegalStateException("the first solve failed: " + alarm.error());
        }
        this.signals = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(REPORT_QUEUE),
                r -> {
                    Thread t = new Thread(r, "sextant-signals");
                    t.setDaemon(true);
                    return t;
                });
        this.policy = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "sextant-policy");
            t.setDaemon(true);
            return t;
        });
        policy.scheduleWithFixedDelay(this::tick, config.watchInterval().toMillis(), config.watchInterval().toMillis(),
                TimeUnit.MILLISECONDS);
        this.group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        ListenerLimits limits = config.limits();
        ServerBootstrap b = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                .childOption(ChannelOption.AUTO_READ, false) // one request at a time, read when ready for it
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(connectionCap.handler());
                        channels.add(ch);
                        if (serverTls != null) {
                            ch.pipeline().addLast(serverTls.newHandler(ch.alloc()));
                        }
                        // a gateway's long-poll answer waits for it to read up to a minute before it is closed
                        RequestGuard guard = new RequestGuard(limits.client(), UNREAD_ANSWER);
                        // one handler per connection: it decides on each head who sent it (HeadCheck), before its body
                        ControlHandler handler = new ControlHandler(ControlPlane.this);
                        ch.pipeline().addLast(guard.bytesIn(), limits.client().codec(), guard, new ReadAfterAnswer(),
                                new HeadCheck(handler::admit, bodyBudget, MAX_BODY_BYTES),
                                new OversizedAwareAggregator(MAX_BODY_BYTES, oversizedBodies), handler);
                    }
                });
        try {
            serverChannel = Listen.on(b, config.host(), config.port());
        } catch (RuntimeException | InterruptedException e) {
            policy.shutdownNow();
            signals.shutdownNow();
            probes.close();
            group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
            throw e;
        }
        jvm = JvmMeters.bindTo(registry);
        leadership.bindTo(registry);
        leadership.join(uri());
        LOG.info("control plane listening on " + uri() + ", topology "
                + config.topologyFile() + ", snapshot " + publisher.current().version() + ", "
                + (config.credentials() == null ? "one shared token" : config.credentials() + " ("
                        + config.credentials().current().summary() + ")"));
    }

    /**
     * Loads the topology, solves and publishes the first snapshot, then binds.
     *
     * @throws TopologyException when the topology file is invalid (file, line and field in the problems)
     * @throws IllegalStateException when the address cannot be bound
     */
    public static ControlPlane start(ControlPlaneConfig config) throws TopologyException {
        return start(config, Leadership.alone());
    }

    /**
     * As {@link #start(ControlPlaneConfig)}, as one of several replicas: it takes every signal, but steps the loop
     * and publishes only while {@code leadership} says it leads. The control plane closes {@code leadership}.
     */
    public static ControlPlane start(ControlPlaneConfig config, Leadership leadership) throws TopologyException {
        return start(config, leadership, EngineRegistry.none());
    }

    /**
     * As {@link #start(ControlPlaneConfig, Leadership)}, with the engines registered in {@code engines} merged into
     * the topology file's (docs/etcd.md, "Engine registration"). The control plane closes both.
     */
    public static ControlPlane start(ControlPlaneConfig config, Leadership leadership, EngineRegistry engines)
            throws TopologyException {
        try {
            return new ControlPlane(config, leadership, engines);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting", e);
        } catch (ListenException e) {
            throw e; // already names the address
        } catch (RuntimeException e) {
            leadership.close();
            engines.close();
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
    CompletableFuture<GatewayView> view(String gateway) {
        Snapshot s = publisher.current();
        if (s == null || !s.routes().containsKey(gateway)) {
            return CompletableFuture.completedFuture(null);
        }
        return views.get(s, gateway, g -> CompletableFuture.supplyAsync(
                () -> GatewayView.of(s.forGateway(g, viewHasher)), viewMaker));
    }

    /** The views of the current publication, by gateway cluster. */
    private final KeptFor<Snapshot, String, CompletableFuture<GatewayView>> views = new KeptFor<>();
    private final ExecutorService viewMaker = Executors.newFixedThreadPool(2, r -> {
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

    /** The control loop's last step (null before the first). */
    Step lastStep() {
        return lastStep;
    }

    /** The topology the current snapshot was solved for (the loop's estimates applied), for explanations. */
    Topology solvedTopology() {
        return publication.solved().topology();
    }

    /**
     * The explanation of how the current snapshot routes {@code classId} at {@code gateway}, with the estimates
     * behind it, as text or JSON: made on the explanation thread, never on an event loop. On a large fleet it
     * compares with two baseline policies' whole solves, which are kept for as long as the solved topology holds
     * (one publication), so only the first explanation after a publication pays for them.
     */
    CompletableFuture<String> explain(String gateway, String classId, boolean text) {
        // the snapshot and the topology it was solved for, as one pair (the current snapshot may be that one
        // republished under a higher version, with the same content)
        Publication.Solved now = publication.solved();
        Topology t = now.topology();
        Snapshot snapshot = now.snapshot();
        return CompletableFuture.supplyAsync(() -> {
            dev.sextant.policy.Explanation x = dev.sextant.policy.Explainer.explain(t, snapshot, gateway, classId,
                    name -> baseline(t, name));
            Estimates e;
            try {
                e = loop.estimates();
            } catch (RuntimeException failed) { // the loop's failure, not the request's: a 500, never a 400
                throw new IllegalStateException("the control loop's estimates failed: " + failed.getMessage(), failed);
            }
            Step last = loop.lastStep();
            return text ? dev.sextant.policy.Explainer.toText(x) + ExplainEstimates.text(x, e, last)
                    : ExplainEstimates.json(x, e, last);
        }, explainer);
    }

    private Snapshot baseline(Topology t, String name) {
        return baselines.get(t, name, n -> Policies.byName(n).solve(t, SolveOptions.defaults()));
    }

    /** The baseline policies' snapshots of the solved topology, by policy name. */
    private final KeptFor<Topology, String, Snapshot> baselines = new KeptFor<>();
    private final ExecutorService explainer = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "sextant-explain");
        t.setDaemon(true);
        return t;
    });

    /** The registrations refused now (the registry's entries that do not fit the topology file). */
    List<RegisteredEngines.Refusal> refusedRegistrations() {
        return topologies.refusals();
    }

    /** The ids of the registered engines in the topology in force. */
    Set<String> registeredEngines() {
        return topologies.registered().keySet();
    }

    /**
     * This replica's part in its fleet, for {@code /healthz}: {@code alone} (no other control plane), {@code leader}
     * (it steps the loop and publishes) or {@code standby} (it takes signals and waits; its snapshot is its own start
     * snapshot, not the fleet's).
     */
    String role() {
        return leadership == Leadership.alone() ? "alone" : leadership.leading() ? "leader" : "standby";
    }

    /** The last reload error, or null when the file in force is the file on disk. */
    String topologyError() {
        return topologies.error();
    }

    /** The estimates taken at the end of the last policy step. */
    Estimates estimates() {
        return estimates.last();
    }

    /** Each engine's scrapes as seen here, by engine id. */
    Map<String, EngineProbes.ScrapeState> scrapes() {
        return probes.scrapes();
    }

    /**
     * Takes a gateway's report: it reaches the loop on the signal thread, in arrival order.
     *
     * @return false when too many reports wait already (the caller answers 503)
     */
    boolean report(GatewayReport r) {
        try {
            signals.execute(() -> loop.observe(r));
        } catch (RejectedExecutionException e) {
            return false;
        }
        reports.increment();
        return true;
    }

    /**
     * Runs a policy-path step now and waits for it (tests; the schedule does the same every watch interval). The
     * reports taken before it was called reach the loop first.
     */
    public void tickNow() {
        try {
            signals.submit(() -> { }).get(30, TimeUnit.SECONDS);
            policy.submit(this::tick).get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("policy step failed: " + e, e);
        }
    }

    private void tick() {
        access.reloadCredentials();
        try {
            Topology t = topologies.reloadIfChanged(topology);
            if (t != null) {
                loop.topology(t);
                topology = t;
                probes.retain(t);
            }
            publication.followLeadership(() -> step("takeover"));
            probes.scrapeIfDue(topology, topologies.registered());
            if (!publication.led()) {
                // a standby keeps its estimates warm from the signals; only the leader solves
            } else if (ticker.nanos() - lastSolveNanos >= config.solveInterval().toNanos()) {
                step("schedule");
            } else if (loop.urgent()) {
                step("urgent");
            }
            probes.sendCanaries(topology);
            estimates.take(loop.estimates());
        } catch (RuntimeException e) {
            alarm.failed("policy step threw: " + e, e);
        }
    }

    /** Steps the loop and publishes what it decides to (on the policy thread, or at start). */
    private void step(String trigger) {
        lastSolveNanos = ticker.nanos();
        long start = ticker.nanos();
        Step s;
        try {
            s = loop.step();
        } catch (RuntimeException e) {
            steps.get("failed").increment();
            alarm.failed("control loop step threw (" + trigger + "): " + e, e);
            return;
        }
        lastStep = s;
        solveTime.record(ticker.nanos() - start, TimeUnit.NANOSECONDS);
        solves.increment();
        estimates.take(s.estimates());
        Snapshot held = publisher.current();
        if (s.snapshot() == null) {
            steps.get("failed").increment();
            alarm.failed("control loop step failed (" + trigger + "): " + s.reason(), null);
            return;
        }
        alarm.recovered();
        if (!s.published()) {
            steps.get("kept").increment();
            LOG.fine(() -> "snapshot " + held.version() + " kept (" + trigger + "): " + s.reason());
            return;
        }
        if (!publication.publish(s)) {
            return;
        }
        Snapshot next = s.snapshot();
        steps.get("published").increment();
        boolean fleets = publication.led();
        LOG.info((fleets ? "published snapshot " : "made snapshot ") + next.version() + " (" + trigger + "; "
                + s.reason() + ")" + (fleets ? "" : ": this replica's own, not the fleet's, until it leads"));
        if (next.objective().shedRps() > 0) {
            LOG.warning(shedWhy(next, s.estimates()));
        }
    }

    /** Why a snapshot sheds: the demand it plans for against the capacity of each engine in service. */
    private static String shedWhy(Snapshot next, Estimates e) {
        double demand = 0;
        for (var row : e.demand().values()) {
            for (var d : row.values()) {
                demand += d.rps();
            }
        }
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT,
                "snapshot %d sheds %.1f of %.1f req/s of estimated demand; engines in service:", next.version(),
                next.objective().shedRps(), demand));
        e.engines().values().stream().filter(x -> !x.condition().outOfService())
                .forEach(x -> sb.append("\n  ").append(x.engine()).append(' ').append(x.condition()).append(": ")
                        .append(x.capacityWhy()));
        return sb.toString();
    }

    /** A condition as metrics and JSON name it: {@code healthy}, {@code slow}, … */
    static String label(Condition c) {
        return c.name().toLowerCase(Locale.ROOT);
    }

    /**
     * A gateway holds snapshot version {@code held}, at or above this control plane's current one with other
     * content: this control plane restarted and its versions started again from 1. Republishes the current
     * snapshot as {@code held + 1} (on the policy thread, ordered with steps), so that versions stay monotone for
     * every gateway and the fleet takes this control plane's snapshots again; the loop adopts it as the held one.
     * A claim above {@link Versions#MAX_ADOPTED} is never adopted (the caller refuses it first; here too, so that no
     * caller can make the next version overflow).
     *
     * @return completes once the catch-up was published, or found unneeded or refused
     */
    CompletableFuture<Void> catchUp(long held) {
        try {
            return CompletableFuture.runAsync(() -> publication.catchUp(held), policy);
        } catch (RejectedExecutionException e) { // closing
            return CompletableFuture.completedFuture(null);
        }
    }

    /** Why the policy path is failing now (the last step, or the catch-up, threw or found no snapshot), or null. */
    String policyError() {
        return alarm.error();
    }

    /** Stops the server and the policy loop; finishes writing the state file. */
    @Override
    public void close() {
        policy.shutdownNow();
        leadership.close();
        topologies.close();
        signals.shutdownNow();
        probes.close();
        if (state != null) {
            state.close();
        }
        explainer.shutdownNow();
        viewMaker.shutdownNow();
        serverChannel.close().awaitUninterruptibly();
        channels.close();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly();
        jvm.close();
    }
}
