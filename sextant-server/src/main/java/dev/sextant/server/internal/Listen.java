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

    /**
     * Checks that {@code host:port} could be listened on now, by binding it and letting it go at once: for a server
     * that binds only after work of its own (a gateway's warm-up), so that a port in use is said before that work,
     * not after. A {@link ListenException} as {@link #on} would throw; port 0 (any free one) is not checked.
     */
    public static void check(String host, int port) {
        if (port == 0) {
            return;
        }
        try (java.net.ServerSocket probe = new java.net.ServerSocket()) {
            probe.setReuseAddress(true);
            probe.bind(new java.net.InetSocketAddress(host, port));
        } catch (java.io.IOException | IllegalArgumentException | SecurityException e) {
            throw new ListenException(host, port, e);
        }
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
