package dev.sextant.server.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.Test;

class AcceptedConnectionsTest {
    @Test
    void closeClosesTheOpenConnections_andForgetsThoseClosedBefore() {
        AcceptedConnections connections = new AcceptedConnections();
        EmbeddedChannel a = new EmbeddedChannel();
        EmbeddedChannel b = new EmbeddedChannel();
        connections.add(a);
        connections.add(b);
        b.close();
        assertThat(connections).containsExactly(a);

        connections.close();
        assertThat(a.isOpen()).isFalse();
        assertThat(connections).isEmpty();
    }

    @Test
    void aConnectionAcceptedAsTheServerCloses_isClosedAsItIsAdded() {
        // the kernel had queued it: its initialiser runs on its loop after the server's close took the open ones
        AcceptedConnections connections = new AcceptedConnections();
        connections.close();
        EmbeddedChannel late = new EmbeddedChannel();
        connections.add(late);
        assertThat(late.isOpen()).as("a client must see the close, not wait on a connection nobody serves").isFalse();
        assertThat(connections).isEmpty();
    }
}
