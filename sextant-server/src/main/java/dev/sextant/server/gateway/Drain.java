package dev.sextant.server.gateway;

import dev.sextant.server.internal.Http;
import java.time.Duration;

/**
 * How a gateway stops ({@link Gateway#close()}, docs/servers.md, "Stopping"), in two steps. First the drain window:
 * {@code /readyz} fails at once ({@code draining}) so that the load balancer in front stops sending it new
 * connections, while the gateway goes on accepting and serving whatever still comes (a load balancer learns of a
 * failed readiness only at its next probe). Then it stops accepting and waits for the requests and streams in flight
 * to finish, up to the drain timeout.
 *
 * @param window  how long the gateway keeps accepting and serving, not ready, once asked to stop; ≥ 0, zero: it
 *                stops accepting at once (an embedded gateway, with no load balancer to tell)
 * @param timeout how long it then waits for in-flight requests (a stream to its last byte); &gt; 0. Those still
 *                running after it are cut
 */
public record Drain(Duration window, Duration timeout) {
    /** The drain window of a gateway run from {@code gateway.yaml}, 5 s: a few of a load balancer's probes. */
    public static final Duration DEFAULT_WINDOW = Duration.ofSeconds(5);
    /** The default drain timeout, 30 s. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);

    public Drain {
        if (window == null || window.isNegative()) {
            throw new IllegalArgumentException("drain_window: " + (window == null ? "missing" : window.toMillis() + "ms")
                    + " (expected: >= 0, 0s to stop accepting at once)");
        }
        Http.positive("drain_timeout", timeout);
    }

    /** No window, the default timeout: what an embedded gateway does ({@link GatewayConfig#defaults}). */
    public static Drain immediate() {
        return new Drain(Duration.ZERO, DEFAULT_TIMEOUT);
    }
}
