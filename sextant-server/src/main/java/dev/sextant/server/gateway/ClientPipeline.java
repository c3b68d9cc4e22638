package dev.sextant.server.gateway;

import dev.sextant.server.internal.ConnectionCap;
import dev.sextant.server.internal.HeadCheck;
import dev.sextant.server.internal.ListenerLimits;
import dev.sextant.server.internal.ListenerMeters;
import dev.sextant.server.internal.RequestGuard;
import dev.sextant.server.internal.OversizedAwareAggregator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpServerUpgradeHandler;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http2.CleartextHttp2ServerUpgradeHandler;
import io.netty.handler.codec.http2.Http2CodecUtil;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2ServerUpgradeCodec;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.Http2StreamFrameToHttpObjectCodec;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.ApplicationProtocolNegotiationHandler;
import io.netty.handler.ssl.SslContext;
import io.netty.util.AsciiString;

/**
 * What a client connection to the gateway speaks, and the handlers for it.
 *
 * <ul>
 *   <li>HTTP/1.1: {@link RequestGuard}, the HTTP codec, the {@link KeyCheck} (a model request without a tenant's
 *   key is refused on its head), the body aggregator and a {@link FrontHandler} on the connection, one request at a
 *   time.</li>
 *   <li>HTTP/2 (with {@link GatewayConfig#http2()}): chosen by ALPN under TLS; on a plain listener by the client's
 *   connection preface (prior knowledge) or by {@code Upgrade: h2c} on its first request. The connection carries
 *   the frame codec and an {@link H2Connection}; each stream is a child channel with its own guard, key check, aggregator and
 *   front handler, so a stream is served exactly as an HTTP/1.1 request is: same errors, limits, timeouts, metrics
 *   and access-log line.</li>
 * </ul>
 *
 * <p>Limits over all connections, as on every listener ({@link ListenerLimits}): at most {@code max_connections}
 * open ({@link ConnectionCap}: one more is closed as soon as it is accepted), and at most
 * {@code max_buffered_body_bytes} of request bodies held while they arrive, over every connection and stream
 * ({@link HeadCheck#inTurn}: a request whose body does not fit gets its 503 in its turn, before its body is read).
 *
 * <p>Back-pressure: an HTTP/1.1 connection reads when its front handler asks, and its guard keeps it reading while the
 * one request read is answered (a pipelined request is then held, and reading stops). An HTTP/2 connection reads on
 * (frames of many streams share it); what a stream may send is bounded by its flow-control window, which grows
 * only as its child channel reads, and what the gateway sends on a stream waits for the client's window, so the
 * write that gates the next read from the engine completes only when the client made room.
 */
final class ClientPipeline {
    private static final String H1_BYTES = "h1-bytes";
    private static final String H1_GUARD = "h1-guard";
    private static final String H1_KEYS = "h1-keys";
    private static final String H1_BODY = "h1-body";
    private static final String H1_FRONT = "h1-front";
    private static final String H1_BUDGET = "h1-budget";

    private final Gateway gw;
    private final GatewayConfig config;
    private final SslContext tls;
    private final ChannelInitializer<Http2StreamChannel> stream = new StreamInitializer();
    private final ConnectionCap connections;
    private final HeadCheck.Budget bodies;

    /** {@code tls}: the listener's context (with ALPN when HTTP/2 is on), or null for a plain listener. */
    ClientPipeline(Gateway gw, SslContext tls) {
        this.gw = gw;
        this.config = gw.config;
        this.tls = tls;
        this.connections = new ConnectionCap("gateway", config.maxConnections());
        this.bodies = new HeadCheck.Budget(config.maxBufferedBodyBytes());
        ListenerMeters.bind(gw.metrics.registry, "sextant.gateway", connections, bodies);
    }

    /** Sets up a new client connection. */
    void init(Channel ch) {
        ChannelPipeline p = ch.pipeline();
        p.addLast(connections.handler());
        if (tls != null) {
            p.addLast(tls.newHandler(ch.alloc()));
            if (config.http2()) {
                p.addLast(new Alpn());
                return;
            }
        }
        HttpServerCodec codec = codec();
        if (!config.http2()) {
            http1(p, codec);
            return;
        }
        int maxBody = config.maxBodyBytes();
        HttpServerUpgradeHandler upgrade = new HttpServerUpgradeHandler(codec,
                protocol -> AsciiString.contentEquals(Http2CodecUtil.HTTP_UPGRADE_PROTOCOL_NAME, protocol)
                        ? new H2cUpgrade(new Http2ServerUpgradeCodec(frameCodec(),
                                new H2Connection(gw, config.clientLimits()), new Http2MultiplexHandler(stream)),
                                config.clientLimits().requestHeaderTimeout())
                        : null,
                maxBody, DefaultHttpHeadersFactory.headersFactory(),
                DefaultHttpHeadersFactory.trailersFactory(), true) {
            /**
             * An upgrade request whose body is over the limit, or of unknown length (chunked), stays HTTP/1.1 (a
             * server may ignore {@code Upgrade}): the HTTP/1.1 handlers then refuse an oversized body with the
             * gateway's 413 and drain it, where this handler's aggregation would answer Netty's bodiless 413.
             */
            @Override
            protected boolean shouldHandleUpgradeRequest(HttpRequest req) {
                return !HttpUtil.isTransferEncodingChunked(req) && HttpUtil.getContentLength(req, 0L) <= maxBody;
            }
        };
        http1(p, new CleartextHttp2ServerUpgradeHandler(codec, upgrade, new PriorKnowledge()));
    }

    private HttpServerCodec codec() {
        return config.clientLimits().codec();
    }

    private void http1(ChannelPipeline p, ChannelHandler codec) {
        RequestGuard guard = new RequestGuard(config.clientLimits(), config.idleTimeout());
        p.addLast(H1_BYTES, guard.bytesIn());
        p.addLast(codec);
        p.addLast(H1_GUARD, guard);
        KeyCheck keys = new KeyCheck(gw);
        p.addLast(H1_KEYS, keys);
        p.addLast(H1_BUDGET, HeadCheck.inTurn(bodies, config.maxBodyBytes()));
        p.addLast(H1_BODY, new OversizedAwareAggregator(config.maxBodyBytes(), gw.metrics.oversized));
        p.addLast(H1_FRONT, new FrontHandler(gw, keys));
    }

    /** Removes the HTTP/1.1 handlers of a connection that turned to HTTP/2 (their timers with them). */
    static void removeHttp1(ChannelPipeline p) {
        for (String name : new String[] {H1_BYTES, H1_GUARD, H1_KEYS, H1_BUDGET, H1_BODY, H1_FRONT}) {
            if (p.context(name) != null) {
                p.remove(name);
            }
        }
    }

    /**
     * The server's first SETTINGS: at most {@code max_concurrent_streams} open streams, and a header list (names,
     * values and 32 bytes a field, as RFC 9113 counts it) of at most {@code max_header_bytes}; a stream over it is
     * answered 431.
     */
    private Http2FrameCodec frameCodec() {
        Http2Settings settings = Http2Settings.defaultSettings()
                .maxConcurrentStreams(config.maxConcurrentStreams())
                .maxHeaderListSize(config.clientLimits().maxHeaderBytes());
        return Http2FrameCodecBuilder.forServer().initialSettings(settings).validateHeaders(true).build();
    }

    private void http2(ChannelPipeline p) {
        removeHttp1(p);
        p.addLast(frameCodec(), new H2Connection(gw, config.clientLimits()), new Http2MultiplexHandler(stream));
    }

    /** One HTTP/2 stream: the same handlers as an HTTP/1.1 connection, on HTTP objects made from its frames. */
    @ChannelHandler.Sharable
    private final class StreamInitializer extends ChannelInitializer<Http2StreamChannel> {
        @Override
        protected void initChannel(Http2StreamChannel ch) {
            ch.config().setAutoRead(false); // the stream's window grows only as its front handler reads
            KeyCheck keys = new KeyCheck(gw);
            ch.pipeline().addLast(new Http2StreamFrameToHttpObjectCodec(true),
                    new RequestGuard(config.clientLimits(), config.idleTimeout()), keys,
                    HeadCheck.inTurn(bodies, config.maxBodyBytes()),
                    new OversizedAwareAggregator(config.maxBodyBytes(), gw.metrics.oversized),
                    new FrontHandler(gw, keys));
        }
    }

    /** Put in place of the HTTP/1.1 codec when a plain connection opened with the HTTP/2 preface. */
    private final class PriorKnowledge extends ChannelInboundHandlerAdapter {
        @Override
        public void handlerAdded(ChannelHandlerContext ctx) {
            ChannelPipeline p = ctx.pipeline();
            p.remove(this);
            http2(p);
        }
    }

    /** Under TLS: HTTP/2 or HTTP/1.1 as the handshake's ALPN chose (HTTP/1.1 when the client offered neither). */
    private final class Alpn extends ApplicationProtocolNegotiationHandler {
        Alpn() {
            super(ApplicationProtocolNames.HTTP_1_1);
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) throws Exception {
            ctx.read(); // the handshake's first bytes; the TLS handler reads on until the handshake is done
            super.channelActive(ctx);
        }

        @Override
        protected void configurePipeline(ChannelHandlerContext ctx, String protocol) {
            if (ApplicationProtocolNames.HTTP_2.equals(protocol)) {
                http2(ctx.pipeline());
            } else {
                http1(ctx.pipeline(), codec());
                ctx.channel().read(); // from the tail, so that the guard starts the head clock
            }
        }
    }
}
