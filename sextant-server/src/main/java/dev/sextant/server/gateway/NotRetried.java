package dev.sextant.server.gateway;

import dev.sextant.request.Refusal;
import java.util.Locale;

/**
 * Why a failed attempt was the request's last: the {@code reason} of {@code sextant_gateway_not_retried_total}
 * (docs/request-path.md §5). The first four are the gateway's own rule, that no request is generated twice; the others
 * are the data plane's refusals of a retry.
 */
enum NotRetried {
    /** A non-streaming request failed after it was written to its engine, which may have generated it. */
    REQUEST_WRITTEN,
    /** The engine answered a 5xx other than 503 to a non-streaming request: it took it, and may have generated it. */
    ENGINE_ERROR,
    /** The engine made no progress within a timeout after the request was written: it may still be generating it. */
    TIMEOUT,
    /** The answer had begun to reach the client. */
    ANSWER_STARTED,
    /** The engine said the whole system is overloaded ({@code x-sextant-overloaded}). */
    OVERLOADED,
    /** The request had used every attempt. */
    ATTEMPTS,
    /** The class's retry budget was spent. */
    RETRY_BUDGET,
    /** No allowed engine was left to try. */
    NO_ENGINE_LEFT;

    /** The metric's label: the name in lower case. */
    String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Why the data plane refused a retry, as a reason. */
    static NotRetried of(Refusal refusal) {
        return switch (refusal) {
            case ATTEMPTS_EXHAUSTED -> ATTEMPTS;
            case RETRY_BUDGET_EXHAUSTED -> RETRY_BUDGET;
            case NOT_RETRYABLE -> OVERLOADED; // the only outcome given to retry() that it never retries
            default -> NO_ENGINE_LEFT; // NO_ENGINE_LEFT, or a class a new snapshot gives no engine
        };
    }
}
