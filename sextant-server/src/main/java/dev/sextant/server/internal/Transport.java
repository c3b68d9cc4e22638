package dev.sextant.server.internal;

import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;

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

    /** An event loop group of {@code threads} loops. */
    public EventLoopGroup group(int threads) {
        return new MultiThreadIoEventLoopGroup(threads, this == EPOLL ? EpollIoHandler.newFactory()
                : NioIoHandler.newFactory());
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
