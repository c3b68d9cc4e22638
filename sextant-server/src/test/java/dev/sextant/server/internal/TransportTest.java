package dev.sextant.server.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.epoll.Epoll;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
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
    void aBusyPollingLoop_runsHandedOverTasksAndTimers_andKeepsItsCoreWhileIdle(Transport transport) throws Exception {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        EventLoopGroup group = transport.group(1, true);
        try {
            EventLoop loop = group.next();
            long thread = loop.submit(() -> Thread.currentThread().getId()).get(10, TimeUnit.SECONDS);
            // tasks from another thread, each after the loop has had nothing to do for a while
            for (int i = 0; i < 3; i++) {
                Thread.sleep(100);
                assertThat(loop.submit(() -> true).get(10, TimeUnit.SECONDS)).as("task %d ran", i).isTrue();
            }
            // a timer, with no socket event to wake the loop
            CountDownLatch fired = new CountDownLatch(1);
            loop.execute(() -> loop.schedule(fired::countDown, 100, TimeUnit.MILLISECONDS));
            assertThat(fired.await(10, TimeUnit.SECONDS)).as("the timer fired").isTrue();

            long before = mx.getThreadCpuTime(thread);
            Thread.sleep(500);
            double seconds = (mx.getThreadCpuTime(thread) - before) / 1e9;
            // a sleeping loop uses next to nothing in half a second without work; this one spins on whatever share of
            // a core the machine's other work leaves it
            assertThat(seconds).as("the idle loop's CPU seconds in half a second").isGreaterThan(0.1);
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }
}
