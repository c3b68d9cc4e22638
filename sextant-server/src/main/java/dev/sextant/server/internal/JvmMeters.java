package dev.sextant.server.internal;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmCompilationMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;

/**
 * The process's own meters on a server's {@code /metrics}, under the names every JVM service exports through
 * Micrometer ({@code jvm_*}, {@code process_*}, {@code system_*}): heap and collector pauses, threads, classes, the
 * JIT compiler's time (a gateway's tail is longer while it still compiles: docs/servers.md, "Warm-up"), CPU, uptime
 * and open file descriptors (one per connection: the gateway's limit on open streams).
 *
 * <p>Read when scraped, nothing on the request path. Close it with its server: the collector meters listen for
 * the JVM's collection notifications, and a process may start and stop many servers (the demo, the tests).
 */
public final class JvmMeters implements AutoCloseable {
    private final JvmGcMetrics gc = new JvmGcMetrics();

    private JvmMeters(MeterRegistry registry) {
        new ClassLoaderMetrics().bindTo(registry);
        new JvmMemoryMetrics().bindTo(registry);
        gc.bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new JvmCompilationMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        new FileDescriptorMetrics().bindTo(registry);
    }

    /** Registers the process's meters with {@code registry}. */
    public static JvmMeters bindTo(MeterRegistry registry) {
        return new JvmMeters(registry);
    }

    @Override
    public void close() {
        gc.close();
    }
}
