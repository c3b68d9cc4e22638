package dev.sextant.server.internal;

import io.netty.bootstrap.AbstractBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;

/**
 * Opens a server's listening socket. A failure (the port in use, an address not of this host, a port below 1024
 * without the right) is a {@link ListenException} naming the address, not the socket layer's exception: Netty
 * rethrows that one unchecked from {@code sync()}, past the callers' clean-up.
 */
public final class Listen {
    private Listen() {
    }

    /** Binds {@code bootstrap} to {@code host:port} and returns the listening channel. */
    public static Channel on(AbstractBootstrap<?, ?> bootstrap, String host, int port) throws InterruptedException {
        ChannelFuture bound = bootstrap.bind(host, port).await();
        if (!bound.isSuccess()) {
            throw new ListenException(host, port, bound.cause());
        }
        return bound.channel();
    }
}
