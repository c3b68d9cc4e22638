package dev.sextant.server.engine;

/**
 * Faults the engine emulator injects, to exercise a router's protections. Settable at start
 * ({@link EngineConfig#faults()}) and at run time ({@code POST /admin/faults} or
 * {@link EngineEmulator#setFaults(Faults)}); a change applies to requests that arrive after it.
 *
 * <p>Every random choice is drawn from the emulator's seeded generator in request arrival order, so the same
 * seed and the same request sequence give the same faults.
 *
 * @param errorRate        probability in [0, 1] that a generation or embedding request is answered at once
 *                         with HTTP 500 in OpenAI's error shape
 * @param slowdown         factor ≥ 1 (or any &gt; 0) multiplying prefill and decode step times; 1 = normal speed
 * @param hang             when true, requests are accepted and never answered (the connection stays open)
 * @param crashAfterTokens when ≥ 0, the connection is closed after this many output tokens of a request, in the
 *                         middle of a stream (0: before the first token); negative = off
 * @param corruptStream    what happens to a streaming answer after its first token: {@link Corruption#NONE}, or
 *                         it is cut short or broken ({@link Corruption}); non-streaming answers are untouched
 * @param stall            when true, the engine core stands still: requests are accepted and queued, no step runs (the
 *                         batch keeps its sequences, no token is generated), and {@code /metrics} answers with gauges
 *                         and counters that do not move, as a vLLM whose engine core hangs in a collective; lifting it
 *                         lets the batch go on where it stopped
 */
public record Faults(double errorRate, double slowdown, boolean hang, int crashAfterTokens, Corruption corruptStream,
                     boolean stall) {
    /** No fault: every request is served normally. */
    public static final Faults NONE = new Faults(0, 1, false, -1);

    /** How a streaming answer goes wrong after its first token chunk. */
    public enum Corruption {
        /** Streams are served normally. */
        NONE,
        /**
         * The chunked body ends cleanly right after the first token chunk: no {@code finish_reason}, no
         * {@code data: [DONE]}. Well framed as HTTP, incomplete as an OpenAI stream.
         */
        TRUNCATE,
        /**
         * After the first token chunk the engine writes bytes that are not HTTP chunked encoding (a chunk-size line
         * that is not hexadecimal), then goes on generating as if nothing happened.
         */
        MALFORMED;

        /** Its name in JSON and on the command line: {@code none}, {@code truncate}, {@code malformed}. */
        public String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }

        /** The value named {@code label} ({@code none}, {@code truncate} or {@code malformed}). */
        public static Corruption parse(String label) {
            for (Corruption c : values()) {
                if (c.label().equals(label)) {
                    return c;
                }
            }
            throw new IllegalArgumentException("corrupt_stream: " + label + " (expected: none, truncate or malformed)");
        }
    }

    /** Faults without stream corruption. */
    public Faults(double errorRate, double slowdown, boolean hang, int crashAfterTokens) {
        this(errorRate, slowdown, hang, crashAfterTokens, Corruption.NONE);
    }

    /** Faults without a stalled engine core. */
    public Faults(double errorRate, double slowdown, boolean hang, int crashAfterTokens, Corruption corruptStream) {
        this(errorRate, slowdown, hang, crashAfterTokens, corruptStream, false);
    }

    public Faults {
        if (!(errorRate >= 0 && errorRate <= 1)) {
            throw new IllegalArgumentException("error_rate: " + errorRate + " (expected: in [0, 1])");
        }
        if (!(slowdown > 0) || Double.isInfinite(slowdown)) {
            throw new IllegalArgumentException("slowdown: " + slowdown + " (expected: a finite number > 0)");
        }
        if (crashAfterTokens < -1) {
            throw new IllegalArgumentException("crash_after_tokens: " + crashAfterTokens
                    + " (expected: a whole number of tokens >= 0, or -1 for no crash)");
        }
        if (corruptStream == null) {
            throw new IllegalArgumentException("corrupt_stream: missing (expected: none, truncate or malformed)");
        }
    }

    /** True when requests should be cut off after {@link #crashAfterTokens()} tokens. */
    public boolean crashes() {
        return crashAfterTokens >= 0;
    }
}
