package dev.sextant.request;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * The gateway-local, mutable state of one engine: in-flight count, consecutive failures and
 * ejection. Outlives snapshots (keyed by engine id), so a swap does not forget what is in flight.
 * Lock-free: counters are atomics, the ejection is one volatile reference.
 */
final class EngineCell {
    final String id;
    /** The engine's place in a key's rendezvous order for a spill: the same in every gateway process. */
    final long hash;
    final AtomicInteger inFlight = new AtomicInteger();
    /**
     * First tokens that reached this gateway from the engine, counted by unguarded increments: only whether it moved
     * while an attempt waited matters (a stream without a first token, docs/request-path.md §4).
     */
    volatile int firstTokens;
    /**
     * When the latest attempt that brought the engine's first bytes started (ticker nanos, from the attempt's own start,
     * so that no clock is read for it; written unguarded): this gateway reached the engine at that time. What tells an
     * engine that cannot be reached from a gateway that reaches nothing.
     */
    volatile long reachedByAttemptAt = Long.MIN_VALUE;
    /**
     * When an attempt of this gateway last failed here (ticker nanos), a failure the plan priced too; spacing moves no
     * new conversation onto an engine that failed within the base ejection time ({@link #failedWithin}).
     */
    volatile long failedAt = Long.MIN_VALUE;
    /** When the current run of consecutive failures began (ticker nanos); set by its first failure. */
    volatile long runSince;
    final AtomicInteger failures = new AtomicInteger();
    /**
     * Whether the current run of consecutive failures has an error, refused connection or timeout in it, not only
     * slow answers; cleared with {@link #failures}. An ejection is for slowness only when this is false.
     */
    volatile boolean failedHard;
    /**
     * Whether the current run of consecutive failures has a timeout in it since its last failed connection (the
     * engine took a request and never answered: hung); cleared with {@link #failures} and by a failed connection.
     */
    volatile boolean timedOut;
    /**
     * Whether the current run of consecutive failures has, since its last failed connection, one in which the engine
     * was reached (it answered, with an error or slowly, or took the request and timed out); cleared with
     * {@link #failures} and by a failed connection. A run whose latest failure is a failed connection says the engine
     * cannot be reached from here now (crashed, or the link cut), whatever it did before.
     */
    volatile boolean reached;
    /**
     * Whether the current or last ejection was past the cap of ejected engines, for an engine that could not be
     * reached: it takes no place under the cap (docs/request-path.md §4, "Local outlier ejection").
     */
    volatile boolean pastTheCap;
    /**
     * Whether the engine was last ejected because it could not be reached, and no attempt has reached it since: once
     * the ejection is over it is half open, one trial attempt at a time ({@link #trialUntil}), so that a cut link
     * costs one request a failed connection, not every request of a connect timeout's window.
     */
    volatile boolean trialOnReturn;
    /** Until when the current trial attempt holds the other requests off an engine {@link #trialOnReturn} (0: none). */
    final java.util.concurrent.atomic.AtomicLong trialUntil = new java.util.concurrent.atomic.AtomicLong();
    /** How long a trial holds the others off at most: its attempt may end without a word (a stream that runs long). */
    static final long TRIAL_NANOS = 5_000_000_000L;
    /** The current or last ejection; null if never ejected. */
    volatile Ejection ejection;
    // Written only by the thread holding the data plane's ejection flag.
    int multiplier;
    /**
     * How bad the run that got the current or last ejection was, for who displaces whom at the cap of ejected
     * engines: {@link #SLOW} (slow answers only), {@link #FAILING} (errors or refused connections: each costs a fast
     * retry) or {@link #HUNG} (timeouts: each costs the whole timeout).
     */
    int ejectedFor;
    static final int SLOW = 0;
    static final int FAILING = 1;
    static final int HUNG = 2;
    /** A run of connections that could not be made: ejected past the cap where half the allowed engines stay. */
    static final int UNREACHABLE = 3;
    long lastEjectionEnd;
    int ejections;
    /** What every answer from the engine says of its queue. */
    final QueueSignal answers = new QueueSignal();
    /**
     * On an engine that schedules by priority, the priorities this gateway sends it and what the answers of each say
     * of its queue (aligned); empty otherwise. Set from each snapshot ({@code Compiled}).
     */
    private volatile int[] levels = {};
    private volatile QueueSignal[] levelSignals = {};

    /**
     * How many of this gateway's requests the engine may hold, before a class's reserve for higher priorities
     * ({@link ClassRoute#limit}): set from each snapshot ({@code Compiled}), read by every placement.
     */
    volatile int limit = Integer.MAX_VALUE;

    /**
     * Whether the snapshot plans the engine knowing that a share of its attempts fail (a penalty below 1: a failing
     * engine the control loop keeps as capacity of last resort, docs/control-loop.md): its server errors are then
     * expected and do not count toward its ejection. Set from each snapshot ({@code Compiled}).
     */
    volatile boolean errorsExpected;

    /**
     * The expected TTFT the current snapshot gives the engine from this gateway, ms (NaN without one): a new snapshot
     * that changes it moves the floors of the engine's queue signals in proportion ({@link #planned}).
     */
    private double plannedTtftMs = Double.NaN;

    EngineCell(String id) {
        this.id = id;
        this.hash = Hashing.mix(id.hashCode() * Hashing.GOLDEN);
    }

    /**
     * Ends the current ejection at {@code now}, its failures counted afresh; returns the ejection as ended. Called
     * only by the thread holding the data plane's ejection flag.
     */
    Ejection endEjection(long now) {
        Ejection was = ejection;
        ejection = new Ejection(was.engineId(), was.reason(), was.sinceNanos(), now, was.multiplier());
        lastEjectionEnd = now;
        resetFailures();
        return ejection;
    }

    /** Ends a run of consecutive failures. */
    void resetFailures() {
        failures.set(0);
        failedHard = false;
        timedOut = false;
        reached = false;
    }

    /** Over how long {@link #offered} counts the requests whose key chose this engine, s. */
    static final double RATE_WINDOW_S = 2;
    private static final long WINDOW_NANOS = (long) (RATE_WINDOW_S * 1e9);
    /** The current window's index (high 32 bits) and its count (low 32 bits), updated by compare-and-set. */
    private final java.util.concurrent.atomic.AtomicLong window = new java.util.concurrent.atomic.AtomicLong();
    /** The count of the window before {@link #window}'s (0 when that window was not the one just before). */
    private volatile long previousCount;

    /**
     * Counts one request whose key chose this engine at {@code now} (ns) and returns the rate of such requests, req/s:
     * a sliding window of {@link #RATE_WINDOW_S}, the current window's count plus the previous one's in proportion
     * to how much of it the sliding window still covers, so that a surge shows within a couple of seconds. Lock-free
     * and allocation-free: a compare-and-set on one long.
     */
    double offered(long now) {
        long slot = Math.floorDiv(now, WINDOW_NANOS);
        for (;;) {
            long v = window.get();
            long held = v >>> 32;
            long count = v & 0xFFFF_FFFFL;
            if (held == (slot & 0xFFFF_FFFFL)) {
                if (window.compareAndSet(v, v + 1)) {
                    return rate(now, slot, count + 1);
                }
            } else if (window.compareAndSet(v, (slot & 0xFFFF_FFFFL) << 32 | 1)) {
                previousCount = held == ((slot - 1) & 0xFFFF_FFFFL) ? count : 0;
                return rate(now, slot, 1);
            }
        }
    }

    /** The rate {@link #offered} would return at {@code now} without counting a request, req/s. */
    double offeredRps(long now) {
        long slot = Math.floorDiv(now, WINDOW_NANOS);
        long v = window.get();
        long held = v >>> 32;
        if (held == (slot & 0xFFFF_FFFFL)) {
            return rate(now, slot, v & 0xFFFF_FFFFL);
        }
        // the window moved on without a request: what was counted is the previous window's, or older
        long last = held == ((slot - 1) & 0xFFFF_FFFFL) ? v & 0xFFFF_FFFFL : 0;
        return last * (1 - (double) (now - slot * WINDOW_NANOS) / WINDOW_NANOS) / RATE_WINDOW_S;
    }

    private double rate(long now, long slot, long current) {
        double into = (double) (now - slot * WINDOW_NANOS) / WINDOW_NANOS;
        return (current + previousCount * (1 - into)) / RATE_WINDOW_S;
    }

    /**
     * The signal that judges the queue of requests sent with {@code enginePriority} ({@link Decision#NO_ENGINE_PRIORITY}
     * for an engine that schedules first come, first served): their priority's own, or every answer's.
     */
    QueueSignal signal(int enginePriority) {
        if (enginePriority != Decision.NO_ENGINE_PRIORITY) {
            int[] v = levels;
            QueueSignal[] s = levelSignals;
            for (int i = 0; i < v.length && i < s.length; i++) {
                if (v[i] == enginePriority) {
                    return s[i];
                }
            }
        }
        return answers;
    }

    /**
     * Sets the priorities this gateway sends the engine (empty for an engine that schedules first come, first served),
     * keeping what the answers of each priority still sent have shown, and ends every spill under way (a new snapshot,
     * a new allowance).
     */
    void levels(int[] priorities) {
        QueueSignal[] next = new QueueSignal[priorities.length];
        for (int i = 0; i < priorities.length; i++) {
            QueueSignal kept = signal(priorities[i]);
            next[i] = kept == answers ? new QueueSignal() : kept;
            next[i].endSpill();
        }
        answers.endSpill();
        levelSignals = next;
        levels = priorities.clone();
    }

    /**
     * Takes the expected TTFT of a new snapshot, ms: where it and the last one are both known, every queue signal's
     * floor moves by their ratio ({@link QueueSignal#rescaleFloor}). Called from each snapshot's compilation, under the
     * data plane's swap lock.
     */
    void planned(double expectedTtftMs) {
        double was = plannedTtftMs;
        if (expectedTtftMs > 0 && Double.isFinite(expectedTtftMs)) {
            if (was > 0 && was != expectedTtftMs) {
                double factor = expectedTtftMs / was;
                answers.rescaleFloor(factor);
                for (QueueSignal s : levelSignals) {
                    if (s != answers) {
                        s.rescaleFloor(factor);
                    }
                }
            }
            plannedTtftMs = expectedTtftMs;
        }
    }

    /**
     * The duration the held snapshot plans for a request to this engine from this gateway, ms (its latency at the
     * planned load plus the round trip); NaN where the snapshot gives none. Set by each snapshot's compilation.
     */
    volatile double plannedDurationMs = Double.NaN;

    /** Starts every signal's slowness again from the plan ({@link QueueSignal#resetSlowness}): on an ejection. */
    void resetSlowness() {
        answers.resetSlowness();
        for (QueueSignal s : levelSignals) {
            s.resetSlowness();
        }
    }

    /** Folds one successful answer's duration, sent with {@code enginePriority}, into its signals' slowness. */
    void observeDuration(double ms, int enginePriority) {
        double planned = plannedDurationMs;
        if (!(planned > 0)) {
            return;
        }
        double ratio = ms / planned;
        answers.observeDuration(ratio);
        QueueSignal own = signal(enginePriority);
        if (own != answers) {
            own.observeDuration(ratio);
        }
    }

    /** Folds one attempt's time to first token, sent with {@code enginePriority}, as it comes into its signals' pace. */
    void observeFirstToken(double ms, int enginePriority) {
        answers.observeFirstToken(ms);
        QueueSignal own = signal(enginePriority);
        if (own != answers) {
            own.observeFirstToken(ms);
        }
    }

    /** Folds one successful answer's time to first token, sent with {@code enginePriority}, into its signals. */
    void observeTtft(double ms, int enginePriority) {
        answers.observe(ms);
        QueueSignal own = signal(enginePriority);
        if (own != answers) {
            own.observe(ms);
        }
    }

    /**
     * True when this gateway's recent answers to requests sent with {@code enginePriority} show a queue
     * ({@link QueueSignal#queueing}) while requests of this gateway are there to tell. With none in flight the
     * judgement lapses: an engine avoided for its queue gets no answers that could show the queue gone, so it is
     * tried again once what was sent there has finished.
     */
    boolean queueing(double slackMs, int enginePriority) {
        return inFlight.get() > 0 && signal(enginePriority).queueing(slackMs);
    }

    /** Whether an attempt of this gateway failed here less than {@code windowNanos} before {@code now}. */
    boolean failedWithin(long now, long windowNanos) {
        long at = failedAt;
        return at != Long.MIN_VALUE && now - at < windowNanos;
    }

    boolean ejected(long now) {
        Ejection e = ejection;
        return e != null && (e.untilNanos() - now > 0 || trialOnReturn && trialUntil.get() - now > 0);
    }

    /** Claims the trial of an engine {@link #trialOnReturn} whose ejection is over, unless one is under way. */
    void startTrial(long now) {
        long t = trialUntil.get();
        if (!(t - now > 0)) {
            trialUntil.compareAndSet(t, now + TRIAL_NANOS);
        }
    }

    /** Ends the trial under way: {@code reached}, the engine is back in full. */
    void endTrial(boolean reached) {
        if (reached) {
            trialOnReturn = false;
        }
        trialUntil.set(0);
    }

    /** Counts one more request in flight unless {@code limit} are in flight already; false when at the limit. */
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
