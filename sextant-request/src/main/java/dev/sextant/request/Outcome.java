package dev.sextant.request;

/**
 * How an attempt on an engine ended, as the gateway saw it. It decides two things: whether the
 * attempt counts against the engine's health (outlier ejection) and whether the data plane may give it
 * another attempt. Whether to ask for one is the caller's to decide: a gateway asks only for an attempt
 * whose engine cannot have generated any of the request (docs/request-path.md §5), so that no request is
 * generated twice.
 */
public enum Outcome {
    /** A complete response. Resets the engine's consecutive failures (unless its TTFT was an outlier). */
    SUCCESS(false, false),
    /** The engine refused the request as invalid (4xx other than 429): the client's fault, not retried. */
    CLIENT_ERROR(false, false),
    /** The client went away. Neither a failure nor retried. */
    CANCELLED(false, false),
    /** No connection could be made. A failure; retryable on the next engine without a retry token (a requeue). */
    CONNECT_ERROR(true, true),
    /**
     * The engine failed the request: a 5xx other than "too busy", a connection closed or reset, an answer that is
     * not HTTP. A failure; retryable.
     */
    SERVER_ERROR(true, true),
    /** The engine made no progress within one of the gateway's timeouts. A failure; retryable. */
    TIMEOUT(true, true),
    /**
     * The connection closed before the request was fully written to it, on a connection that had already carried
     * another request (an engine closing an idle keep-alive connection as it is reused): the engine cannot have
     * started it, and is not to blame. Not a failure; retryable, on the same engine first.
     */
    NOT_SENT(false, true),
    /** This engine alone is busy (429 or 503 without a system-wide marker): retried, not a failure. */
    ENGINE_BUSY(false, true),
    /**
     * The response says the whole system is overloaded (Sextant's own shed answer, or an
     * {@code x-sextant-overloaded} marker): never retried, since a retry would only add load.
     */
    SYSTEM_OVERLOADED(false, false);

    private final boolean failure;
    private final boolean retryable;

    Outcome(boolean failure, boolean retryable) {
        this.failure = failure;
        this.retryable = retryable;
    }

    /** True when the outcome counts toward the engine's consecutive failures. */
    public boolean failure() {
        return failure;
    }

    /** True when another attempt may be made (budget and attempts permitting). */
    public boolean retryable() {
        return retryable;
    }

    /** This outcome as a decision's reason spells it: {@code CONNECT_ERROR} → {@code connect-error}. */
    public String word() {
        return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }
}
