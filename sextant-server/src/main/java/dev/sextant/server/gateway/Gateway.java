package dev.sextant.server.gateway;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sextant.request.DataPlane;
import dev.sextant.request.DataPlaneListener;
import dev.sextant.request.DataPlaneOptions;
import dev.sextant.request.DataPlaneStatus;
import dev.sextant.request.Ejection;
import dev.sextant.request.Ticker;
import dev.sextant.server.internal.AcceptedConnections;
import dev.sextant.server.internal.Http;
import dev.sextant.server.internal.JvmMeters;
import dev.sextant.server.internal.Listen;
import dev.sextant.server.internal.ListenException;
import dev.sextant.server.internal.LogText;
import dev.sextant.server.internal.StartException;
import dev.sextant.server.internal.Transport;
import dev.sextant.server.tenants.Tenant;
import dev.sextant.server.tls.TlsContexts;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http2.DefaultHttp2GoAwayFrame;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.ssl.SslContext;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The gateway: Sextant's data plane as an OpenAI-compatible HTTP proxy. {@code POST /v1/chat/completions},
 * {@code /v1/completions}, {@code /v1/embeddings} are classified by the data plane core ({@link DataPlane}) and
 * proxied to the chosen engine over pooled keep-alive connections, server-sent events chunk by chunk;
 * {@code GET /v1/models} lists the models its snapshot routes; {@code /metrics} and {@code /healthz} report on it, and
 * {@code /livez} and {@code /readyz} answer Kubernetes' probes ({@link Probes}). It binds its port before it has a
 * snapshot, and stops by a drain ({@link Drain}). See {@code docs/servers.md}.
 *
 * <p>Why one class of about 600 lines: it is the gateway as a process, whose lifecycle (bind, the first snapshot from
 * the source or the snapshot cache, swaps and refusals, drain, stop) reads and sets one data plane reference and one
 * set of counters at every stage. The serving parts are apart: connections in {@link ClientPipeline} and
 * {@link FrontHandler}, requests in {@link Exchange}, engines in {@link UpstreamPool}, Kubernetes' probes in {@link Probes},
 * signal reports in {@link Reporter}, round-trip probes in {@link Prober}, tenants in {@link Tenancy}.
 *
 * <pre>{@code
 * try (Gateway gw = Gateway.start(GatewayConfig.defaults("east"), SnapshotSource.fixed(snapshot))) {
 *     URI base = URI.create("http://127.0.0.1:" + gw.port());
 * }
 * }</pre>
 */
public final class Gateway implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(Gateway.class.getName());
    private static final Logger ACCESS = Logger.getLogger("dev.sextant.gateway.access");

    final GatewayConfig config;
    final UpstreamPool pool;
    final GatewayMetrics metrics;
    final Reporter reporter;
    /** The round-trip probes, or null: no control plane to report them to, or {@code probe_interval} 0. */
    final Prober prober;
    /** Tenants and API keys, or an open gateway; the gateway cluster's residency. */
    final Tenancy tenancy;
    private final AtomicReference<DataPlane> plane = new AtomicReference<>();
    private final SnapshotSource source;
    private final EventLoopGroup group;
    private final Channel serverChannel;
    private final JvmMeters jvm;
    private final AcceptedConnections channels = new AcceptedConnections();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicInteger http2Connections = new AtomicInteger();
    private final java.util.concurrent.atomic.LongAdder refusedSnapshots = new java.util.concurrent.atomic.LongAdder();
    /** Whether the last snapshot taken had no routes for this gateway's cluster (said once per change). */
    private volatile boolean withoutRoutes;
    private final AtomicLong ids = new AtomicLong();
    private final String idPrefix = Long.toHexString(System.nanoTime() ^ System.identityHashCode(this));
    private volatile boolean draining;
    private final AtomicBoolean closed = new AtomicBoolean();
    final Probes probes = new Probes();
    private final DataPlaneOptions opts;
    private final SnapshotCache cache;
    /** What the snapshot cache held at start, or null. */
    private final SnapshotCache.Entry cached;
    private final CompletableFuture<Snapshot> first = new CompletableFuture<>();
    /** The snapshot cache file the data plane started from, or null: its first snapshot came from the source. */
    private volatile java.nio.file.Path startedFromCache;

    /** Binds the listener, then starts the snapshot source; serves 503 {@code no_snapshot} until its first snapshot. */
    private Gateway(GatewayConfig config, SnapshotSource source, int threads) throws InterruptedException {
        this.config = config;
        this.source = source;
        warnIfTokenInClear(config);
        // TLS files are read before anything starts, so a bad file stops the start with its key and path
        SslContext serverTls = config.tls() == null ? null : TlsContexts.server(config.tls(), config.http2());
        this.tenancy = Tenancy.of(config); // likewise a bad tenants file, with its file, line and field
        this.pool = new UpstreamPool(config.connectTimeout(), TlsContexts.client(config.clientTls()));
        // reports go to the configured control plane, or to those the source finds (every replica, through etcd)
        this.reporter = Reporter.toEach(config.gatewayCluster(), config.controlPlane() != null
                        ? () -> java.util.List.of(config.controlPlane()) : source.findsControlPlanes()
                        ? source::controlPlanes : null, config.token(), config.reportInterval(), config.clientTls());
        reporter.inFlightFrom(this::inFlightByEngine);
        this.metrics = new GatewayMetrics(plane::get, inFlight::get, http2Connections::get,
                () -> refusedSnapshots.sum() + source.refusals(), this::ownClasses);
        metrics.tenants(tenancy.watch());
        DataPlaneListener listener = new DataPlaneListener() {
            @Override
            public void onFallback(boolean fallback, String reason) {
                observeMode(); // logged once per change, whoever sees it first
            }

            @Override
            public void onEjection(Ejection e) {
                metrics.ejection();
                LOG.warning("engine " + e.engineId() + " ejected: " + e.reason());
            }

            @Override
            public void onEjectionEnded(Ejection e, String why) {
                LOG.info("engine " + e.engineId() + " back early (was ejected: " + e.reason() + "): " + why);
            }
        };
        DataPlaneOptions.Builder options = config.options().toBuilder().listener(listener);
        if (config.options().controlPlaneCadence() == null) {
            options.controlPlaneCadence(source.cadence()); // when the source knows how often a present one speaks
        }
        this.opts = options.build();
        this.cache = config.snapshotCache() == null ? null
                : new SnapshotCache(config.snapshotCache(), config.gatewayCluster());
        ClientPipeline clients = new ClientPipeline(this, serverTls);
        this.group = Transport.current().group(threads, config.busyPoll());
        ServerBootstrap b = new ServerBootstrap()
                .group(group)
                .channel(Transport.current().serverChannel())
                .option(ChannelOption.SO_BACKLOG, 4096)
                .childOption(ChannelOption.AUTO_READ, false)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        channels.add(ch);
                        clients.init(ch);
                    }
                });
        // the port first: one that cannot be bound is said at once, whatever the control plane's state
        try {
            serverChannel = Listen.on(b, config.host(), config.port());
        } catch (RuntimeException | InterruptedException e) {
            group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
            reporter.close();
            tenancy.close();
            throw e;
        }
        try {
            metrics.eventLoops(group);
            probes.watch(group);
            group.next().scheduleAtFixedRate(this::observeMode, 1, 1, TimeUnit.SECONDS);
            jvm = JvmMeters.bindTo(metrics.registry);
            source.bindTo(metrics.registry);
            prober = (config.controlPlane() == null && !source.findsControlPlanes()) || config.probeInterval().isZero()
                    ? null
                    : new Prober(config.gatewayCluster(), this::heldSnapshot, pool, reporter, metrics,
                            config.engineToken(), config.probeInterval());
            LOG.info("gateway " + config.gatewayCluster() + " listening on " + (serverTls == null ? "http" : "https")
                    + "://" + config.host() + ":" + port() + (config.http2() ? " (HTTP/1.1 and HTTP/2)" : " (HTTP/1.1)")
                    + " (" + Transport.current().name().toLowerCase() + " transport"
                    + (config.busyPoll() ? ", busy-polling event loops" : "") + "); waiting for its first snapshot");
            this.cached = cache == null ? null : cache.read();
            if (cached != null) {
                source.hold(cached.snapshot());
            }
            source.start(this::take);
        } catch (RuntimeException e) {
            serverChannel.close().awaitUninterruptibly();
            group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
            reporter.close();
            tenancy.close();
            throw e;
        }
    }

    /** A snapshot from the source: the first starts the data plane, later ones are swapped in or refused. */
    private void take(Snapshot s) {
        DataPlane p = plane.get();
        if (p == null) {
            if (startPlane(s, Duration.ZERO)) {
                keep(cache, s);
                first.complete(s);
                return;
            }
            p = plane.get(); // started from the cache a moment ago
        }
        if (p.swap(s)) {
            checkOwnRoutes(s);
            keep(cache, s);
        } else {
            refusedSnapshots.increment();
            Snapshot held = p.snapshot();
            LOG.severe("SNAPSHOT REFUSED: version " + s.version() + " (hash " + abbreviate(s.hash())
                    + ") does not succeed the held version " + held.version() + " (hash "
                    + abbreviate(held.hash()) + "); keeping " + held.version());
        }
    }

    /**
     * Waits up to {@code wait} for the source's first snapshot; with a snapshot cache that holds one, up to
     * {@link #CACHE_GRACE} (or {@code wait} if shorter), then starts from the cached one.
     */
    private void awaitFirstSnapshot(Duration wait) throws InterruptedException, TimeoutException {
        try {
            Duration grace = cached == null || wait.compareTo(CACHE_GRACE) < 0 ? wait : CACHE_GRACE;
            first.get(grace.toMillis(), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException("no first snapshot: " + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            if (cached == null) {
                throw e;
            }
            Snapshot s = cached.snapshot();
            if (startPlane(s, cached.age())) {
                startedFromCache = cache.file();
                LOG.warning("no snapshot from the snapshot source within " + CACHE_GRACE.toSeconds() + " s: serving from"
                        + " the cached snapshot " + s.version() + " of " + cache.file() + ", last confirmed "
                        + cached.age().toSeconds() + " s ago, until the source answers"
                        + (cached.age().compareTo(config.options().maxSnapshotAge()) > 0 ? " (older than max_snapshot_age:"
                                + " fallback mode)" : ""));
            }
        }
        observeMode();
        LOG.info("gateway " + config.gatewayCluster() + " routing with snapshot " + plane.get().snapshot().version()
                + (startedFromCache == null ? " from its snapshot source" : " from the snapshot cache " + startedFromCache));
    }

    /** The bearer token crosses the network in clear when the control plane is plain HTTP on another host. */
    private static void warnIfTokenInClear(GatewayConfig config) {
        java.net.URI cp = config.controlPlane();
        if (cp == null || config.token() == null || !"http".equalsIgnoreCase(cp.getScheme())) {
            return;
        }
        String host = cp.getHost() == null ? "" : cp.getHost();
        boolean loopback = host.equals("localhost") || host.startsWith("127.") || host.equals("[::1]")
                || host.equals("::1");
        if (!loopback) {
            LOG.warning("control plane " + cp.getAuthority() + " is plain HTTP: the bearer token and the snapshots"
                    + " cross the network unencrypted and unauthenticated; use an https:// URL (docs/servers.md, TLS)");
        }
    }

    private static String abbreviate(String hash) {
        return hash.length() > 16 ? hash.substring(0, 16) : hash;
    }

    /**
     * Starts a gateway: binds its address, then waits for the source's first snapshot (up to 60 s; with a snapshot
     * cache that holds one, up to 5 s and then starts from the cached one). Until then it answers
     * {@code /livez}, {@code /readyz} ({@code no snapshot}), {@code /healthz} and {@code /metrics}, and 503 to model
     * requests.
     *
     * @throws ListenException when the address cannot be bound (before the source is asked for anything)
     * @throws StartException when no snapshot arrives in time
     */
    public static Gateway start(GatewayConfig config, SnapshotSource source) {
        return start(config, source, Math.max(2, Runtime.getRuntime().availableProcessors()));
    }

    /** As {@link #start(GatewayConfig, SnapshotSource)} with {@code threads} event loops. */
    public static Gateway start(GatewayConfig config, SnapshotSource source, int threads) {
        return start(config, source, threads, FIRST_SNAPSHOT_WAIT);
    }

    /** How long {@link #start} waits for the source's first snapshot. */
    static final Duration FIRST_SNAPSHOT_WAIT = Duration.ofSeconds(60);
    /** How long {@link #start} waits for the source before it starts from the snapshot cache, when it has one. */
    static final Duration CACHE_GRACE = Duration.ofSeconds(5);

    /**
     * The data plane from the first snapshot, {@code age} old already; false when one was made first (the source and
     * the snapshot cache can race at start).
     */
    private boolean startPlane(Snapshot s, Duration age) {
        if (!plane.compareAndSet(null, DataPlane.create(config.gatewayCluster(), s, Ticker.system(), opts, age,
                reporter.lastEnds()))) {
            return false;
        }
        checkOwnRoutes(s);
        return true;
    }

    private static void keep(SnapshotCache cache, Snapshot s) {
        if (cache != null) {
            cache.keep(s);
        }
    }

    /** As {@link #start(GatewayConfig, SnapshotSource, int)}, waiting {@code firstSnapshotWait} for the first snapshot. */
    static Gateway start(GatewayConfig config, SnapshotSource source, int threads, Duration firstSnapshotWait) {
        Gateway gw = open(config, source, threads);
        try {
            gw.awaitFirstSnapshot(firstSnapshotWait);
            return gw;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            gw.stop(false);
            throw new IllegalStateException("interrupted while starting", e);
        } catch (TimeoutException e) {
            gw.stop(false);
            long ms = firstSnapshotWait.toMillis();
            throw new StartException("no snapshot within " + (ms % 1000 == 0 ? ms / 1000 + " s" : ms + " ms")
                    + ", and a gateway cannot"
                    + " route without one (the snapshot source's warnings above say why; a gateway started with"
                    + " snapshot_file needs no control plane, one with snapshot_cache_file starts from the last"
                    + " snapshot it took)", e);
        } catch (RuntimeException e) {
            gw.stop(false);
            throw new IllegalStateException("cannot start gateway on " + config.host() + ":" + config.port() + ": "
                    + e.getMessage(), e);
        }
    }

    /**
     * A gateway listening on its address, its source started, that may hold no snapshot yet ({@link #plane()} null);
     * {@link #start} waits for one.
     */
    static Gateway open(GatewayConfig config, SnapshotSource source, int threads) {
        try {
            return new Gateway(config, source, threads);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            source.close();
            throw new IllegalStateException("interrupted while starting", e);
        } catch (ListenException e) {
            source.close();
            throw e; // already names the address
        } catch (RuntimeException e) {
            source.close();
            throw new IllegalStateException("cannot start gateway on " + config.host() + ":" + config.port() + ": "
                    + e.getMessage(), e);
        }
    }

    /** The port it listens on. */
    public int port() {
        return ((InetSocketAddress) serverChannel.localAddress()).getPort();
    }

    /** The options its data plane runs with: the configured ones, with the source's cadence when none was set. */
    DataPlaneOptions dataPlaneOptions() {
        return opts;
    }

    /** The data plane (its snapshot, status and ejections); never null once {@link #start} returned. */
    public DataPlane plane() {
        return plane.get();
    }

    /** Engine id → requests this gateway has in flight on it (none before the first snapshot). */
    private java.util.Map<String, Integer> inFlightByEngine() {
        DataPlane p = plane.get();
        return p == null ? java.util.Map.of() : p.inFlightByEngine();
    }

    /** The held snapshot, or null before the first. */
    private Snapshot heldSnapshot() {
        DataPlane p = plane.get();
        return p == null ? null : p.snapshot();
    }

    /** The data plane's status, or null before the first snapshot. */
    private DataPlaneStatus status() {
        DataPlane p = plane.get();
        return p == null ? null : p.status();
    }

    /**
     * The snapshot cache file the gateway started from, because its source sent no snapshot in time; null when its
     * first snapshot came from the source.
     */
    public java.nio.file.Path startedFromCache() {
        return startedFromCache;
    }

    /** Logs a change of mode, once (the gateway's check once a second, and the data plane's word on a request). */
    private void observeMode() {
        probes.observe(status(), config.options().maxSnapshotAge());
    }

    /** What {@code /readyz} says now. */
    Probes.Readiness readiness() {
        return Probes.Readiness.of(status(), ownClasses(), draining);
    }

    /** Requests being proxied now, ≥ 0. */
    public int inFlight() {
        return inFlight.get();
    }

    /** Bytes written to client connections and not yet taken by the kernel, summed over the connections. */
    long bufferedForClients() {
        long sum = 0;
        for (Channel c : channels) {
            io.netty.channel.ChannelOutboundBuffer b = c.unsafe().outboundBuffer();
            sum += b == null ? 0 : b.totalPendingWriteBytes();
        }
        return sum;
    }

    boolean draining() {
        return draining;
    }

    void http2ConnectionOpened() {
        http2Connections.incrementAndGet();
    }

    void http2ConnectionClosed() {
        http2Connections.decrementAndGet();
    }

    void exchangeStarted() {
        inFlight.incrementAndGet();
    }

    /**
     * Says loudly when a snapshot gives this gateway's cluster no routes: every model request would be refused (404
     * unknown model), which usually means {@code gateway_cluster} names a cluster the topology does not have. Once per
     * change, not per snapshot. Gives each class it routes its shed counter.
     */
    private void checkOwnRoutes(Snapshot s) {
        Map<String, Route> own = ownRoutes(s);
        metrics.routes(own.keySet());
        boolean none = own.isEmpty();
        if (none && !withoutRoutes) {
            java.util.List<String> clusters = s.routes().keySet().stream().limit(8).toList();
            LOG.severe("NO ROUTES: snapshot " + s.version() + " has no routes for gateway cluster "
                    + config.gatewayCluster() + "; every model request is refused until one has. The snapshot routes "
                    + (clusters.isEmpty() ? "no gateway cluster" : "gateway clusters " + String.join(", ", clusters)
                    + (s.routes().size() > clusters.size() ? ", …" : ""))
                    + ": check gateway_cluster in this gateway's config against the topology");
        } else if (!none && withoutRoutes) {
            LOG.info("snapshot " + s.version() + " routes " + own.size() + " classes at gateway cluster "
                    + config.gatewayCluster() + " again");
        }
        withoutRoutes = none;
    }

    /** The routes {@code s} holds for this gateway's cluster, by class; empty when it holds none. */
    private Map<String, Route> ownRoutes(Snapshot s) {
        return s.routes().getOrDefault(config.gatewayCluster(), Map.of());
    }

    /** Classes the held snapshot routes at this gateway's cluster; 0 before the first snapshot. */
    int ownClasses() {
        Snapshot s = heldSnapshot();
        return s == null ? 0 : ownRoutes(s).size();
    }

    void exchangeEnded() {
        inFlight.decrementAndGet();
    }

    String newRequestId() {
        return "sx-" + idPrefix + "-" + ids.incrementAndGet();
    }

    /** The models the snapshot routes from this gateway cluster, in id order. */
    private TreeSet<String> routedModels() {
        TreeSet<String> models = new TreeSet<>();
        ownRoutes(plane.get().snapshot()).values().forEach(r -> models.add(r.model()));
        return models;
    }

    /** OpenAI's model list: the models this gateway routes that {@code tenant} may use (all of them for null). */
    String modelsJson(Tenant tenant) {
        ObjectNode root = Http.JSON.createObjectNode();
        root.put("object", "list");
        ArrayNode data = root.putArray("data");
        routedModels().stream().filter(m -> tenant == null || tenant.allows(m)).forEach(m -> model(data.addObject(), m));
        return root.toString();
    }

    /**
     * OpenAI's "retrieve model": the model's entry of {@link #modelsJson}, or null when it is not routed here or
     * {@code tenant} (null: anyone) may not use it.
     */
    String modelJson(String id, Tenant tenant) {
        return routedModels().contains(id) && (tenant == null || tenant.allows(id))
                ? model(Http.JSON.createObjectNode(), id).toString() : null;
    }

    private static ObjectNode model(ObjectNode o, String id) {
        return o.put("id", id).put("object", "model").put("created", 0).put("owned_by", "sextant");
    }

    String healthJson() {
        DataPlaneStatus st = status();
        ObjectNode root = Http.JSON.createObjectNode();
        int classes = ownClasses();
        root.put("status", draining ? "draining" : st == null ? "no_snapshot" : classes == 0 ? "no_routes"
                : st.fallback() ? "fallback" : "ok");
        root.put("gateway_cluster", config.gatewayCluster());
        root.put("classes", classes);
        if (st == null) {
            root.put("in_flight", inFlight.get());
            return root.toString();
        }
        root.put("mode", Probes.Mode.of(st).word());
        root.put("snapshot_version", st.version());
        root.put("snapshot_hash", st.hash());
        root.put("snapshot_age_seconds", st.ageNanos() / 1e9);
        root.put("fallback", st.fallback());
        root.put("in_flight", inFlight.get());
        root.put("retry_tokens", st.retryTokens());
        ArrayNode ej = root.putArray("ejections");
        for (Ejection e : plane.get().ejections()) {
            ej.addObject().put("engine", e.engineId()).put("reason", e.reason());
        }
        return root.toString();
    }

    /**
     * One access-log line; {@code reason} is the routing decision's ({@link DecisionReasons}), null ({@code -}) for a
     * request refused before any routing.
     */
    void accessLog(Channel client, String method, String path, int status, String classId, String engine, int attempts,
                   String reason, long ttftNanos, long totalNanos, long bytes, boolean stream, String requestId,
                   String error) {
        if (!config.accessLog() || !ACCESS.isLoggable(Level.INFO)) {
            return;
        }
        // an HTTP/2 stream is a child channel of its connection; the request object says HTTP/1.1 either way
        String protocol = client instanceof io.netty.handler.codec.http2.Http2StreamChannel ? "h2" : "http/1.1";
        // the path and the error may carry what a client or an engine wrote: one request stays one line
        StringBuilder sb = new StringBuilder(170).append(config.gatewayCluster()).append(' ').append(method).append(' ')
                .append(LogText.oneLine(path)).append(' ').append(status).append(" proto=").append(protocol)
                .append(" class=").append(classId == null ? "-" : classId).append(" engine=")
                .append(engine == null ? "-" : engine).append(" attempts=").append(attempts).append(" reason=")
                .append(reason == null ? "-" : reason).append(" ttft_ms=")
                .append(ttftNanos < 0 ? "-" : String.format("%.1f", ttftNanos / 1e6)).append(" total_ms=")
                .append(String.format("%.1f", totalNanos / 1e6)).append(" bytes=").append(bytes)
                .append(" stream=").append(stream).append(" id=").append(requestId);
        if (error != null) {
            sb.append(" error=\"").append(LogText.oneLine(error).replace('"', '\'')).append('"');
        }
        ACCESS.info(sb.toString());
    }

    void logFailure(String message) {
        LOG.warning(LogText.oneLine(message));
    }

    /**
     * Stops as {@link GatewayConfig#drain()} says (docs/servers.md, "Stopping"): not ready at once ({@code /readyz}
     * 503 {@code draining}), HTTP/1.1 answers with {@code Connection: close} and GOAWAY to HTTP/2 clients, so that
     * clients come back through the load balancer; accepting and serving for the drain window; then no longer
     * accepting, and waiting up to the drain timeout for the requests in flight to finish and their last bytes to
     * leave; then every connection, the snapshot source and the event loops closed. Blocks until then; a second call
     * returns at once.
     */
    @Override
    public void close() {
        stop(true);
    }

    /** {@link #close()}, with its drain window when {@code window}, else without (a start that failed). */
    private void stop(boolean window) {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        draining = true;
        goAway();
        Duration serveOn = window ? config.drain().window() : Duration.ZERO;
        if (!serveOn.isZero()) {
            LOG.info("gateway " + config.gatewayCluster() + " draining: not ready, serving on for the drain window of "
                    + serveOn.toMillis() / 1000.0 + " s, then no longer accepting");
            pause(serveOn.toNanos());
        }
        serverChannel.close().awaitUninterruptibly();
        goAway(); // the connections opened during the window
        long deadline = System.nanoTime() + config.drain().timeout().toNanos();
        // an exchange ends as its last bytes are handed to the connection: a slow reader may still have them queued
        while ((inFlight.get() > 0 || bufferedForClients() > 0) && System.nanoTime() < deadline) {
            if (!pause(TimeUnit.MILLISECONDS.toNanos(20))) {
                break;
            }
        }
        if (inFlight.get() > 0) {
            LOG.warning("drain timeout: closing " + inFlight.get() + " in-flight requests");
        }
        channels.close();
        source.close();
        if (prober != null) {
            prober.close();
        }
        reporter.close();
        tenancy.close();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
        jvm.close();
    }

    /** GOAWAY to every HTTP/2 client connection: streams open now finish, the client opens no more here. */
    private void goAway() {
        for (Channel c : channels) {
            if (c.pipeline().get(Http2FrameCodec.class) != null) {
                // the last stream id is the last the client opened (a second GOAWAY names the same and is not sent)
                c.writeAndFlush(new DefaultHttp2GoAwayFrame(Http2Error.NO_ERROR));
            }
        }
    }

    /** Waits {@code nanos}; false when interrupted (the interrupt kept), so that stopping goes on at once. */
    private static boolean pause(long nanos) {
        try {
            TimeUnit.NANOSECONDS.sleep(nanos);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
