package dev.sextant.server.engine;

/**
 * One generation request inside the batch model. Its fields after construction belong to the scheduler thread.
 */
final class Sequence {
    /** Where a sequence's tokens go; called on the scheduler thread, implementations hop to their own. */
    interface Sink {
        /** False while the client cannot take more output (the channel is not writable): decoding pauses. */
        boolean writable();

        /** Output token {@code index} (0-based) was produced. */
        void token(Sequence sequence, int index);

        /** The sequence's last token was produced; {@code reason} is {@code "stop"} or {@code "length"}. */
        void finished(Sequence sequence, String reason);

        /** The crash fault cut the sequence off after {@link #generated()} tokens. */
        void crashed(Sequence sequence);
    }

    final String conversationKey;
    final int promptTokens;
    final int maxTokens;
    final boolean maxTokensGiven;
    final int crashAfterTokens;
    final Sink sink;
    final long arrivalNanos;
    /** The request's {@code priority}: with priority scheduling, lower is admitted first. */
    final int priority;
    /** Which of its request's choices this sequence generates: 0 unless the request asked for several. */
    final int choice;

    int cachedTokens;
    int generated;
    double queuedMs;
    double prefillMs;
    double ttftMs;
    double decodeMs;
    boolean cancelled;
    boolean done;

    Sequence(String conversationKey, int promptTokens, int maxTokens, boolean maxTokensGiven, int crashAfterTokens,
             Sink sink, long arrivalNanos, int priority, int choice) {
        this.conversationKey = conversationKey;
        this.promptTokens = promptTokens;
        this.maxTokens = maxTokens;
        this.maxTokensGiven = maxTokensGiven;
        this.crashAfterTokens = crashAfterTokens;
        this.sink = sink;
        this.arrivalNanos = arrivalNanos;
        this.priority = priority;
        this.choice = choice;
    }

    int generated() {
        return generated;
    }

    /** The engine-side timing of this request, as reported in responses ({@code engine_timing}). */
    Timing timing() {
        return new Timing(queuedMs, prefillMs, ttftMs, decodeMs, cachedTokens);
    }

    /**
     * Engine-side timing of one request, from the latency model.
     *
     * @param queuedMs     time from arrival to admission into the batch, ms
     * @param prefillMs    prefill time of its uncached prompt tokens, ms
     * @param ttftMs       time from arrival to first token, ms
     * @param decodeMs     time from first to last token, ms
     * @param cachedTokens prompt tokens served from the prefix cache
     */
    record Timing(double queuedMs, double prefillMs, double ttftMs, double decodeMs, int cachedTokens) {
    }
}
