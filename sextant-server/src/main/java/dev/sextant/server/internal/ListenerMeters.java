package dev.sextant.server.internal;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * The meters of a listener's global limits, named alike on every server: {@code <prefix>_connections},
 * {@code <prefix>_refused_connections_total}, {@code <prefix>_buffered_body_bytes},
 * {@code <prefix>_refused_bodies_total}.
 */
public final class ListenerMeters {
    private ListenerMeters() {
    }

    /**
     * Registers the meters of {@code cap} and {@code budget} under {@code prefix} ({@code sextant.control},
     * {@code sextant.gateway}).
     */
    public static void bind(MeterRegistry registry, String prefix, ConnectionCap cap, HeadCheck.Budget budget) {
        Gauge.builder(prefix + ".connections", cap, ConnectionCap::open)
                .description("client connections open (at most max_connections)").register(registry);
        FunctionCounter.builder(prefix + ".refused.connections", cap, ConnectionCap::refused)
                .description("connections closed as soon as accepted: max_connections were open").register(registry);
        Gauge.builder(prefix + ".buffered.body.bytes", budget, HeadCheck.Budget::used)
                .description("request body bytes held while they arrive (at most max_buffered_body_bytes)")
                .register(registry);
        FunctionCounter.builder(prefix + ".refused.bodies", budget, HeadCheck.Budget::refusals)
                .description("requests answered 503 before their body was read: max_buffered_body_bytes were held")
                .register(registry);
    }
}
