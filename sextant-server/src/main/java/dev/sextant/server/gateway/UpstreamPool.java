package dev.sextant.server.gateway;

import dev.sextant.server.internal.Transport;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.util.concurrent.FastThreadLocal;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * Keep-alive connections to engines, one pool per event loop: a downstream channel takes its upstream connection
 * from its own loop's pool, so both sides of a proxied request run on one thread and the pool needs no lock.
 */
final class UpstreamPool {
    /** Idle connections kept per engine endpoint per event loop. */
    static final int MAX_IDLE_PER_ENDPOINT = 1024;

    private final Duration connectTimeout;
    private final io.netty.handler.ssl.SslContext tls;
    private final FastThreadLocal<Map<String, ArrayDeque<Channel>>> idle = new FastThreadLocal<>() {
        @Override
        protected Map<String, ArrayDeque<Channel>> initialValue() {
            return new HashMap<>();
        }
    };
    private final Map<String, InetSocketAddress> addresses = new java.util.concurrent.ConcurrentHashMap<>();

    /** {@code tls}: the client context for {@code https} endpoints (it verifies the engine's certificate and host). */
    UpstreamPool(Duration connectTimeout, io.netty.handler.ssl.SslContext tls) {
        this.connectTimeout = connectTimeout;
        this.tls = tls;
    }

    /** An idle open connection to {@code endpoint} on {@code loop}'s pool, or null. Call on {@code loop}. */
    Channel pollIdle(String endpoint) {
        return pollIdle(endpoint, Long.MAX_VALUE);
    }

    /**
     * An open connection to {@code endpoint} on {@code loop}'s pool that has been idle for less than
     * {@code maxIdleNanos}, or null; the connections idle for longer are closed. An engine closes a connection it kept
     * open for its own keep-alive time, and a request sent as it does is lost in the close: the engine may or may not
     * have read it, so it cannot be sent again. Call on {@code loop}.
     */
    Channel pollIdle(String endpoint, long maxIdleNanos) {
        ArrayDeque<Channel> q = idle.get().get(endpoint);
        if (q == null) {
            return null;
        }
        long now = System.nanoTime();
        for (Channel c; (c = q.pollLast()) != null; ) {
            if (!c.isActive()) {
                continue;
            }
            UpstreamHandler h = c.pipeline().get(UpstreamHandler.class);
            if (h == null || now - h.idleSince < maxIdleNanos) {
                return c;
            }
            // the most recently used is too old, and the older ones before it are older still
            c.close();
            for (Channel old; (old = q.pollLast()) != null; ) {
                old.close();
            }
            return null;
        }
        return null;
    }

    /** Opens a new connection to {@code endpoint} on {@code loop}; the channel's handler forwards to an exchange. */
    ChannelFuture connect(EventLoop loop, String endpoint) {
        return connect(loop, endpoint, new UpstreamHandler(), connectTimeout);
    }

    /**
     * Opens a new connection to {@code endpoint} on {@code loop} as every engine connection is made (TLS for
     * {@code https}, with the engine's certificate and host checked; HTTP/1.1), with {@code last} as its last handler
     * and {@code timeout} to connect: what the round-trip probes use.
     *
     * @throws IllegalArgumentException when {@code endpoint} is not an http(s) URL with a host
     */
    ChannelFuture connect(EventLoop loop, String endpoint, ChannelHandler last, Duration timeout) {
        InetSocketAddress address = addresses.computeIfAbsent(endpoint, UpstreamPool::address);
        boolean https = endpoint.regionMatches(true, 0, "https:", 0, 6);
        Bootstrap b = new Bootstrap()
                .group(loop)
                .channel(Transport.current().socketChannel())
                .option(ChannelOption.AUTO_READ, false)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, timeout.toMillis()))
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        if (https) {
                            // the engine's certificate must chain to a trusted CA and name the endpoint's host
                            ch.pipeline().addLast(tls.newHandler(ch.alloc(), address.getHostString(), address.getPort()));
                        }
                        ch.pipeline().addLast(new HttpClientCodec(), last);
                    }
                });
        return b.connect(address);
    }

    /**
     * Returns a connection whose response ended cleanly; closes it when the pool is full. Call on its loop.
     *
     * <p>An idle connection keeps one read pending: with auto-read off, a connection nobody reads from never
     * notices that the engine closed or reset it, and the next request would be sent into a dead socket (a failed
     * attempt, a retry token and a failure counted against a healthy engine). Reading while idle turns the
     * engine's close into {@code channelInactive} at once, and any byte an idle connection receives (a response
     * to no request) closes it ({@link UpstreamHandler}).
     */
    void release(String endpoint, Channel c) {
        if (!c.isActive()) {
            return;
        }
        ArrayDeque<Channel> q = idle.get().computeIfAbsent(endpoint, k -> new ArrayDeque<>());
        if (q.size() >= MAX_IDLE_PER_ENDPOINT) {
            c.close();
            return;
        }
        UpstreamHandler h = c.pipeline().get(UpstreamHandler.class);
        if (h != null) {
            h.idleSince = System.nanoTime();
        }
        q.addLast(c);
        c.read();
    }

    private static InetSocketAddress address(String endpoint) {
        URI u = URI.create(endpoint);
        int port = u.getPort() > 0 ? u.getPort() : ("https".equals(u.getScheme()) ? 443 : 80);
        return new InetSocketAddress(u.getHost(), port);
    }

    /** What a request needs of an endpoint, parsed once per endpoint. */
    record Target(String basePath, String authority) {
    }

    private final Map<String, Target> targets = new java.util.concurrent.ConcurrentHashMap<>();

    /** The path prefix ({@code http://h:p/base} → {@code /base}, empty for none) and host header of an endpoint. */
    Target target(String endpoint) {
        return targets.computeIfAbsent(endpoint, e -> {
            URI u = URI.create(e);
            String p = u.getRawPath();
            return new Target(p == null ? "" : p.replaceAll("/+$", ""), u.getAuthority());
        });
    }
}
