package dev.sextant.server.internal;

import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SelectStrategy;
import io.netty.channel.SelectStrategyFactory;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.nio.channels.spi.SelectorProvider;

/**
 * The socket transport of the gateway's event loops: Netty's native epoll where it loads (Linux x86_64), else
 * Java NIO. {@code -Dsextant.transport=nio} forces NIO. Server and client channels of one gateway use the same
 * transport, because an upstream connection runs on the event loop of the client connection it serves.
 */
public enum Transport {
    EPOLL, NIO;

    /** The transport this process uses. */
    public static Transport current() {
        return Holder.CURRENT;
    }

    private static final class Holder {
        static final Transport CURRENT = "nio".equalsIgnoreCase(System.getProperty("sextant.transport", ""))
                || !Epoll.isAvailable() ? NIO : EPOLL;
    }

    /** An event loop group of {@code threads} loops that sleep while they have nothing to do. */
    public EventLoopGroup group(int threads) {
        return new MultiThreadIoEventLoopGroup(threads, this == EPOLL ? EpollIoHandler.newFactory()
                : NioIoHandler.newFactory());
    }

    /** An event loop group of {@code threads} loops that sleep while idle, on daemon threads named {@code name-N}. */
    public EventLoopGroup group(int threads, String name) {
        return new MultiThreadIoEventLoopGroup(threads, new io.netty.util.concurrent.DefaultThreadFactory(name, true),
                this == EPOLL ? EpollIoHandler.newFactory() : NioIoHandler.newFactory());
    }

    /**
     * An event loop group of {@code threads} loops; with {@code busyPoll}, loops that never sleep (HAProxy's
     * {@code busy-polling}). On epoll a loop with nothing to do spins in Netty's {@link SelectStrategy#BUSY_WAIT}
     * ({@code epoll_wait} with a zero timeout, in native code) instead of blocking in {@code epoll_wait}; NIO has no
     * such mode, so there a loop asks {@code selectNow} again and again. Tasks handed over by other threads and timers
     * (a request's timeouts) still run, as on a sleeping loop.
     */
    public EventLoopGroup group(int threads, boolean busyPoll) {
        if (!busyPoll) {
            return group(threads);
        }
        SelectStrategyFactory spin = busyPolling();
        return new MultiThreadIoEventLoopGroup(threads, this == EPOLL ? EpollIoHandler.newFactory(0, spin)
                : NioIoHandler.newFactory(SelectorProvider.provider(), spin));
    }

    /**
     * How a busy-polling loop picks its next move: never {@link SelectStrategy#SELECT} (block until a socket has
     * something), so it never sleeps. On epoll {@link SelectStrategy#BUSY_WAIT} when no task waits, else the sockets'
     * ready count; on NIO always the ready count ({@code selectNow}).
     */
    SelectStrategyFactory busyPolling() {
        return this == EPOLL
                ? () -> (readyNow, hasTasks) -> hasTasks ? readyNow.get() : SelectStrategy.BUSY_WAIT
                : () -> (readyNow, hasTasks) -> readyNow.get();
    }

    /** The listening socket's channel class. */
    public Class<? extends ServerChannel> serverChannel() {
        return this == EPOLL ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
    }

    /** A client socket's channel class. */
    public Class<? extends Channel> socketChannel() {
        return this == EPOLL ? EpollSocketChannel.class : NioSocketChannel.class;
    }
}
