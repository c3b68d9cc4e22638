package dev.sextant.server.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.channel.epoll.Epoll;
import org.junit.jupiter.api.Test;

class TransportTest {
    @Test
    void linuxX86GatewaysRunOnNativeEpoll() {
        boolean linuxX86 = System.getProperty("os.name").toLowerCase().contains("linux")
                && System.getProperty("os.arch").matches("amd64|x86_64");
        if (linuxX86) {
            assertThat(Epoll.unavailabilityCause()).as("the native library shipped for linux-x86_64 loads").isNull();
            assertThat(Transport.current()).isEqualTo(Transport.EPOLL);
        } else {
            assertThat(Transport.current()).isEqualTo(Transport.NIO);
        }
    }

    @Test
    void channelClassesMatchTheirTransport() {
        assertThat(Transport.EPOLL.serverChannel().getSimpleName()).startsWith("Epoll");
        assertThat(Transport.EPOLL.socketChannel().getSimpleName()).startsWith("Epoll");
        assertThat(Transport.NIO.serverChannel().getSimpleName()).startsWith("Nio");
        assertThat(Transport.NIO.socketChannel().getSimpleName()).startsWith("Nio");
    }
}
