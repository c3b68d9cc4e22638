package dev.sextant.server.gateway;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpServerUpgradeHandler;
import io.netty.handler.codec.http.HttpServerUpgradeHandler.UpgradeEvent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.Collection;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * {@code Upgrade: h2c}, with the answer to the upgraded request held back until the client has spoken HTTP/2.
 *
 * <p>RFC 9113 lets a server answer the upgraded request (stream 1) right after its {@code 101}, and Netty does. But
 * two common clients lose what arrives together with the {@code 101} when it is more than a few frames: curl 7.88
 * ({@code --http2}) gives up ("connection buffer size is too small to store data following HTTP Upgrade response
 * header") and the JDK 17 client, now and then, never sees the answer's DATA, or reads part of it as frame headers
 * ({@code Frame type(101) length(7626611) exceeds MAX_FRAME_SIZE}). Measured against the gateway's 49 KB
 * {@code /metrics}: curl failed 135 of 300 upgrades, the JDK client 24 of 600.
 *
 * <p>So the upgraded request is handed to HTTP/2 only once the client's first bytes after the {@code 101} (its
 * connection preface) have arrived, by which time the client has switched: the {@code 101} is followed only by the
 * server's SETTINGS, as it is with any small answer. It costs the first request one round trip. A client that sends
 * nothing within {@code request_header_timeout} has not spoken HTTP/2 (RFC 9113 §3.2 requires its preface right
 * after the {@code 101}) and cannot be answered in it: its connection is closed, as an HTTP/1.1 connection whose
 * request head does not arrive in that time is.
 */
final class H2cUpgrade implements HttpServerUpgradeHandler.UpgradeCodec {
    private static final Logger LOG = Logger.getLogger(H2cUpgrade.class.getName());
    private final HttpServerUpgradeHandler.UpgradeCodec http2;
    private final Duration patience;

    /** {@code http2}: Netty's HTTP/2 upgrade codec; {@code patience}: how long to wait for the client's preface. */
    H2cUpgrade(HttpServerUpgradeHandler.UpgradeCodec http2, Duration patience) {
        this.http2 = http2;
        this.patience = patience;
    }

    @Override
    public Collection<CharSequence> requiredUpgradeHeaders() {
        return http2.requiredUpgradeHeaders();
    }

    @Override
    public boolean prepareUpgradeResponse(ChannelHandlerContext ctx, FullHttpRequest upgradeRequest,
                                          HttpHeaders upgradeHeaders) {
        return http2.prepareUpgradeResponse(ctx, upgradeRequest, upgradeHeaders);
    }

    /**
     * Netty's upgrade puts the HTTP/2 handlers right after the upgrade handler and then fires the {@link UpgradeEvent}
     * that opens stream 1 from the upgrade handler's place; the {@link Hold} goes between the two, so it receives
     * that event first.
     */
    @Override
    public void upgradeTo(ChannelHandlerContext ctx, FullHttpRequest upgradeRequest) {
        http2.upgradeTo(ctx, upgradeRequest);
        if (ctx.channel().isActive()) {
            ctx.pipeline().addAfter(ctx.name(), null, new Hold(patience));
        }
    }

    /** Keeps the upgrade event until the client's first HTTP/2 bytes have been passed on, then leaves. */
    static final class Hold extends ChannelInboundHandlerAdapter {
        private final Duration patience;
        private UpgradeEvent held;
        private boolean clientSpoke;
        private ScheduledFuture<?> timer;

        Hold(Duration patience) {
            this.patience = patience;
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
            if (evt instanceof UpgradeEvent upgrade && held == null && !clientSpoke) {
                held = upgrade; // retained by the upgrade handler for whoever handles it: released when passed on
                timer = ctx.executor().schedule(() -> giveUp(ctx), patience.toNanos(), TimeUnit.NANOSECONDS);
                return;
            }
            ctx.fireUserEventTriggered(evt);
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            clientSpoke = true;
            ctx.fireChannelRead(msg); // the preface first, so that the answer follows the client's switch
            release(ctx);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            drop();
            ctx.fireChannelInactive();
        }

        @Override
        public void handlerRemoved(ChannelHandlerContext ctx) {
            drop();
        }

        /** Passes the held event on (the frame codec opens stream 1 with it) and removes this handler. */
        private void release(ChannelHandlerContext ctx) {
            if (ctx.isRemoved()) {
                return;
            }
            UpgradeEvent event = held;
            held = null;
            cancelTimer();
            ctx.pipeline().remove(this);
            if (event != null) {
                ctx.fireUserEventTriggered(event);
            }
        }

        /** No preface in time: HTTP/2 cannot answer a client that has not opened it (the frame codec refuses). */
        private void giveUp(ChannelHandlerContext ctx) {
            LOG.log(Level.FINE, () -> ctx.channel() + ": no HTTP/2 preface within " + patience.toMillis()
                    + " ms of the 101 (request_header_timeout): closing");
            timer = null;
            drop();
            ctx.close();
        }

        private void drop() {
            cancelTimer();
            if (held != null) {
                ReferenceCountUtil.release(held);
                held = null;
            }
        }

        private void cancelTimer() {
            if (timer != null) {
                timer.cancel(false);
                timer = null;
            }
        }
    }
}
