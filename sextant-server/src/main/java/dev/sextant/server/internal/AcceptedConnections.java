package dev.sextant.server.internal;

import io.netty.channel.Channel;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.util.Iterator;

/**
 * The open connections a listener accepted, closed together when the server closes: one accepted as the server closes
 * too. A connection the kernel queued before the listening socket closed is initialised on its event loop after the
 * server's close took the group's connections; a plain channel group misses it and it stays open, so a client waits on
 * it for an answer that never comes. Here a connection added once closing has begun is closed as it is added.
 */
public final class AcceptedConnections implements Iterable<Channel> {
    private final ChannelGroup open = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
    private volatile boolean closing;

    /** Keeps {@code ch} until it closes; closes it at once if {@link #close} has begun. Call from its initialiser. */
    public void add(Channel ch) {
        open.add(ch);
        if (closing) { // read after the add: a close that began before it either took ch from the group or is seen here
            ch.close();
        }
    }

    /** Closes every connection, and any added from now on; returns once those open now are closed. */
    public void close() {
        closing = true;
        open.close().awaitUninterruptibly();
    }

    /** The connections open now. */
    @Override
    public Iterator<Channel> iterator() {
        return open.iterator();
    }
}
