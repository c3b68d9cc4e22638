package dev.sextant.request;

import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * The data plane's answer for one attempt of one request: either an engine to send it to, or a
 * refusal the gateway turns into an error response.
 *
 * <p>A routed decision counts as in flight on its engine from the moment it is returned; the gateway
 * ends it exactly once, with {@link DataPlane#onFinish} or {@link DataPlane#retry} (a second end is
 * ignored). A refusal needs no end.
 */
public final class Decision {
    private static final AtomicIntegerFieldUpdater<Decision> ENDS =
            AtomicIntegerFieldUpdater.newUpdater(Decision.class, "ends");
    /** {@link #ends}: the attempt ended. */
    private static final int FINISHED = 1;
    /** {@link #ends}: the attempt's first token reached the gateway. */
    private static final int FIRST_TOKEN = 2;
    /**
     * {@link #ends}: the attempt waited for its first token beyond the latency outlier bound, and the data plane
     * counted the wait against the engine.
     */
    private static final int STALLED = 4;
    /** {@link #ends}: the attempt's time to first token was folded into its engine's pace ({@link #readFirstToken}). */
    private static final int FIRST_TOKEN_READ = 8;

    private final String classId;
    private final long snapshotVersion;
    private final boolean fallback;
    // routed
    final EngineCell cell;
    private final String endpoint;
    private final int enginePriority;
    private final int attempt;
    private final long backoffNanos;
    final long key;
    final long requestId;
    final double expectedTtftMs;
    final EngineCell[] tried;
    /** The counts of the pool the engine was chosen from, lowered when the attempt ends. */
    final Pool pool;
    /**
     * The prefix cell whose count of requests in flight this attempt raised (lowered when it ends), or -1; set before
     * the decision is returned.
     */
    int prefixCell = -1;
    /** When the data plane placed the attempt, on its ticker, ns. */
    final long startNanos;
    /** The engine's {@link EngineCell#firstTokens} when the attempt was placed. */
    final int firstTokensBefore;
    /** Why this engine, in a few stable words (see {@link #reason()}). */
    private final String reason;
    // refused
    private final Refusal refusal;
    private final String message;
    private final long retryAfterNanos;

    /** What has ended of the attempt: {@link #FINISHED}, {@link #FIRST_TOKEN} and {@link #STALLED}, set once each. */
    private volatile int ends;

    /** {@link #enginePriority()} of an engine that is sent no priority. */
    public static final int NO_ENGINE_PRIORITY = Integer.MIN_VALUE;

    private Decision(String classId, long snapshotVersion, boolean fallback, EngineCell cell, String endpoint,
                     int enginePriority, int attempt, long backoffNanos, long key, long requestId, double expectedTtftMs,
                     EngineCell[] tried, Pool pool, long startNanos, String reason, Refusal refusal,
                     String message, long retryAfterNanos) {
        this.classId = classId;
        this.snapshotVersion = snapshotVersion;
        this.fallback = fallback;
        this.cell = cell;
        this.endpoint = endpoint;
        this.enginePriority = enginePriority;
        this.attempt = attempt;
        this.backoffNanos = backoffNanos;
        this.key = key;
        this.requestId = requestId;
        this.expectedTtftMs = expectedTtftMs;
        this.tried = tried;
        this.pool = pool;
        this.startNanos = startNanos;
        this.firstTokensBefore = cell == null ? 0 : cell.firstTokens;
        this.reason = reason;
        this.refusal = refusal;
        this.message = message;
        this.retryAfterNanos = retryAfterNanos;
    }

    static Decision routed(String classId, long version, boolean fallback, EngineCell cell, String endpoint,
                           int enginePriority, int attempt, long backoffNanos, long key, long requestId,
                           double expectedTtftMs, EngineCell[] tried, Pool pool, long startNanos,
                           String reason) {
        if (cell.trialOnReturn) {
            cell.startTrial(startNanos); // an engine back from an ejection for unreachability: this attempt tries it
        }
        return new Decision(classId, version, fallback, cell, endpoint, enginePriority, attempt, backoffNanos, key,
                requestId, expectedTtftMs, tried, pool, startNanos, fallback ? reason + ",fallback" : reason, null,
                null, 0);
    }

    static Decision refused(String classId, long version, boolean fallback, Refusal refusal, String message,
                            long retryAfterNanos) {
        return new Decision(classId, version, fallback, null, null, NO_ENGINE_PRIORITY, 0, 0, 0, 0, Double.NaN, null,
                null, 0, "refused:" + refusal.word(), refusal, message, retryAfterNanos);
    }

    /** True when the request goes to {@link #engineId()}; false when it is refused. */
    public boolean routed() {
        return refusal == null;
    }

    /** The engine to send the attempt to, or null when refused. */
    public String engineId() {
        return cell == null ? null : cell.id;
    }

    /** The engine's base URL from the snapshot, or null when refused. */
    public String endpoint() {
        return endpoint;
    }

    /**
     * The {@code priority} to write into the body sent to the engine (the class's priority as that engine orders
     * them, see {@link dev.sextant.topology.PriorityScheduling}), or {@link #NO_ENGINE_PRIORITY} when the engine
     * schedules first come, first served or the request is refused.
     */
    public int enginePriority() {
        return enginePriority;
    }

    /** 1 for the first attempt, 2 and 3 for retries; 0 when refused. */
    public int attempt() {
        return attempt;
    }

    /** How long to wait before sending, ns ≥ 0: positive only when retrying the same engine. */
    public long backoffNanos() {
        return backoffNanos;
    }

    /**
     * Whether the data plane counted the attempt's wait for its first token against the engine (its latency outlier
     * rule: docs/request-path.md §4), while it waited ({@link DataPlane#awaitingFirstToken}) or when its client went
     * away before the token ({@link DataPlane#onFinish}). A client gone after such a wait saw the engine time out.
     */
    public boolean stalled() {
        return (ends & STALLED) != 0;
    }

    /** Marks the attempt {@link #stalled()}; true only the first time. */
    boolean stall() {
        return end(STALLED);
    }

    /** Whether the attempt still awaits its first token, not counted as stalled yet, and has not ended. */
    boolean stillAwaiting() {
        return (ends & (FINISHED | FIRST_TOKEN | STALLED)) == 0;
    }

    /** The class the request was classified into, or null when the model is unknown. */
    public String classId() {
        return classId;
    }

    /** The version of the snapshot the decision was made from. */
    public long snapshotVersion() {
        return snapshotVersion;
    }

    /** True when the snapshot was too old and the fallback policy chose the engine. */
    public boolean fallback() {
        return fallback;
    }

    /**
     * Why this engine (or why none), in a few stable words joined by commas, for the {@code x-sextant-reason} header,
     * the access log and metrics: {@code key} (the key's own engine), {@code spill:bounded-load} (the key's engine
     * was over its bounded load: the next of the key's order), {@code skip:ejected} and {@code skip:limit} (the key's
     * engine was ejected, or at its concurrency limit), {@code spill:overload} (the key's engine was offered beyond
     * what the policy planned: the nearest allowed engine with room), {@code spaced:prefill} (a new conversation
     * whose engine held more than its share of this gateway's requests in flight: an engine of the key's order that
     * held fewer), {@code spaced:full-batch} (a new conversation whose engine's batch was estimated full: an engine
     * of the key's order with a free place), {@code recent} (where spacing put the conversation before), {@code nearest} (no
     * weights to follow: the nearest allowed engine with the fewest in flight); a retry starts with {@code retry:}
     * and the failed attempt's outcome ({@code retry:connect-error,key}, {@code …,nearest-healthy},
     * {@code …,same-engine}); {@code fallback} is added while the snapshot is older than its limit; a refusal is
     * {@code refused:} and its kind ({@code refused:shed}). See docs/request-path.md.
     */
    public String reason() {
        return reason;
    }

    /** Why the request was refused, or null when routed. */
    public Refusal refusal() {
        return refusal;
    }

    /** A sentence for the client and the log, or null when routed. */
    public String message() {
        return message;
    }

    /** Retry-after hint of a refusal, ns ≥ 0 (0: none); round up to seconds for {@code Retry-After}. */
    public long retryAfterNanos() {
        return retryAfterNanos;
    }

    /** Marks the attempt's first token come; true only the first time. */
    boolean firstTokenCame() {
        return end(FIRST_TOKEN);
    }

    /**
     * Marks the attempt's time to first token read into its engine's pace, where the token came or else where the
     * answer ended; true only the first time.
     */
    boolean readFirstToken() {
        return end(FIRST_TOKEN_READ);
    }

    /** Marks the attempt finished; true only the first time. */
    boolean finish() {
        return end(FINISHED);
    }

    private boolean end(int what) {
        for (;;) {
            int v = ends;
            if ((v & what) != 0) {
                return false;
            }
            if (ENDS.compareAndSet(this, v, v | what)) {
                return true;
            }
        }
    }

    /** The engines tried so far, this attempt's last. */
    EngineCell[] triedSoFar() {
        if (tried != null) {
            return tried;
        }
        return new EngineCell[] {cell};
    }

    @Override
    public String toString() {
        return routed()
                ? "Decision[" + engineId() + ", class=" + classId + ", attempt=" + attempt
                        + (fallback ? ", fallback" : "") + ", v" + snapshotVersion + "]"
                : "Decision[" + refusal + ": " + message + "]";
    }
}
