package dev.sextant.request;

import java.time.Duration;

/**
 * Tunables of the data plane; {@link #defaults()} gives the values of DESIGN.md §4–§5.
 *
 * @param maxSnapshotAge          past this age the fallback policy routes (nearest allowed engine,
 *                                fewest in flight), &gt; 0
 * @param boundedLoadEpsilon      ε: an engine is skipped when it carries more than (1+ε)× its share of
 *                                this gateway's in-flight requests, ≥ 0
 * @param boundedLoadMinInFlight an engine with fewer requests in flight than this is never skipped for
 *                                load, ≥ 1: at low load the (1+ε) bound would otherwise cap every engine
 *                                at one request and scatter conversations that batching engines serve
 *                                well together
 * @param maxWalk                 how many engines of a key's order bounded load looks at before
 *                                taking the least loaded of them, ≥ 1
 * @param consecutiveFailures     failures in a row that eject an engine, ≥ 1
 * @param ejectionBase            base ejection time; the k-th recent ejection lasts base × k, &gt; 0
 * @param ejectionMax             cap on one ejection's duration, ≥ base
 * @param ejectionJitter          ejection lasts up to this fraction longer, at random, in [0, 1]
 * @param maxEjectedFraction      at most this fraction of a class's engines ejected at once, in [0, 1];
 *                                at least one engine may be ejected if the class has two, and one
 *                                always stays
 * @param ttftOutlierFactor       a TTFT above factor × (expected TTFT + network RTT) counts as a
 *                                failure; 0 disables the rule
 * @param ttftPredictor           expected engine-side TTFT per engine
 * @param maxAttempts             attempts per request including the first, ≥ 1
 * @param retryBackoffBase        full-jitter back-off before retrying the same engine: uniform in
 *                                [0, min(max, base × 2^(attempt−1))]
 * @param retryBackoffMax         cap of that back-off
 * @param retryTokenCap           the retry budget's deposits never bank more than this many retries, ≥ 1
 * @param maxInFlightPerEngine    this gateway's concurrency limit per engine, the final guard, ≥ 1
 * @param shedRetryAfter          retry-after hint of a shed or concurrency-limit refusal
 * @param unavailableRetryAfter   retry-after hint when no engine is allowed or left
 * @param defaultPriority         the priority of a request that names none
 * @param seed                    seed of the jitter draws; same seed, same decisions
 * @param listener                told about fallback changes and ejections
 */
public record DataPlaneOptions(Duration maxSnapshotAge, double boundedLoadEpsilon, int boundedLoadMinInFlight,
                               int maxWalk,
                               int consecutiveFailures, Duration ejectionBase, Duration ejectionMax,
                               double ejectionJitter, double maxEjectedFraction, double ttftOutlierFactor,
                               TtftPredictor ttftPredictor, int maxAttempts, Duration retryBackoffBase,
                               Duration retryBackoffMax, double retryTokenCap, int maxInFlightPerEngine,
                               Duration shedRetryAfter, Duration unavailableRetryAfter, int defaultPriority,
                               long seed, DataPlaneListener listener) {

    public DataPlaneOptions {
        positive("max_snapshot_age", maxSnapshotAge);
        if (!(boundedLoadEpsilon >= 0) || Double.isInfinite(boundedLoadEpsilon)) {
            throw new IllegalArgumentException("bounded_load_epsilon: " + boundedLoadEpsilon + " (expected: >= 0)");
        }
        atLeast("bounded_load_min_in_flight", boundedLoadMinInFlight, 1);
        atLeast("max_walk", maxWalk, 1);
        atLeast("consecutive_failures", consecutiveFailures, 1);
        positive("ejection_base", ejectionBase);
        positive("ejection_max", ejectionMax);
        if (ejectionMax.compareTo(ejectionBase) < 0) {
            throw new IllegalArgumentException("ejection_max: " + ejectionMax + " (expected: >= ejection_base "
                    + ejectionBase + ")");
        }
        unit("ejection_jitter", ejectionJitter);
        unit("max_ejected_fraction", maxEjectedFraction);
        if (!(ttftOutlierFactor >= 0) || Double.isInfinite(ttftOutlierFactor)) {
            throw new IllegalArgumentException("ttft_outlier_factor: " + ttftOutlierFactor + " (expected: >= 0)");
        }
        if (ttftPredictor == null) {
            throw new IllegalArgumentException("ttft_predictor: missing");
        }
        atLeast("max_attempts", maxAttempts, 1);
        positive("retry_backoff_base", retryBackoffBase);
        positive("retry_backoff_max", retryBackoffMax);
        if (!(retryTokenCap >= 1) || Double.isInfinite(retryTokenCap)) {
            throw new IllegalArgumentException("retry_token_cap: " + retryTokenCap + " (expected: >= 1)");
        }
        atLeast("max_in_flight_per_engine", maxInFlightPerEngine, 1);
        positive("shed_retry_after", shedRetryAfter);
        positive("unavailable_retry_after", unavailableRetryAfter);
        if (listener == null) {
            throw new IllegalArgumentException("listener: missing (expected: DataPlaneListener.NONE at least)");
        }
    }

    /**
     * Snapshot age limit 5 min, ε 0.25 (never below 8 in flight), walk 8, eject after 5 failures for 30 s × k (cap 300 s, +10%
     * jitter, ≤ 10% of a class), TTFT outlier at 5× prediction, 3 attempts, back-off 25 ms … 1 s,
     * 100 banked retries, 1,024 in flight per engine, retry-after 1 s (shed) and 5 s (unavailable),
     * default priority 0, seed 0.
     */
    public static DataPlaneOptions defaults() {
        return new DataPlaneOptions(Duration.ofMinutes(5), 0.25, 8, 8, 5, Duration.ofSeconds(30), Duration.ofSeconds(300),
                0.1, 0.1, 5.0, TtftPredictor.ENGINE_LATENCY, 3, Duration.ofMillis(25), Duration.ofSeconds(1), 100,
                1024, Duration.ofSeconds(1), Duration.ofSeconds(5), 0, 0L, DataPlaneListener.NONE);
    }

    /** These options with another snapshot age limit. */
    public DataPlaneOptions withMaxSnapshotAge(Duration d) {
        return new DataPlaneOptions(d, boundedLoadEpsilon, boundedLoadMinInFlight, maxWalk, consecutiveFailures, ejectionBase, ejectionMax,
                ejectionJitter, maxEjectedFraction, ttftOutlierFactor, ttftPredictor, maxAttempts, retryBackoffBase,
                retryBackoffMax, retryTokenCap, maxInFlightPerEngine, shedRetryAfter, unavailableRetryAfter,
                defaultPriority, seed, listener);
    }

    /** These options with another ε. */
    public DataPlaneOptions withBoundedLoadEpsilon(double e) {
        return new DataPlaneOptions(maxSnapshotAge, e, boundedLoadMinInFlight, maxWalk, consecutiveFailures, ejectionBase, ejectionMax,
                ejectionJitter, maxEjectedFraction, ttftOutlierFactor, ttftPredictor, maxAttempts, retryBackoffBase,
                retryBackoffMax, retryTokenCap, maxInFlightPerEngine, shedRetryAfter, unavailableRetryAfter,
                defaultPriority, seed, listener);
    }

    /** These options with another per-engine concurrency limit. */
    public DataPlaneOptions withMaxInFlightPerEngine(int limit) {
        return new DataPlaneOptions(maxSnapshotAge, boundedLoadEpsilon, boundedLoadMinInFlight, maxWalk, consecutiveFailures, ejectionBase,
                ejectionMax, ejectionJitter, maxEjectedFraction, ttftOutlierFactor, ttftPredictor, maxAttempts,
                retryBackoffBase, retryBackoffMax, retryTokenCap, limit, shedRetryAfter, unavailableRetryAfter,
                defaultPriority, seed, listener);
    }

    /** These options with another jitter seed. */
    public DataPlaneOptions withSeed(long s) {
        return new DataPlaneOptions(maxSnapshotAge, boundedLoadEpsilon, boundedLoadMinInFlight, maxWalk, consecutiveFailures, ejectionBase,
                ejectionMax, ejectionJitter, maxEjectedFraction, ttftOutlierFactor, ttftPredictor, maxAttempts,
                retryBackoffBase, retryBackoffMax, retryTokenCap, maxInFlightPerEngine, shedRetryAfter,
                unavailableRetryAfter, defaultPriority, s, listener);
    }

    /** These options with another listener. */
    public DataPlaneOptions withListener(DataPlaneListener l) {
        return new DataPlaneOptions(maxSnapshotAge, boundedLoadEpsilon, boundedLoadMinInFlight, maxWalk, consecutiveFailures, ejectionBase,
                ejectionMax, ejectionJitter, maxEjectedFraction, ttftOutlierFactor, ttftPredictor, maxAttempts,
                retryBackoffBase, retryBackoffMax, retryTokenCap, maxInFlightPerEngine, shedRetryAfter,
                unavailableRetryAfter, defaultPriority, seed, l);
    }

    /** These options with another TTFT predictor and outlier factor (0 disables the rule). */
    public DataPlaneOptions withTtftRule(TtftPredictor predictor, double factor) {
        return new DataPlaneOptions(maxSnapshotAge, boundedLoadEpsilon, boundedLoadMinInFlight, maxWalk, consecutiveFailures, ejectionBase,
                ejectionMax, ejectionJitter, maxEjectedFraction, factor, predictor, maxAttempts, retryBackoffBase,
                retryBackoffMax, retryTokenCap, maxInFlightPerEngine, shedRetryAfter, unavailableRetryAfter,
                defaultPriority, seed, listener);
    }

    private static void positive(String field, Duration d) {
        if (d == null || d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(field + ": " + d + " (expected: a positive duration)");
        }
    }

    private static void atLeast(String field, int v, int min) {
        if (v < min) {
            throw new IllegalArgumentException(field + ": " + v + " (expected: >= " + min + ")");
        }
    }

    private static void unit(String field, double v) {
        if (!(v >= 0 && v <= 1)) {
            throw new IllegalArgumentException(field + ": " + v + " (expected: in [0, 1])");
        }
    }
}
