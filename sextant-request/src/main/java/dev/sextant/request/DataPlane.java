package dev.sextant.request;

import dev.sextant.snapshot.Snapshot;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The data plane of one gateway cluster: answers every request from a locally held snapshot, never
 * waiting for the control plane (docs/design.md §4–§6). Per request: classify → admission → weighted
 * consistent hashing of the affinity key → bounded load and local outlier ejection → the engine;
 * on a failure the engine cannot have started generating, {@link #retry} picks the next engine in
 * the key's order if the retry budget allows.
 *
 * <p>Thread-safe, lock-free on the request path ({@link #route}, {@link #retry}, {@link #onFinish}):
 * the snapshot is read through one volatile reference and per-engine state is atomic. Time comes
 * only from the {@link Ticker}, randomness only from {@link DataPlaneOptions#seed()}: a simulator
 * that drives the same calls in the same order with the same ticker gets the same decisions.
 *
 * <p>Usage by a gateway:
 * <pre>{@code
 * Decision d = plane.route(fields.toMeta());
 * while (d.routed()) {
 *     Result r = send(d.endpoint(), d.backoffNanos());      // proxy, stream
 *     if (r.ok() || r.mayHaveGenerated()) { plane.onFinish(d, r.outcome(), r.ttftNanos()); return; }
 *     d = plane.retry(d, r.outcome());                        // ends d, maybe picks the next engine
 * }
 * answerError(d.refusal().status(), d.message(), d.retryAfterNanos());
 * }</pre>
 */
public interface DataPlane {

    /**
     * A data plane for {@code gatewayCluster}, holding {@code snapshot} from now on.
     *
     * @param gatewayCluster the gateway cluster id whose routes to use
     * @param snapshot       the first snapshot; its age counts from now
     * @param ticker         the only source of time
     * @param options        tunables, e.g. {@link DataPlaneOptions#defaults()}
     */
    static DataPlane create(String gatewayCluster, Snapshot snapshot, Ticker ticker, DataPlaneOptions options) {
        return new DefaultDataPlane(gatewayCluster, snapshot, ticker, options, 0, null);
    }

    /**
     * As {@link #create(String, Snapshot, Ticker, DataPlaneOptions)} with a snapshot that is {@code age} old already
     * (one a gateway kept from before it restarted): past {@link DataPlaneOptions#maxSnapshotAge()} it starts in
     * fallback mode.
     */
    static DataPlane create(String gatewayCluster, Snapshot snapshot, Ticker ticker, DataPlaneOptions options,
                            java.time.Duration age) {
        return create(gatewayCluster, snapshot, ticker, options, age, null);
    }

    /**
     * As {@link #create(String, Snapshot, Ticker, DataPlaneOptions, java.time.Duration)}, reading from
     * {@code lastEnds} (the gateway's own table of when each conversation's last request ended, on {@code ticker}'s
     * clock) how long a returning conversation has been away: one that has been away longer than its engine's cache
     * keeps a context by the snapshot has nothing cached to lose, and is placed as a new one (docs/request-path.md §4,
     * "Spacing new conversations"). Null: every returning conversation counts as cached.
     */
    static DataPlane create(String gatewayCluster, Snapshot snapshot, Ticker ticker, DataPlaneOptions options,
                            java.time.Duration age, ReuseTimes lastEnds) {
        if (age == null || age.isNegative()) {
            throw new IllegalArgumentException("age: " + age + " (expected: >= 0)");
        }
        return new DefaultDataPlane(gatewayCluster, snapshot, ticker, options, age.toNanos(), lastEnds);
    }

    /**
     * The first attempt of a request: its engine, or a refusal ({@link Refusal#UNKNOWN_MODEL},
     * {@link Refusal#NO_ALLOWED_ENGINE}, {@link Refusal#SHED}, {@link Refusal#ENGINE_LIMIT}). A routed
     * decision is in flight until {@link #onFinish} or {@link #retry} ends it. Allocates only the
     * returned decision.
     */
    Decision route(RequestMeta request);

    /**
     * Ends {@code failed} with {@code outcome} (if not already ended) and decides the next attempt:
     * the next engine of the key's order within the class's allowed set that is not ejected, not at
     * its limit and not tried yet, counted toward that engine's offered rate and spilled from it as a first
     * attempt would be when it is offered beyond its allowance; or, if none is left, the same engine after a
     * full-jitter back-off. After {@link Outcome#NOT_SENT} the same engine again at once, when it may still take
     * it. Refuses when the outcome may not be retried (e.g. {@link Outcome#SYSTEM_OVERLOADED}), after
     * {@link DataPlaneOptions#maxAttempts()} attempts, or when the class's retry budget is spent. Call it
     * only for an attempt whose engine cannot have generated any of the request, and while no byte of the
     * response has reached the client; end any other failed attempt with {@link #onFinish}.
     *
     * @param failed a routed decision from {@link #route} or {@link #retry}
     */
    Decision retry(Decision failed, Outcome outcome);

    /**
     * The attempt's first token reached the gateway: the engine works (what {@link #awaitingFirstToken} reads), an
     * engine on trial after an ejection is back, and a streamed attempt's time to first token tells the engine's pace
     * at once rather than when its answer ends (docs/request-path.md §4, "An engine that does not keep up within its
     * allowance"). Idempotent; ignored for refusals and after the attempt ended.
     *
     * @param ttftNanos the time to first token seen at the gateway, ns, measured as {@link #onFinish}'s; {@link
     *                  #NOT_STREAMED} for the first byte of a whole answer, which follows its last token
     */
    void onFirstToken(Decision attempt, long ttftNanos);

    /**
     * Asks whether a streamed attempt still awaiting its first token has waited long enough to count against its
     * engine: beyond the latency outlier bound, while the engine sent this gateway no first token at all
     * (docs/request-path.md §4, "A stream without a first token"). Counting it changes nothing for the attempt itself,
     * which waits on until its token or the gateway's timeouts; it keeps the next requests off an engine that hangs.
     * Call it when the attempt's request is written to the engine, then again each time it says.
     *
     * @return ns after which to ask again; −1 when there is nothing more to ask (the token came, the attempt ended
     *         or was counted, or the rule does not apply to it)
     */
    long awaitingFirstToken(Decision attempt);

    /**
     * Ends an attempt: releases its in-flight slot and feeds the outcome to outlier detection.
     * Idempotent per decision; ignored for refusals.
     *
     * @param ttftNanos time to first token seen at the gateway, ns; {@link #NO_TOKEN_YET} (or any other negative value
     *                  but {@link #NOT_STREAMED}) when no token came; {@link #NOT_STREAMED} for an answer that was not
     *                  streamed
     */
    void onFinish(Decision attempt, Outcome outcome, long ttftNanos);

    /** {@link #onFinish}'s {@code ttftNanos} when the attempt ended before its first token. */
    long NO_TOKEN_YET = -1;

    /**
     * {@link #onFinish}'s {@code ttftNanos} for an answer that was not streamed: the engine sends it whole, so its first
     * byte comes after its last token and says nothing of the time to first token. Such an attempt is judged by its
     * outcome alone, never as a latency outlier: a long generation is not a slow engine (docs/request-path.md §4).
     */
    long NOT_STREAMED = Long.MIN_VALUE;

    /**
     * Holds {@code snapshot} from now on, precomputing the per-class tables off the request path.
     * A snapshot older than the held one (lower version) is ignored, and so is one with the held
     * version but other content (a version names one content, never two); the held one again (equal)
     * only resets the age, as a "not modified" answer from the control plane should.
     *
     * @return false when ignored: older, or the held version with other content
     */
    boolean swap(Snapshot snapshot);

    /** The snapshot held now. */
    Snapshot snapshot();

    /** Version, age, fallback mode, in-flight count, retry tokens, ejections: for {@code /healthz}. */
    DataPlaneStatus status();

    /** Engines ejected now, with reason and expiry, sorted by engine id. */
    List<Ejection> ejections();

    /** Requests this gateway has in flight on {@code engineId}, ≥ 0. */
    int inFlight(String engineId);

    /**
     * Engine id → requests this gateway has in flight on it ({@link #inFlight}), for the engines of the held snapshot
     * that have any: what a gateway's report tells the control loop an engine was sent and has not answered.
     */
    default Map<String, Integer> inFlightByEngine() {
        Map<String, Integer> out = new HashMap<>();
        for (String id : snapshot().engines().keySet()) {
            int n = inFlight(id);
            if (n > 0) {
                out.put(id, n);
            }
        }
        return out;
    }
}
