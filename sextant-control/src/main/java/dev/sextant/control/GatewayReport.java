package dev.sextant.control;

import dev.sextant.request.ReuseTimes;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;

/**
 * What one gateway of a gateway cluster saw in one report interval: the requests that arrived per class, and per
 * engine how its attempts ended and how long they took, and the round trips it measured to engine clusters.
 * Latencies are as the gateway sees them, network included.
 *
 * @param gateway         the gateway cluster id, non-empty
 * @param instance        which gateway process of the cluster sent it (a cluster's demand is the sum over its
 *                        processes), non-null; empty when the cluster has one
 * @param atNanos         when the control loop received it, on the loop's ticker
 * @param intervalSeconds the interval the report covers, seconds, &gt; 0
 * @param arrivals        class id → requests classified into that class in the interval (shed ones included),
 *                        ≥ 0
 * @param engines         engine id → the attempts that ended on it in the interval
 * @param roundTrips      engine cluster id → round trips measured to it in the interval
 * @param reuse           class id → the times from the end of a conversation's request to its next request, counted
 *                        in the buckets of {@link ReuseTimes} ({@code BUCKETS} counts ≥ 0)
 * @param inFlight        engine id → requests this gateway had placed on it and not seen end when it made the report,
 *                        ≥ 0 (an engine it lists nothing for: none); null when the gateway does not report them
 */
public record GatewayReport(String gateway, String instance, long atNanos, double intervalSeconds, Map<String, Long> arrivals,
                            Map<String, EngineOutcomes> engines, Map<String, RoundTrip> roundTrips,
                            Map<String, long[]> reuse, Map<String, Long> inFlight) {

    /** A report without requests in flight. */
    public GatewayReport(String gateway, String instance, long atNanos, double intervalSeconds,
                         Map<String, Long> arrivals, Map<String, EngineOutcomes> engines,
                         Map<String, RoundTrip> roundTrips, Map<String, long[]> reuse) {
        this(gateway, instance, atNanos, intervalSeconds, arrivals, engines, roundTrips, reuse, null);
    }

    /** A report without reuse times. */
    public GatewayReport(String gateway, String instance, long atNanos, double intervalSeconds,
                         Map<String, Long> arrivals, Map<String, EngineOutcomes> engines,
                         Map<String, RoundTrip> roundTrips) {
        this(gateway, instance, atNanos, intervalSeconds, arrivals, engines, roundTrips, Map.of(), null);
    }

    public GatewayReport {
        if (gateway == null || gateway.isEmpty()) {
            throw new IllegalArgumentException("gateway: '" + gateway + "' (expected: a gateway cluster id)");
        }
        if (instance == null) {
            throw new IllegalArgumentException("instance: null (expected: a gateway process id, or empty)");
        }
        if (!(intervalSeconds > 0) || Double.isInfinite(intervalSeconds)) {
            throw new IllegalArgumentException("interval_seconds: " + intervalSeconds + " (expected: a finite number > 0)");
        }
        arrivals = counts(arrivals, "arrivals");
        engines = sorted(engines);
        roundTrips = sorted(roundTrips);
        reuse = sorted(reuse);
        if (inFlight != null) {
            inFlight = counts(inFlight, "in_flight");
        }
        reuse.forEach((c, counts) -> {
            if (counts == null || counts.length != ReuseTimes.BUCKETS) {
                throw new IllegalArgumentException("reuse." + c + ": expected " + ReuseTimes.BUCKETS + " counts");
            }
            for (int i = 0; i < counts.length; i++) {
                if (counts[i] < 0) {
                    throw new IllegalArgumentException("reuse." + c + "[" + i + "]: " + counts[i]
                            + " (expected: a whole number >= 0)");
                }
            }
        });
    }

    /** {@code m} sorted, each of its counts checked to be a whole number ≥ 0 ({@code field} names them in the error). */
    private static Map<String, Long> counts(Map<String, Long> m, String field) {
        Map<String, Long> out = sorted(m);
        out.forEach((k, n) -> {
            if (n == null || n < 0) {
                throw new IllegalArgumentException(field + "." + k + ": " + n + " (expected: a whole number >= 0)");
            }
        });
        return out;
    }

    private static <V> Map<String, V> sorted(Map<String, V> m) {
        return m == null ? Map.of() : Collections.unmodifiableMap(new TreeMap<>(m));
    }

    /**
     * A mean of {@code count} observations, ms.
     *
     * @param ms    the mean, finite and ≥ 0; NaN exactly when {@code count} is 0
     * @param count observations, ≥ 0
     */
    public record Mean(double ms, long count) {
        /** No observation. */
        public static final Mean NONE = new Mean(Double.NaN, 0);

        public Mean {
            if (count < 0) {
                throw new IllegalArgumentException("count: " + count + " (expected: >= 0)");
            }
            if (count == 0) {
                ms = Double.NaN;
            } else if (!(ms >= 0) || Double.isInfinite(ms)) {
                throw new IllegalArgumentException("ms: " + ms + " (expected: a finite number >= 0)");
            }
        }

        /** The sum of the observations, ms (0 without any). */
        public double sum() {
            return count == 0 ? 0 : ms * count;
        }
    }

    /**
     * How the attempts on one engine ended in the interval. Every count is ≥ 0; each attempt counts once in
     * {@code requests} and once in exactly one of successes, connect errors, timeouts, server errors and busy
     * (a client's cancellation in none).
     *
     * @param requests      attempts that ended
     * @param successes     complete answers (2xx, or the engine's 4xx for a bad request: it did its work)
     * @param connectErrors no connection could be made
     * @param timeouts      no first byte within the gateway's timeout
     * @param serverErrors  5xx, or the connection closed before the answer was complete
     * @param busy          429 or 503 from the engine alone (it is full, not broken)
     * @param ttft          from the attempt leaving the gateway to its first response byte
     * @param tbt           between streamed chunks
     * @param e2e           from the attempt leaving the gateway to its last byte, successes only
     * @param connect       opening a new connection to the engine
     * @param probes        health probes of the engine
     * @param probeFailures of those, the ones that failed
     */
    public record EngineOutcomes(long requests, long successes, long connectErrors, long timeouts, long serverErrors,
                                 long busy, Mean ttft, Mean tbt, Mean e2e, Mean connect, long probes,
                                 long probeFailures) {
        public EngineOutcomes {
            count("requests", requests);
            count("successes", successes);
            count("connect_errors", connectErrors);
            count("timeouts", timeouts);
            count("server_errors", serverErrors);
            count("busy", busy);
            count("probes", probes);
            count("probe_failures", probeFailures);
            ttft = ttft == null ? Mean.NONE : ttft;
            tbt = tbt == null ? Mean.NONE : tbt;
            e2e = e2e == null ? Mean.NONE : e2e;
            connect = connect == null ? Mean.NONE : connect;
        }

        private static void count(String field, long v) {
            if (v < 0) {
                throw new IllegalArgumentException(field + ": " + v + " (expected: a whole number >= 0)");
            }
        }

        /** Attempts that failed: connect errors, timeouts and server errors. */
        public long errors() {
            return connectErrors + timeouts + serverErrors;
        }
    }

    /**
     * Round trips measured to one engine cluster.
     *
     * @param minMs  the smallest, ms, finite ≥ 0
     * @param meanMs the mean, ms, ≥ minMs
     * @param count  how many, ≥ 1
     */
    public record RoundTrip(double minMs, double meanMs, long count) {
        public RoundTrip {
            if (!(minMs >= 0) || Double.isInfinite(minMs)) {
                throw new IllegalArgumentException("min: " + minMs + " (expected: a finite number >= 0)");
            }
            if (!(meanMs >= minMs) || Double.isInfinite(meanMs)) {
                throw new IllegalArgumentException("mean: " + meanMs + " (expected: a finite number >= min " + minMs + ")");
            }
            if (count < 1) {
                throw new IllegalArgumentException("count: " + count + " (expected: >= 1)");
            }
        }
    }
}
