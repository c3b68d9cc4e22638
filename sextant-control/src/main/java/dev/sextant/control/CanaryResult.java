package dev.sextant.control;

/**
 * How a {@link Canary} went.
 *
 * @param engine  the engine's id
 * @param atNanos when it ended, on the loop's ticker
 * @param ok      true when a complete answer came back
 * @param ttftMs  engine time to first token, ms (network round trip taken off when known); NaN when not ok
 * @param tbtMs   mean time between the following tokens, ms; NaN when fewer than two tokens came
 * @param failure why it failed, or null when ok
 */
public record CanaryResult(String engine, long atNanos, boolean ok, double ttftMs, double tbtMs, String failure) {
    public CanaryResult {
        if (engine == null || engine.isEmpty()) {
            throw new IllegalArgumentException("engine: '" + engine + "' (expected: an engine id)");
        }
        if (ok == (failure != null)) {
            throw new IllegalArgumentException("failure: " + failure + " (expected: a reason exactly when not ok)");
        }
    }

    /** A canary that came back whole. */
    public static CanaryResult ok(String engine, long atNanos, double ttftMs, double tbtMs) {
        return new CanaryResult(engine, atNanos, true, ttftMs, tbtMs, null);
    }

    /** A canary that failed. */
    public static CanaryResult failed(String engine, long atNanos, String why) {
        return new CanaryResult(engine, atNanos, false, Double.NaN, Double.NaN, why == null ? "failed" : why);
    }
}
