package dev.sextant.server.gateway;

import dev.sextant.server.internal.ClientLimits;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http2.Http2Connection;
import io.netty.handler.codec.http2.Http2ConnectionAdapter;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2FrameStreamException;
import io.netty.handler.codec.http2.Http2Stream;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * What applies to an HTTP/2 client connection as a whole rather than to its streams (each stream has its own
 * {@link RequestGuard}, body limit and {@link FrontHandler}):
 *
 * <ul>
 *   <li>Reading: the connection reads on; each stream's flow-control window bounds what the client may send on it,
 *   and {@code max_concurrent_streams} how many streams it may have open.</li>
 *   <li>Idle: a connection with no open stream for {@code request_header_timeout} is closed with GOAWAY, as an
 *   idle keep-alive HTTP/1.1 connection is closed.</li>
 *   <li>Drain: the gateway sends GOAWAY when it shuts down ({@link Gateway#close()}); streams already open finish.</li>
 * </ul>
 *
 * <p>Placed right after the frame codec; when added it removes the HTTP/1.1 handlers of a connection that turned to
 * HTTP/2 by prior knowledge or {@code Upgrade: h2c}. Runs on the connection's event loop.
 */
final class H2Connection extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = Logger.getLogger(H2Connection.class.getName());
    private final Gateway gw;
    private final long idleNanos;
    private ChannelHandlerContext ctx;
    private Http2Connection connection;
    private long idleSince;
    private ScheduledFuture<?> timer;
    private boolean counted;

    H2Connection(Gateway gw, ClientLimits limits) {
        this.gw = gw;
        this.idleNanos = limits.requestHeaderTimeout().toNanos();
    }

    @Override
    public void handlerAdded(ChannelHandlerContext c) {
        this.ctx = c;
        ClientPipeline.removeHttp1(c.pipeline());
        connection = c.pipeline().get(Http2FrameCodec.class).connection();
        connection.addListener(new Http2ConnectionAdapter() {
            @Override
            public void onStreamClosed(Http2Stream stream) {
                if (connection.numActiveStreams() == 0) {
                    idleSince = System.nanoTime();
                    arm(idleNanos);
                }
            }
        });
        idleSince = System.nanoTime();
        arm(idleNanos);
        counted = true;
        gw.http2ConnectionOpened();
        c.channel().config().setAutoRead(true);
    }

    private void arm(long delayNanos) {
        if (timer == null && ctx.channel().isActive()) {
            timer = ctx.executor().schedule(this::onTimer, delayNanos, TimeUnit.NANOSECONDS);
        }
    }

    private void onTimer() {
        timer = null;
        if (!ctx.channel().isActive() || connection.numActiveStreams() > 0) {
            return; // re-armed when the last open stream closes
        }
        long idle = System.nanoTime() - idleSince;
        if (idle >= idleNanos) {
            ctx.close(); // the frame codec sends GOAWAY first
        } else {
            arm(idleNanos - idle);
        }
    }

    /**
     * A stream's error goes on to its stream channel; the frame codec has already answered a protocol error (with
     * RST_STREAM or GOAWAY), so it is only logged; anything else (a reset connection) closes the connection.
     */
    @Override
    public void exceptionCaught(ChannelHandlerContext c, Throwable cause) {
        if (cause instanceof Http2FrameStreamException) {
            c.fireExceptionCaught(cause);
            return;
        }
        LOG.log(Level.FINE, "HTTP/2 client connection error", cause);
        if (!(cause instanceof Http2Exception)) {
            c.close();
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext c) {
        stop();
        c.fireChannelInactive();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext c) {
        stop();
    }

    private void stop() {
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
        if (counted) {
            counted = false;
            gw.http2ConnectionClosed();
        }
    }
}
