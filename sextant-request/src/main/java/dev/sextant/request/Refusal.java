package dev.sextant.request;

/**
 * Why the data plane did not route a request (or a retry), with the HTTP status and the OpenAI-style
 * error code the gateway answers with.
 */
public enum Refusal {
    /** No class of this gateway cluster serves the requested model. */
    UNKNOWN_MODEL(404, "model_not_found"),
    /**
     * The request names regions, and no class of its model is restricted to them: the fleet never serves this
     * model within those regions, so it is the request that cannot be met (like an unknown model), not an outage.
     */
    RESIDENCY_NOT_SERVED(400, "residency_not_served"),
    /** The class has no engine it may use at this gateway cluster: the fleet's configuration, not the request. */
    NO_ALLOWED_ENGINE(503, "no_allowed_engine"),
    /**
     * None of the engines the class may use is in service (the snapshot gives every one of them no capacity: down,
     * failing, or drained): an outage, not an overload, so not a 429. Carries a retry-after hint.
     */
    NO_ENGINE_IN_SERVICE(503, "engines_unavailable"),
    /** Admission refused it: the policy sheds this fraction of the class. Carries a retry-after hint. */
    SHED(429, "overloaded"),
    /** Every candidate engine is at its concurrency limit, the final guard. Carries a retry-after hint. */
    ENGINE_LIMIT(429, "overloaded"),
    /** The failed attempt's outcome may not be retried (e.g. the system said it is overloaded). */
    NOT_RETRYABLE(502, "upstream_error"),
    /** The request already made the maximum number of attempts. */
    ATTEMPTS_EXHAUSTED(502, "upstream_error"),
    /** The gateway's retry budget has no token left. */
    RETRY_BUDGET_EXHAUSTED(503, "upstream_error"),
    /** No allowed engine is left to retry on (all tried, ejected or at their limit). */
    NO_ENGINE_LEFT(503, "upstream_error");

    private final int status;
    private final String code;

    Refusal(int status, String code) {
        this.status = status;
        this.code = code;
    }

    /** The HTTP status to answer with. */
    public int status() {
        return status;
    }

    /** The {@code error.code} of the OpenAI-style error body. */
    public String code() {
        return code;
    }

    /** This refusal as a decision's reason spells it: {@code ENGINE_LIMIT} → {@code engine-limit}. */
    public String word() {
        return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }
}
