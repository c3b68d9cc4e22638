package dev.sextant.request;

/**
 * How an attempt on an engine ended, as the gateway saw it. It decides two things: whether the
 * attempt counts against the engine's health (outlier ejection) and whether it may be retried.
 */
public enum Outcome {
    /** A complete response. Resets the engine's consecutive failures (unless its TTFT was an outlier). */
    SUCCESS(false, false),
    /** The engine refused the request as invalid (4xx other than 429): the client's fault, not retried. */
    CLIENT_ERROR(false, false),
    /** The client went away. Neither a failure nor retried. */
    CANCELLED(false, false),
    /** No connection could be made. A failure; retried on the next engine. */
    CONNECT_ERROR(true, true),
    /** The engine answered 5xx before the first byte reached the client. A failure; retried. */
    SERVER_ERROR(true, true),
    /** No first byte within the gateway's timeout. A failure; retried. */
    TIMEOUT(true, true),
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
}
