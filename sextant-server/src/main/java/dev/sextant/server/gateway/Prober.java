package dev.sextant.server.gateway;

import dev.sextant.server.auth.BearerToken;
import dev.sextant.server.internal.Http;
import dev.sextant.server.internal.Transport;
import dev.sextant.snapshot.Snapshot;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The gateway's round-trip probes: every interval, {@code GET <endpoint>/health} to one engine of each engine cluster
 * of the held snapshot, the cluster's engines taken in turn (by id), so that every engine is probed in turn. The time
 * from the request written to the response complete is a round trip to that engine cluster when the engine answered
 * 2xx ({@link Reporter#roundTrip}); a 2xx is a probe success of the engine, anything else (status, timeout, refused
 * or reset connection, failed TLS handshake) a probe failure ({@link Reporter.EngineStats#probe}).
 *
 * <p>Off the request path: probes run on an event loop of their own, each on a connection of its own ({@code
 * connection: close}, made as the gateway makes its engine connections, TLS included), so they never wait behind a
 * request nor take a pooled connection, and they are in no request count. Bounded: at most one probe of an engine
 * cluster queued or in flight at a time (a cluster still being probed is skipped by the next round), and at most
 * {@value #MAX_IN_FLIGHT} in flight over all clusters, the others waiting their turn, so a fleet of thousands of
 * clusters never opens thousands of connections at once. All state is confined to the probes' loop.
 */
final class Prober implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(Prober.class.getName());

    /** Longest a probe may take, from its connect to its response complete. */
    static final Duration TIMEOUT = Duration.ofSeconds(2);
    /** Most probes in flight at once, over all engine clusters. */
    static final int MAX_IN_FLIGHT = 32;
    /** The path probed: vLLM's, SGLang's and TGI's health check. */
    static final String PATH = "/health";

    /** How a probe ended, as {@code sextant_gateway_probes_total{outcome}} labels it. */
    static final String SUCCESS = "success";
    static final String STATUS = "status";
    static final String TIMED_OUT = "timeout";
    static final String CONNECT_ERROR = "connect_error";
    static final String CLOSED = "closed";
    static final List<String> OUTCOMES = List.of(SUCCESS, STATUS, TIMED_OUT, CONNECT_ERROR, CLOSED);

    /** The engines of one engine cluster and whose turn is next. Touched on the probes' loop only. */
    private static final class Cluster {
        final String id;
        List<String> engineIds = List.of();
        List<String> endpoints = List.of();
        int next;
        /** A probe of this cluster is queued or in flight: the next round leaves it be. */
        boolean pending;
        /** No longer in the snapshot: a queued probe of it is dropped. */
        boolean gone;

        Cluster(String id) {
            this.id = id;
        }
    }

    private final String gatewayCluster;
    private final Supplier<Snapshot> snapshot;
    private final UpstreamPool pool;
    private final Reporter reporter;
    private final GatewayMetrics metrics;
    private final BearerToken engineToken;
    private final EventLoopGroup group;
    private final EventLoop loop;
    private final Map<String, Cluster> clusters = new HashMap<>();
    private final ArrayDeque<Cluster> waiting = new ArrayDeque<>();
    private Snapshot seen;
    private int inFlight;
    private boolean starting;
    // for tests and their waits, written on the loop
    private volatile int maxInFlight;
    private volatile long rounds;

    /**
     * Starts probing every {@code interval} (&gt; 0), the first round one interval from now.
     *
     * @param snapshot    the held snapshot, whose engine clusters are probed; null before the first (no round)
     * @param engineToken sent as {@code Authorization: Bearer …} as with requests, or null
     */
    Prober(String gatewayCluster, Supplier<Snapshot> snapshot, UpstreamPool pool, Reporter reporter,
           GatewayMetrics metrics, BearerToken engineToken, Duration interval) {
        this.gatewayCluster = gatewayCluster;
        this.snapshot = snapshot;
        this.pool = pool;
        this.reporter = reporter;
        this.metrics = metrics;
        this.engineToken = engineToken;
        this.group = Transport.current().group(1, "sextant-gateway-probes");
        this.loop = group.next();
        loop.scheduleAtFixedRate(this::round, interval.toNanos(), interval.toNanos(), TimeUnit.NANOSECONDS);
    }

    /** The most probes that were in flight at once so far. */
    int maxInFlight() {
        return maxInFlight;
    }

    /** Rounds begun so far. */
    long rounds() {
        return rounds;
    }

    private void round() {
        try {
            Snapshot s = snapshot.get();
            if (s == null) {
                return; // no snapshot yet: nothing to probe
            }
            if (s != seen) {
                learn(s);
                seen = s;
            }
            for (Cluster c : clusters.values()) {
                if (!c.pending && !c.engineIds.isEmpty()) {
                    c.pending = true;
                    waiting.addLast(c);
                }
            }
            startWaiting();
        } catch (RuntimeException e) { // a scheduled task that throws is never run again: probing would stop
            LOG.log(Level.WARNING, "round-trip probes: round failed", e);
        } finally {
            rounds++;
        }
    }

    /** The engine clusters of a new snapshot, each cluster's turn kept across snapshots. */
    private void learn(Snapshot s) {
        Map<String, List<String[]>> byCluster = new TreeMap<>();
        s.engines().forEach((id, e) -> byCluster.computeIfAbsent(e.cluster(), k -> new ArrayList<>())
                .add(new String[] {id, e.endpoint()}));
        for (Cluster c : clusters.values()) {
            if (!byCluster.containsKey(c.id)) {
                c.gone = true;
            }
        }
        clusters.keySet().retainAll(byCluster.keySet());
        byCluster.forEach((id, engines) -> {
            Cluster c = clusters.computeIfAbsent(id, Cluster::new);
            List<String> ids = new ArrayList<>();
            List<String> endpoints = new ArrayList<>();
            for (String[] e : engines) { // the snapshot's engines come sorted by id
                ids.add(e[0]);
                endpoints.add(e[1]);
            }
            c.engineIds = List.copyOf(ids);
            c.endpoints = List.copyOf(endpoints);
        });
    }

    private void startWaiting() {
        if (starting) {
            return; // a probe that ended as it started (a refused endpoint): the loop below takes the place it freed
        }
        starting = true;
        try {
            while (inFlight < MAX_IN_FLIGHT && !waiting.isEmpty()) {
                Cluster c = waiting.pollFirst();
                if (c.gone || c.engineIds.isEmpty()) {
                    c.pending = false;
                    continue;
                }
                int i = c.next % c.engineIds.size();
                c.next = (i + 1) % c.engineIds.size();
                inFlight++;
                maxInFlight = Math.max(maxInFlight, inFlight);
                new Probe(c, c.engineIds.get(i), c.endpoints.get(i)).start();
            }
        } finally {
            starting = false;
        }
    }

    /** One probe of one engine: its connection, its timer, its outcome (once). Touched on the probes' loop only. */
    private final class Probe extends ChannelInboundHandlerAdapter {
        private final Cluster cluster;
        private final String engineId;
        private final String endpoint;
        private Channel channel;
        private ScheduledFuture<?> timer;
        private long writtenNanos = -1;
        private int status;
        private boolean done;

        Probe(Cluster cluster, String engineId, String endpoint) {
            this.cluster = cluster;
            this.engineId = engineId;
            this.endpoint = endpoint;
        }

        void start() {
            timer = loop.schedule(() -> end(TIMED_OUT), TIMEOUT.toNanos(), TimeUnit.NANOSECONDS);
            ChannelFuture connecting;
            try {
                connecting = pool.connect(loop, endpoint, this, TIMEOUT);
            } catch (IllegalArgumentException e) { // an endpoint that is no URL (a hand-made snapshot)
                end(CONNECT_ERROR);
                return;
            }
            channel = connecting.channel();
            connecting.addListener((ChannelFutureListener) f -> {
                if (!f.isSuccess()) {
                    end(CONNECT_ERROR);
                    return;
                }
                SslHandler tls = f.channel().pipeline().get(SslHandler.class);
                if (tls == null) {
                    send();
                } else { // the handshake is the connection's set-up, not part of the round trip
                    tls.handshakeFuture().addListener(h -> {
                        if (h.isSuccess()) {
                            send();
                        } else {
                            end(CONNECT_ERROR);
                        }
                    });
                }
            });
        }

        private void send() {
            if (done) {
                return;
            }
            UpstreamPool.Target target = pool.target(endpoint);
            DefaultFullHttpRequest r = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET,
                    target.basePath() + PATH, Unpooled.EMPTY_BUFFER);
            r.headers().set(HttpHeaderNames.HOST, target.authority());
            r.headers().set(Http.GATEWAY_CLUSTER_HEADER, gatewayCluster);
            if (engineToken != null) {
                r.headers().set(HttpHeaderNames.AUTHORIZATION, "Bearer " + engineToken.current());
            }
            HttpUtil.setKeepAlive(r, false);
            channel.writeAndFlush(r).addListener((ChannelFutureListener) f -> {
                if (!f.isSuccess()) {
                    end(CLOSED);
                    return;
                }
                writtenNanos = System.nanoTime();
                f.channel().config().setAutoRead(true); // a probe reads its whole (small) answer
                f.channel().read();
            });
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                if (done) {
                    return;
                }
                if (msg instanceof HttpObject o && o.decoderResult().isFailure()) {
                    end(CLOSED); // not HTTP
                    return;
                }
                if (msg instanceof HttpResponse r) {
                    status = r.status().code();
                }
                if (msg instanceof LastHttpContent && UpstreamHandler.interim(status)) {
                    status = 0; // an interim answer ended: the answer follows
                } else if (msg instanceof LastHttpContent) {
                    long now = System.nanoTime();
                    boolean ok = status / 100 == 2;
                    if (ok && writtenNanos >= 0) {
                        reporter.roundTrip(cluster.id, now - writtenNanos);
                    }
                    end(ok ? SUCCESS : STATUS);
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            end(CLOSED); // nothing when already ended
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            end(writtenNanos < 0 && cause instanceof javax.net.ssl.SSLException ? CONNECT_ERROR : CLOSED);
        }

        /** Ends the probe once: counts it, frees its cluster's turn and its place, starts the next one waiting. */
        private void end(String outcome) {
            if (done) {
                return;
            }
            done = true;
            timer.cancel(false);
            if (channel != null) {
                channel.close();
            }
            reporter.engine(engineId).probe(outcome.equals(SUCCESS));
            metrics.probe(outcome);
            cluster.pending = false;
            inFlight--;
            startWaiting();
        }
    }

    /** Stops probing and closes the probes' connections. */
    @Override
    public void close() {
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly();
    }
}
