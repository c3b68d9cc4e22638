package dev.sextant.request;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * The gateway-local, mutable state of one engine: in-flight count, consecutive failures and
 * ejection. Outlives snapshots (keyed by engine id), so a swap does not forget what is in flight.
 * Lock-free: counters are atomics, the ejection is one volatile reference.
 */
final class EngineCell {
    final String id;
    final AtomicInteger inFlight = new AtomicInteger();
    final AtomicInteger failures = new AtomicInteger();
    /**
     * Whether the current run of consecutive failures has an error, refused connection or timeout in it, not only
     * slow answers; cleared with {@link #failures}. An ejection is for slowness only when this is false.
     */
    volatile boolean failedHard;
    /** The current or last ejection; null if never ejected. */
    volatile Ejection ejection;
    // Written only by the thread holding the data plane's ejection flag.
    int multiplier;
    /** Whether the current or last ejection was for slowness only (TTFT outliers), which a failing engine displaces. */
    boolean slowEjection;
    long lastEjectionEnd;
    int ejections;
    /**
     * The engine's recent time to first token, ms: an exponentially weighted mean of its successful answers (NaN
     * before the first). Written by whichever request thread finishes an answer, without a lock: a lost update
     * only delays the mean by one answer.
     */
    volatile double recentTtftMs = Double.NaN;

    EngineCell(String id) {
        this.id = id;
    }

    /** Ends a run of consecutive failures. */
    void resetFailures() {
        failures.set(0);
        failedHard = false;
    }

    /** Folds one successful answer's time to first token into {@link #recentTtftMs}. */
    void observeTtft(double ms) {
        double m = recentTtftMs;
        recentTtftMs = Double.isNaN(m) ? ms : m + 0.1 * (ms - m);
    }

    boolean ejected(long now) {
        Ejection e = ejection;
        return e != null && e.untilNanos() - now > 0;
    }

    /** Counts one more request in flight unless {@code limit} are already; false when at the limit. */
    boolean tryAcquire(int limit) {
        for (;;) {
            int v = inFlight.get();
            if (v >= limit) {
                return false;
            }
            if (inFlight.compareAndSet(v, v + 1)) {
                return true;
            }
        }
    }

    @Override
    public String toString() {
        return id;
    }
}
