package dev.sextant.request;

import java.util.List;

/**
 * What the data plane needs to know about a request. The gateway builds it from HTTP headers and
 * body fields with {@link HttpFields#toMeta()}; a simulator builds it directly.
 *
 * @param model       the requested model id (OpenAI {@code "model"}), non-empty
 * @param residency   regions the request's data may be processed in; empty = no restriction
 * @param priority    requested priority, higher is more important; {@link #NO_PRIORITY} when absent
 * @param affinityKey 64-bit key that keeps a conversation on one engine (see {@link Keys}); requests
 *                    without one pass their request id here so they still follow the weights
 * @param prefixKey   the key of the prompt's part shared with other conversations (a system prompt: see
 *                    {@link PromptKeys}), 0 when none; a hot prefix is spread over several of its engines
 *                    (docs/design.md §4)
 * @param requestId   64-bit hash of a per-request unique id; admission sheds by it, so it must differ
 *                    between requests (uniformly distributed bits)
 * @param tenant      the tenant the request came from (found by its API key), or null when the gateway knows none;
 *                    when a class sheds, the shed falls first on tenants above their fair share (docs/request-path.md §3)
 * @param tenantWeight the tenant's weight in fair shares, &gt; 0 (1 when all tenants are equal)
 */
public record RequestMeta(String model, List<String> residency, int priority, long affinityKey, long prefixKey,
                          long requestId, String tenant, double tenantWeight) {
    /** The value of {@code priority} when the request names none. */
    public static final int NO_PRIORITY = Integer.MIN_VALUE;

    public RequestMeta {
        if (model == null || model.isEmpty()) {
            throw new IllegalArgumentException("model: " + (model == null ? "missing" : "empty")
                    + " (expected: a non-empty model id)");
        }
        residency = residency == null ? List.of() : List.copyOf(residency);
        if (!(tenantWeight > 0) || Double.isInfinite(tenantWeight)) {
            throw new IllegalArgumentException("tenantWeight: " + tenantWeight + " (expected: a finite number > 0)");
        }
    }

    /** A request of no known tenant. */
    public RequestMeta(String model, List<String> residency, int priority, long affinityKey, long prefixKey,
                       long requestId) {
        this(model, residency, priority, affinityKey, prefixKey, requestId, null, 1);
    }

    /**
     * This request as its tenant may send it: {@code scopedResidency} and {@code scopedPriority} in place of what the
     * client asked for (see {@link Narrowing}), from {@code tenantName} of weight {@code weight}.
     */
    public RequestMeta scoped(List<String> scopedResidency, int scopedPriority, String tenantName, double weight) {
        return new RequestMeta(model, scopedResidency, scopedPriority, affinityKey, prefixKey, requestId, tenantName,
                weight);
    }

    /** A request without a prefix key. */
    public RequestMeta(String model, List<String> residency, int priority, long affinityKey, long requestId) {
        this(model, residency, priority, affinityKey, 0, requestId);
    }

    /** A request for {@code model} with no residency or priority, keyed by {@code key}, with id {@code requestId}. */
    public static RequestMeta of(String model, long key, long requestId) {
        return new RequestMeta(model, List.of(), NO_PRIORITY, key, requestId);
    }
}
