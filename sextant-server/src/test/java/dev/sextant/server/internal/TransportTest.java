package dev.sextant.server.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SelectStrategy;
import io.netty.channel.epoll.Epoll;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

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

    /** {@code busy_poll} on either transport: loops that never sleep, and still run what other threads and timers give. */
    @ParameterizedTest
    @EnumSource(Transport.class)
    void aBusyPollingLoop_runsHandedOverTasksAndTimers(Transport transport) throws Exception {
        EventLoopGroup group = transport.group(1, true);
        try {
            EventLoop loop = group.next();
            // tasks from another thread, each after the loop has had nothing to do for a while
            for (int i = 0; i < 3; i++) {
                Thread.sleep(100);
                assertThat(loop.submit(() -> true).get(10, TimeUnit.SECONDS)).as("task %d ran", i).isTrue();
            }
            // a timer, with no socket event to wake the loop
            CountDownLatch fired = new CountDownLatch(1);
            loop.execute(() -> loop.schedule(fired::countDown, 100, TimeUnit.MILLISECONDS));
            assertThat(fired.await(10, TimeUnit.SECONDS)).as("the timer fired").isTrue();
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    /**
     * What keeps a busy-polling loop's core (its CPU time depends on the machine, so a test asserts the cause instead):
     * with nothing to do, or with tasks waiting, and whatever the sockets' ready count, it never chooses to block.
     */
    @ParameterizedTest
    @EnumSource(Transport.class)
    void aBusyPollingLoop_neverChoosesToBlock(Transport transport) throws Exception {
        SelectStrategy strategy = transport.busyPolling().newSelectStrategy();
        for (boolean hasTasks : new boolean[] {false, true}) {
            for (int ready : new int[] {0, 3}) {
                int choice = strategy.calculateStrategy(() -> ready, hasTasks);
                assertThat(choice).as("tasks waiting: %s, sockets ready: %d", hasTasks, ready)
                        .isNotEqualTo(SelectStrategy.SELECT)
                        .isEqualTo(transport == Transport.EPOLL && !hasTasks ? SelectStrategy.BUSY_WAIT : ready);
            }
        }
    }
}
