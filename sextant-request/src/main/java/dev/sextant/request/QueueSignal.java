package dev.sextant.request;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * What this gateway's answers from one engine say of its queue: the recent time to first token against its floor,
 * and whether a spill from the engine is under way ({@link DefaultDataPlane}'s "Spill under load"). An engine that
 * serves first come, first served has one, from every answer; one that schedules by priority has one per priority it
 * is sent besides, because a request there waits only behind its own and higher priorities: a queue of lower ones
 * that the mixed answers show is not its queue. Written by whichever request thread finishes an answer, without a
 * lock: a lost update only delays a mean by one answer.
 */
final class QueueSignal {
    /**
     * The recent time to first token, ms: an exponentially weighted mean of the successful answers (about the last
     * ten); NaN before the first.
     */
    volatile double recentTtftMs = Double.NaN;
    /**
     * The recent time to first token as the first tokens come, ms: the same mean as {@link #recentTtftMs} over the
     * streamed attempts, folded when an attempt's first token reaches the gateway rather than when its answer ends;
     * NaN before the first. What the {@link #pace} of an engine that does not keep up reads: an answer of hundreds of
     * tokens ends seconds after its first token, many times that on an engine slowed down, so the answers' mean says
     * nothing of a slow-down for that long. The other judgements keep the answers' mean, whose lag damps them: read
     * as the tokens come, the room a spill looks for came and went with each drained queue (docs/request-path.md §4).
     */
    volatile double firstTokenMs = Double.NaN;
    /**
     * The time to first token without a queue, as far as this gateway has seen, ms: {@link #recentTtftMs} at its
     * lowest, following it down at once and up by {@link #FLOOR_RISE} of the difference per answer (so a lasting
     * change of the prompts is followed within a few thousand answers, a queue of a few seconds is not); moved with
     * the snapshot's expected TTFT ({@link #rescaleFloor}). NaN before the first answer.
     */
    volatile double ttftFloorMs = Double.NaN;
    /**
     * Whether a spill from the engine is under way for the requests this signal judges: it started with the offered
     * rate beyond chance of the allowance (scaled by the {@link #pace} of an engine that does not keep up within it)
     * and these answers showing a queue, and holds the threshold at that allowance itself until the rate is back
     * within it; cleared by each new snapshot, whose allowance is planned for what the control plane saw.
     */
    volatile boolean spilling;
    /**
     * Whether {@link #spilling} is a spill from an engine offered no more than its allowance that does not keep up
     * with it, which holds its allowance scaled by its {@link #pace}. Cleared with it.
     */
    volatile boolean pacing;

    /**
     * How much longer this gateway's answers take than the held snapshot plans: an exponentially weighted mean (about
     * twenty answers, one in four of them measured: about the last eighty) of a successful answer's time from its
     * placing to its end over the duration the snapshot plans for the engine from here (its latency at the planned
     * load plus the round trip). NaN before the first. Unlike the TTFT floor it does not drift toward a lasting slow-down: while the control plane is away the
     * held plan is the anchor, and a three times slower engine stays three times slower against it.
     */
    private double slowness = Double.NaN;
    /**
     * {@link #slowness} read and written opaquely: atomic and seen by other threads soon, without the fence of a
     * volatile write on every answer (the request path's cost, BENCHMARKS.md); a lost update only delays the mean by
     * one answer.
     */
    private static final VarHandle SLOWNESS;

    static {
        try {
            SLOWNESS = MethodHandles.lookup().findVarHandle(QueueSignal.class, "slowness", double.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** {@link #slowness}, opaquely. */
    double slowness() {
        return (double) SLOWNESS.getOpaque(this);
    }

    /** Ends a spill, and with it the pace it held ({@link #spilling}, {@link #pacing}). */
    void endSpill() {
        spilling = false;
        pacing = false;
    }

    /**
     * Answers this many times longer than planned mean an engine behind the plan, not noise: twenty answers' mean of
     * lengths with exponential spread (c² = 1) stays within about ±25% of its own mean, and the plan's latency
     * estimate is within about 10–20% ({@code docs/control-loop.md}, "Accuracy"); the control loop's slow factor.
     */
    static final double BEHIND_THE_PLAN = 1.5;

    /** Folds one successful answer's duration over its planned duration into {@link #slowness}. */
    void observeDuration(double ratio) {
        if (!(ratio > 0) || Double.isInfinite(ratio)) {
            return;
        }
        double m = slowness();
        SLOWNESS.setOpaque(this, Double.isNaN(m) ? ratio : m + 0.05 * (ratio - m));
    }

    /**
     * Starts {@link #slowness} again at 1, as planned: the answers before an ejection say nothing of the engine when it
     * returns, and a mean begun from the plan needs several answers, not one long one, to say it is behind.
     */
    void resetSlowness() {
        SLOWNESS.setOpaque(this, 1.0);
    }

    /** True when the answers take {@link #BEHIND_THE_PLAN} times what the held snapshot plans, or longer. */
    boolean behindThePlan() {
        return slowness() >= BEHIND_THE_PLAN;
    }

    /** Folds one attempt's time to first token into {@link #firstTokenMs} as the token comes. */
    void observeFirstToken(double ms) {
        firstTokenMs = recent(firstTokenMs, ms);
    }

    /**
     * True when the first tokens as they come show a queue: {@link #firstTokenMs} over {@link #QUEUEING} times the
     * floor, and beyond {@code slackMs} more, as {@link #queueing} judges the answers.
     */
    boolean firstTokensLate(double slackMs) {
        return firstTokenMs > QUEUEING * ttftFloorMs + slackMs;
    }

    /**
     * A recent mean {@code mean} (NaN: none yet) with {@code ms} folded in: an exponentially weighted mean of about the
     * last ten, the one {@link #recentTtftMs} and {@link #firstTokenMs} both keep.
     */
    private static double recent(double mean, double ms) {
        return Double.isNaN(mean) ? ms : mean + 0.1 * (ms - mean);
    }

    /** How far {@link #ttftFloorMs} rises toward the recent TTFT per answer. */
    static final double FLOOR_RISE = 0.001;
    /**
     * A recent TTFT more than this many times its floor means requests wait at the engine (a queue the answers show),
     * not noise: ten answers' mean of a mix of prompts stays within about ±30% of its own mean.
     */
    static final double QUEUEING = 2;

    /** Folds one successful answer's time to first token into {@link #recentTtftMs} and {@link #ttftFloorMs}. */
    void observe(double ms) {
        double recent = recent(recentTtftMs, ms);
        recentTtftMs = recent;
        double f = ttftFloorMs;
        ttftFloorMs = Double.isNaN(f) || recent < f ? recent : f + FLOOR_RISE * (recent - f);
    }

    /**
     * True when the answers show a queue: a recent TTFT over {@link #QUEUEING} times its floor, and beyond
     * {@code slackMs} more (a floor of a few ms doubles with a step's jitter).
     */
    boolean queueing(double slackMs) {
        return recentTtftMs > QUEUEING * ttftFloorMs + slackMs;
    }

    /**
     * The engine's pace: floor / {@link #firstTokenMs}, at most 1 (1 before the first token), or where the answers are
     * {@link #behindThePlan} the planned duration over theirs if that is less. First tokens (or answers) k times
     * slower than without a queue (than planned) say that the engine serves about k times fewer requests per second
     * than the allowance assumed, whether it is slow (every step longer) or holds a queue (each request waits for the
     * ones ahead): with the control plane silent, {@code DefaultDataPlane}'s spill scales the allowance of an engine
     * that does not keep up within it by this. The floor follows a lasting slow-down up within a thousand answers or
     * so; the plan does not move while the control plane is away.
     */
    double pace() {
        double p = ttftFloorMs / firstTokenMs;
        double against = p < 1 ? p : 1; // NaN (no token or answer yet) → 1
        double slow = slowness();
        return slow >= BEHIND_THE_PLAN ? Math.min(against, 1 / slow) : against;
    }

    /**
     * Moves the floor by {@code factor}: the snapshot's expected TTFT for the engine changed by it (the control loop
     * priced a slower or faster engine, or planned it another load), so the first tokens without a queue are expected
     * that much later or sooner. Without it, an engine the plan already prices slow would show a queue against the
     * floor of its fast days and be spilled from twice, by the plan and by the gateway, until the floor caught up.
     */
    void rescaleFloor(double factor) {
        double f = ttftFloorMs;
        if (!Double.isNaN(f) && factor > 0 && Double.isFinite(factor)) {
            ttftFloorMs = f * factor;
        }
    }
}
