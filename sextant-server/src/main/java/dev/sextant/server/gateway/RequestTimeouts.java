package dev.sextant.server.gateway;

import dev.sextant.server.internal.Http;
import java.time.Duration;

/**
 * How long a gateway waits for an engine's progress on one request (docs/request-path.md §5): the gateway's own, or
 * those of the request's class ({@link GatewayConfig#classTimeouts()}). A non-streaming answer shows no progress
 * before it is whole, so only {@code total} bounds it.
 *
 * @param firstToken a streaming request: from its request written to the engine to the engine's first event, &gt; 0
 * @param idle       between two parts of the request taken by the engine; between two chunks of an answer once it
 *                   has begun, &gt; 0
 * @param total      the whole request, every attempt, from when the gateway routed it, &gt; 0
 */
public record RequestTimeouts(Duration firstToken, Duration idle, Duration total) {
    public RequestTimeouts {
        Http.positive("first_token_timeout", firstToken);
        Http.positive("idle_timeout", idle);
        Http.positive("total_timeout", total);
    }
}
