package dev.sextant.request;

import java.time.Duration;

/**
 * Tunables of the data plane; {@link #defaults()} gives the values of docs/design.md §4–§5.
 *
 * @param maxSnapshotAge          past this age the fallback policy routes (nearest allowed engine,
 *                                fewest in flight), &gt; 0
 * @param boundedLoadEpsilon      ε: an engine is skipped when it carries more than (1+ε)× its share μ of
 *                                this gateway's in-flight requests and more than μ + 3√μ (chance), ≥ 0
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
 *                                always stays; engines that cannot be reached, fail every attempt, or (with the
 *                                control plane away) answer slowly while their peers have room are ejected past it
 *                                while half of the class's allowed engines stay (docs/request-path.md §4)
 * @param ttftOutlierFactor       a TTFT above factor × (expected TTFT + network RTT) counts as a
 *                                failure; 0 disables the rule
 * @param ttftPredictor           expected engine-side TTFT per engine
 * @param maxAttempts             attempts per request including the first, ≥ 1
 * @param retryBackoffBase        full-jitter back-off before retrying the same engine: uniform in
 *                                [0, min(max, base × 2^(n−2))] before the n-th attempt (the first retry: base)
 * @param retryBackoffMax         cap of that back-off
 * @param retryTokenCap           a class's retry budget never banks more than this many retries from its
 *                                deposits, ≥ 1
 * @param maxInFlightPerEngine    this gateway's concurrency limit per engine, the final guard, ≥ 1
 * @param inFlightPerCapacity     where the snapshot gives an engine a capacity, the limit of the priorities below
 *                                the highest is this many times the requests it holds from this gateway when it
 *                                serves its allowance (rate × planned duration, Little's law), never more than
 *                                {@code maxInFlightPerEngine} and never less than {@link #MIN_DERIVED_LIMIT};
 *                                &gt; 1, infinite for the fixed limit alone (docs/request-path.md §3)
 * @param priorityReserve         the share of that limit kept for the priorities above, in [0, 1): of the R
 *                                distinct priorities of the gateway's classes, the one of rank r (0 = highest)
 *                                may fill an engine up to ⌊limit × (1 − reserve × r / (R − 1))⌋, at least 1
 * @param shedRetryAfter          retry-after hint of a shed or concurrency-limit refusal
 * @param unavailableRetryAfter   retry-after hint when no engine is allowed or left
 * @param defaultPriority         the priority of a request that names none
 * @param spreadSharedPrefixes    route a keyless conversation whose prompt starts with a shared prefix (a system
 *                                prompt) on the prefix's own probes, spread as its load grows, instead of on its own
 *                                conversation key; off by default (docs/request-path.md §4, "Shared prefixes")
 * @param spacePrefills           place a new conversation (a key this gateway has not sent recently) on another
 *                                engine of its key's order when its own engine holds more than its share of this
 *                                gateway's requests in flight and the other would hold fewer per unit of share, within
 *                                the plan; on by default (docs/request-path.md §4, "Spacing new conversations"); off,
 *                                the table of {@code recentKeys} is not kept
 * @param recentKeys              slots of the table of recently placed conversation keys that spacing reads, 8 bytes
 *                                each, a power of two in [2^10, 2^24]: a conversation's next turn finds its slot
 *                                still its own with probability e^(−n/recentKeys), n the new conversations placed in
 *                                between (default 2^18, 2 MiB: 93% at 1,000 new conversations a second and 20 s)
 * @param controlPlaneCadence     the longest the control plane is expected to go without a word (a new snapshot or
 *                                the held one confirmed; a gateway takes its snapshot source's: a long-poll's wait,
 *                                etcd's read interval), &gt; 0, or null
 *                                when unknown: silence beyond twice it says the control plane is away before this
 *                                gateway has learned its cadence from three intervals (docs/request-path.md §4)
 * @param seed                    seed of the jitter draws; same seed, same decisions
 * @param listener                told about fallback changes and ejections
 */
public record DataPlaneOptions(Duration maxSnapshotAge, double boundedLoadEpsilon, int boundedLoadMinInFlight,
                               int maxWalk,
                               int consecutiveFailures, Duration ejectionBase, Duration ejectionMax,
                               double ejectionJitter, double maxEjectedFraction, double ttftOutlierFactor,
                               TtftPredictor ttftPredictor, int maxAttempts, Duration retryBackoffBase,
                               Duration retryBackoffMax, double retryTokenCap, int maxInFlightPerEngine,
                               double inFlightPerCapacity, double priorityReserve, Duration shedRetryAfter, Duration unavailableRetryAfter, int defaultPriority,
                               boolean spreadSharedPrefixes, boolean spacePrefills, int recentKeys,
                               Duration controlPlaneCadence, long seed, DataPlaneListener listener) {

    /**
     * The least a limit derived from an engine's capacity may be: an engine holds a request and has the next one
     * ready, whatever a low or stale capacity estimate says; and with three priorities and the default reserve the
     * lowest still gets one.
     */
    public static final int MIN_DERIVED_LIMIT = 2;

    /** The longest a duration option may be (see {@link #positive}). */
    public static final Duration MAX_DURATION = Duration.ofDays(365);

    public DataPlaneOptions {
        positive("max_snapshot_age", maxSnapshotAge);
        if (controlPlaneCadence != null) {
            positive("control_plane_cadence", controlPlaneCadence);
        }
        if (!(boundedLoadEpsilon >= 0) || Double.isInfinite(boundedLoadEpsilon)) {
            throw new IllegalArgumentException("bounded_load_epsilon: " + boundedLoadEpsilon + " (expected: >= 0)");
        }
        atLeast("bounded_load_min_in_flight", boundedLoadMinInFlight, 1);
        atLeast("max_walk", maxWalk, 1);
        if (recentKeys < 1 << 10 || recentKeys > 1 << 24 || Integer.bitCount(recentKeys) != 1) {
            throw new IllegalArgumentException("recent_keys: " + recentKeys
                    + " (expected: a power of two from 1024 to 16777216)");
        }
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
        if (!(inFlightPerCapacity > 1)) {
            throw new IllegalArgumentException("in_flight_per_capacity: " + inFlightPerCapacity
                    + " (expected: a number > 1, or .inf for max_in_flight_per_engine alone)");
        }
        if (!(priorityReserve >= 0 && priorityReserve < 1)) {
            throw new IllegalArgumentException("priority_reserve: " + priorityReserve + " (expected: in [0, 1))");
        }
        positive("shed_retry_after", shedRetryAfter);
        positive("unavailable_retry_after", unavailableRetryAfter);
        if (listener == null) {
            throw new IllegalArgumentException("listener: missing (expected: DataPlaneListener.NONE at least)");
        }
    }

    /**
     * Snapshot age limit 5 min, ε 0.25 (never below 8 in flight), walk 8, eject after 5 failures for
     * 30 s × k (cap 300 s, +10% jitter, ≤ 10% of a class), TTFT outlier at 5× prediction, 3 attempts,
     * back-off 25 ms … 1 s, 100 banked retries, in flight per engine three times what it holds at its allowance
     * (below the highest priority) and at most 1,024, retry-after 1 s (shed) and
     * 5 s (unavailable), default priority 0, shared prefixes not spread, seed 0.
     */
    public static DataPlaneOptions defaults() {
        return builder().build();
    }

    /** A builder starting from {@link #defaults()}. */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder starting from these options. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.maxSnapshotAge = maxSnapshotAge;
        b.boundedLoadEpsilon = boundedLoadEpsilon;
        b.boundedLoadMinInFlight = boundedLoadMinInFlight;
        b.maxWalk = maxWalk;
        b.consecutiveFailures = consecutiveFailures;
        b.ejectionBase = ejectionBase;
        b.ejectionMax = ejectionMax;
        b.ejectionJitter = ejectionJitter;
        b.maxEjectedFraction = maxEjectedFraction;
        b.ttftOutlierFactor = ttftOutlierFactor;
        b.ttftPredictor = ttftPredictor;
        b.maxAttempts = maxAttempts;
        b.retryBackoffBase = retryBackoffBase;
        b.retryBackoffMax = retryBackoffMax;
        b.retryTokenCap = retryTokenCap;
        b.maxInFlightPerEngine = maxInFlightPerEngine;
        b.inFlightPerCapacity = inFlightPerCapacity;
        b.priorityReserve = priorityReserve;
        b.shedRetryAfter = shedRetryAfter;
        b.unavailableRetryAfter = unavailableRetryAfter;
        b.defaultPriority = defaultPriority;
        b.spreadSharedPrefixes = spreadSharedPrefixes;
        b.spacePrefills = spacePrefills;
        b.recentKeys = recentKeys;
        b.controlPlaneCadence = controlPlaneCadence;
        b.seed = seed;
        b.listener = listener;
        return b;
    }

    /** Builds {@link DataPlaneOptions}; every setter names the record component it sets. */
    public static final class Builder {
        private Duration maxSnapshotAge = Duration.ofMinutes(5);
        private Duration controlPlaneCadence;
        private double boundedLoadEpsilon = 0.25;
        private int boundedLoadMinInFlight = 8;
        private int maxWalk = 8;
        private int consecutiveFailures = 5;
        private Duration ejectionBase = Duration.ofSeconds(30);
        private Duration ejectionMax = Duration.ofSeconds(300);
        private double ejectionJitter = 0.1;
        private double maxEjectedFraction = 0.1;
        private double ttftOutlierFactor = 5.0;
        private TtftPredictor ttftPredictor = TtftPredictor.ENGINE_LATENCY;
        private int maxAttempts = 3;
        private Duration retryBackoffBase = Duration.ofMillis(25);
        private Duration retryBackoffMax = Duration.ofSeconds(1);
        private double retryTokenCap = 100;
        private int maxInFlightPerEngine = 1024;
        private double inFlightPerCapacity = 3;
        private double priorityReserve = 0.25;
        private Duration shedRetryAfter = Duration.ofSeconds(1);
        private Duration unavailableRetryAfter = Duration.ofSeconds(5);
        private int defaultPriority = 0;
        private boolean spreadSharedPrefixes = false;
        private boolean spacePrefills = true;
        private int recentKeys = 1 << 18;
        private long seed = 0L;
        private DataPlaneListener listener = DataPlaneListener.NONE;

        private Builder() {
        }

        /** Sets {@link DataPlaneOptions#maxSnapshotAge()}. */
        public Builder maxSnapshotAge(Duration value) {
            this.maxSnapshotAge = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#boundedLoadEpsilon()}. */
        public Builder boundedLoadEpsilon(double value) {
            this.boundedLoadEpsilon = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#boundedLoadMinInFlight()}. */
        public Builder boundedLoadMinInFlight(int value) {
            this.boundedLoadMinInFlight = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#maxWalk()}. */
        public Builder maxWalk(int value) {
            this.maxWalk = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#consecutiveFailures()}. */
        public Builder consecutiveFailures(int value) {
            this.consecutiveFailures = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#ejectionBase()}. */
        public Builder ejectionBase(Duration value) {
            this.ejectionBase = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#ejectionMax()}. */
        public Builder ejectionMax(Duration value) {
            this.ejectionMax = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#ejectionJitter()}. */
        public Builder ejectionJitter(double value) {
            this.ejectionJitter = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#maxEjectedFraction()}. */
        public Builder maxEjectedFraction(double value) {
            this.maxEjectedFraction = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#ttftOutlierFactor()}. */
        public Builder ttftOutlierFactor(double value) {
            this.ttftOutlierFactor = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#ttftPredictor()}. */
        public Builder ttftPredictor(TtftPredictor value) {
            this.ttftPredictor = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#maxAttempts()}. */
        public Builder maxAttempts(int value) {
            this.maxAttempts = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#retryBackoffBase()}. */
        public Builder retryBackoffBase(Duration value) {
            this.retryBackoffBase = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#retryBackoffMax()}. */
        public Builder retryBackoffMax(Duration value) {
            this.retryBackoffMax = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#retryTokenCap()}. */
        public Builder retryTokenCap(double value) {
            this.retryTokenCap = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#maxInFlightPerEngine()}. */
        public Builder maxInFlightPerEngine(int value) {
            this.maxInFlightPerEngine = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#inFlightPerCapacity()}. */
        public Builder inFlightPerCapacity(double value) {
            this.inFlightPerCapacity = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#priorityReserve()}. */
        public Builder priorityReserve(double value) {
            this.priorityReserve = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#shedRetryAfter()}. */
        public Builder shedRetryAfter(Duration value) {
            this.shedRetryAfter = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#unavailableRetryAfter()}. */
        public Builder unavailableRetryAfter(Duration value) {
            this.unavailableRetryAfter = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#defaultPriority()}. */
        public Builder defaultPriority(int value) {
            this.defaultPriority = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#seed()}. */
        public Builder seed(long value) {
            this.seed = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#spreadSharedPrefixes()}. */
        public Builder spreadSharedPrefixes(boolean value) {
            this.spreadSharedPrefixes = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#spacePrefills()}. */
        public Builder spacePrefills(boolean value) {
            this.spacePrefills = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#recentKeys()}. */
        public Builder recentKeys(int value) {
            this.recentKeys = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#controlPlaneCadence()}. */
        public Builder controlPlaneCadence(Duration value) {
            this.controlPlaneCadence = value;
            return this;
        }

        /** Sets {@link DataPlaneOptions#listener()}. */
        public Builder listener(DataPlaneListener value) {
            this.listener = value;
            return this;
        }

        /** The options; throws {@link IllegalArgumentException} naming the first invalid field. */
        public DataPlaneOptions build() {
            return new DataPlaneOptions(maxSnapshotAge, boundedLoadEpsilon, boundedLoadMinInFlight, maxWalk,
                    consecutiveFailures, ejectionBase, ejectionMax, ejectionJitter, maxEjectedFraction,
                    ttftOutlierFactor, ttftPredictor, maxAttempts, retryBackoffBase, retryBackoffMax, retryTokenCap,
                    maxInFlightPerEngine, inFlightPerCapacity, priorityReserve, shedRetryAfter, unavailableRetryAfter, defaultPriority, spreadSharedPrefixes, spacePrefills,
                    recentKeys, controlPlaneCadence, seed, listener);
        }
    }

    /**
     * A duration is positive and at most a year: every deadline is now + duration in nanoseconds, which a few centuries
     * overflow, and no option needs more.
     */
    private static void positive(String field, Duration d) {
        if (d == null || d.isNegative() || d.isZero() || d.compareTo(MAX_DURATION) > 0) {
            throw new IllegalArgumentException(field + ": " + (d == null ? "missing" : d.toMillis() + "ms")
                    + " (expected: a positive duration of at most 365 days)");
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
