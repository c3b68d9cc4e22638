package dev.sextant.server.internal;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.logging.Logger;

/**
 * A listener's cap on open connections ({@link ListenerLimits#maxConnections()}): a connection accepted beyond it is
 * closed at once, without reading or answering anything, so that what it costs is one accept and one close, not a
 * descriptor held. A connection that is refused is counted and logged at most once a minute. The connections already
 * open are never touched: the per-connection timeouts ({@link RequestGuard}) are what frees the places that idle or
 * slow clients hold.
 *
 * <p>Why refuse rather than stop accepting: a listener that stops accepting leaves new connections in the kernel's
 * backlog, where a health check or an authorised client waits as long as the flood lasts; a refused one fails fast and
 * is retried by its client (HAProxy's {@code maxconn} queues, Envoy's overload manager refuses; the latter is the
 * behaviour a probe expects).
 */
public final class ConnectionCap {
    private static final Logger LOG = Logger.getLogger(ConnectionCap.class.getName());

    private final String listener;
    private final int max;
    private final AtomicInteger open = new AtomicInteger();
    private final LongAdder refused = new LongAdder();
    private final AtomicLong lastLog = new AtomicLong(Long.MIN_VALUE);

    /**
     * @param listener names the listener in the log ("control plane", "engine e1")
     * @param max      connections open at once, ≥ 1
     */
    public ConnectionCap(String listener, int max) {
        if (max < 1) {
            throw new IllegalArgumentException("max_connections: " + max + " (expected: >= 1)");
        }
        this.listener = listener;
        this.max = max;
    }

    /** The handler to put first in a new connection's pipeline (one per connection). */
    public ChannelHandler handler() {
        return new ChannelInboundHandlerAdapter() {
            private boolean counted;

            @Override
            public void channelActive(ChannelHandlerContext ctx) {
                if (open.incrementAndGet() > max) {
                    open.decrementAndGet();
                    onRefused();
                    ctx.close();
                    return;
                }
                counted = true;
                ctx.fireChannelActive();
            }

            @Override
            public void channelInactive(ChannelHandlerContext ctx) {
                if (counted) {
                    counted = false;
                    open.decrementAndGet();
                    ctx.fireChannelInactive();
                }
            }
        };
    }

    private void onRefused() {
        refused.increment();
        long now = System.nanoTime();
        long last = lastLog.get();
        if ((last == Long.MIN_VALUE || now - last >= 60_000_000_000L) && lastLog.compareAndSet(last, now)) {
            LOG.warning(listener + ": " + max + " connections open (max_connections), new ones are closed at once ("
                    + refused.sum() + " so far)");
        }
    }

    /** Connections open now. */
    public int open() {
        return open.get();
    }

    /** Connections refused since start. */
    public long refused() {
        return refused.sum();
    }
}
