package dev.sextant.server.internal;

import java.time.Duration;

/**
 * What one listener allows all its clients together, beside what it allows each connection ({@link ClientLimits}):
 * how many connections may be open at once, and how many bytes of request bodies it may hold while they arrive. Both
 * bound what clients that never finish (idle connections, slow or huge bodies) can take from the ones that do: file
 * descriptors and the direct memory the event loops read into. See docs/servers.md, "Listener limits".
 *
 * @param client               per connection: head and body timeouts, head size
 * @param maxConnections       connections open at once, 1..1,000,000; one more is closed as soon as it is accepted,
 *                             without an answer, and counted
 * @param maxBufferedBodyBytes request body bytes held at once over all connections while bodies arrive, ≥ 1 MiB; a
 *                             request whose body does not fit is answered 503 with {@code Retry-After} before any of
 *                             its body is read, and its connection closed
 */
public record ListenerLimits(ClientLimits client, int maxConnections, long maxBufferedBodyBytes) {
    /** The smallest body budget: one control-plane report of the largest size. */
    public static final long MIN_BUFFERED_BODY_BYTES = 1 << 20;

    public ListenerLimits {
        if (client == null) {
            throw new IllegalArgumentException("client limits: missing (expected: head and body timeouts, head size)");
        }
        maxConnections(maxConnections);
        if (maxBufferedBodyBytes < MIN_BUFFERED_BODY_BYTES) {
            throw new IllegalArgumentException("max_buffered_body_bytes: " + maxBufferedBodyBytes + " (expected: >= "
                    + MIN_BUFFERED_BODY_BYTES + ")");
        }
    }

    /**
     * {@code v} as a connection cap, refused unless in 1..1,000,000: a setting read as a long is checked here before it
     * is narrowed, so that 4294967297 is said as written, never wrapped into range.
     */
    public static int maxConnections(long v) {
        if (v < 1 || v > 1_000_000) {
            throw new IllegalArgumentException("max_connections: " + v + " (expected: 1..1000000)");
        }
        return (int) v;
    }

    /**
     * The control plane's: 10 s for a head, 60 s for a body, 16 KiB of head (as the gateway's), 4,096 connections (a
     * gateway process holds one or two), 64 MiB of bodies (64 of the largest reports at once).
     */
    public static ListenerLimits controlPlane() {
        return new ListenerLimits(ClientLimits.defaults(), 4096, 64L << 20);
    }

    /**
     * The engine emulator's: 10 s for a head, 60 s for a body, 16 KiB of head, 8,192 connections (gateways keep pools
     * of them), 256 MiB of bodies (16 of the largest, 16 MiB, prompts).
     */
    public static ListenerLimits engine() {
        return new ListenerLimits(ClientLimits.defaults(), 8192, 256L << 20);
    }

    /** With other per-connection limits. */
    public ListenerLimits withClient(ClientLimits newClient) {
        return new ListenerLimits(newClient, maxConnections, maxBufferedBodyBytes);
    }

    /** With another connection cap. */
    public ListenerLimits withMaxConnections(int max) {
        return new ListenerLimits(client, max, maxBufferedBodyBytes);
    }

    /** With another body budget. */
    public ListenerLimits withMaxBufferedBodyBytes(long max) {
        return new ListenerLimits(client, maxConnections, max);
    }

    /** With another request-head timeout. */
    public ListenerLimits withRequestHeaderTimeout(Duration timeout) {
        return withClient(new ClientLimits(timeout, client.requestBodyTimeout(), client.maxHeaderBytes()));
    }
}
