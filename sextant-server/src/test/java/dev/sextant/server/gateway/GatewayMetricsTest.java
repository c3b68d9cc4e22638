package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.internal.Transport;
import io.micrometer.core.instrument.FunctionCounter;
import io.netty.channel.EventLoopGroup;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class GatewayMetricsTest {

    @Test
    void eventLoopCpu_countsEachLoopsOwnThread() {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        assertThat(mx.isThreadCpuTimeSupported() && mx.isThreadCpuTimeEnabled()).as("the JVM reads threads' CPU time")
                .isTrue();
        EventLoopGroup group = Transport.current().group(2);
        try {
            GatewayMetrics metrics = new GatewayMetrics(() -> null, () -> 0, () -> 0, () -> 0, () -> 0);
            metrics.eventLoops(group);
            var loops = new java.util.ArrayList<io.netty.util.concurrent.EventExecutor>();
            group.forEach(loops::add);
            // a quarter of a second of CPU on the second loop only, counted in CPU time, not wall time
            loops.get(1).submit(() -> {
                long until = mx.getCurrentThreadCpuTime() + TimeUnit.MILLISECONDS.toNanos(250);
                long spins = 0;
                while (mx.getCurrentThreadCpuTime() < until) {
                    spins++;
                }
                return spins;
            }).syncUninterruptibly();

            assertThat(metrics.registry.find("sextant.gateway.event.loop.cpu").functionCounters()).hasSize(2);
            double busy = loopCpu(metrics, "1");
            double idle = loopCpu(metrics, "0");
            assertThat(busy).as("the loop that spun").isGreaterThanOrEqualTo(0.25);
            assertThat(idle).as("the loop that ran one small task").isGreaterThanOrEqualTo(0).isLessThan(0.1);
            assertThat(loopCpu(metrics, "1")).as("a counter never goes back").isGreaterThanOrEqualTo(busy);
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    private static double loopCpu(GatewayMetrics metrics, String loop) {
        FunctionCounter c = metrics.registry.find("sextant.gateway.event.loop.cpu").tag("loop", loop).functionCounter();
        assertThat(c).as("loop " + loop).isNotNull();
        return c.count();
    }
}
