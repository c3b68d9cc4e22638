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
 */
public record Faults(double errorRate, double slowdown, boolean hang, int crashAfterTokens) {
    /** No fault: every request is served normally. */
    public static final Faults NONE = new Faults(0, 1, false, -1);

    public Faults {
        if (!(errorRate >= 0 && errorRate <= 1)) {
            throw new IllegalArgumentException("error_rate: " + errorRate + " (expected: in [0, 1])");
        }
        if (!(slowdown > 0) || Double.isInfinite(slowdown)) {
            throw new IllegalArgumentException("slowdown: " + slowdown + " (expected: a finite number > 0)");
        }
    }

    /** True when requests should be cut off after {@link #crashAfterTokens()} tokens. */
    public boolean crashes() {
        return crashAfterTokens >= 0;
    }
}
