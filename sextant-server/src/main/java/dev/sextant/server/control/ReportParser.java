package dev.sextant.server.control;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.control.GatewayReport;
import dev.sextant.request.ReuseTimes;
import dev.sextant.topology.Engine;
import dev.sextant.topology.EngineCluster;
import dev.sextant.topology.GatewayCluster;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * A gateway's {@code POST /v1/reports} body ({@code docs/servers.md}, "Signal reports") read into the control loop's
 * {@link GatewayReport}. The whole report is checked before any of it counts: the first field that is not what the
 * schema says is an {@link IllegalArgumentException} naming it ({@code engines.use-1.requests: -5 (expected: a whole
 * number >= 0)}), and the caller then gives the loop nothing. Classes, engines and engine clusters the topology does
 * not have (a gateway whose snapshot predates a topology change) are left out; the rest counts.
 *
 * <p>Mapping: {@code arrivals} per class, or, from a gateway that sends only {@code demand_rps}, round(demand_rps ×
 * interval_seconds); {@code busy} and {@code overloaded} (both a "too busy" answer of the engine) are the loop's
 * {@code busy}; {@code cancelled} attempts count in {@code requests} only; {@code errors} is checked but not used (it
 * is the sum of the three kinds of error); {@code reuse} per class, optional (a gateway that predates it sends none).
 */
final class ReportParser {
    /**
     * The largest count one report may carry: a million requests a second for twelve days. Far beyond any real
     * interval, and low enough that the loop's sums over reports cannot overflow.
     */
    static final long MAX_COUNT = 1_000_000_000_000L;
    /** The longest instance id. */
    static final int MAX_INSTANCE_LENGTH = 64;

    private static final String WHOLE = "a whole number >= 0";
    private static final String FINITE = "a finite number >= 0";

    private ReportParser() {
    }

    /**
     * The report in {@code body}, received at {@code atNanos} on the control loop's ticker, for {@code topology}.
     *
     * @throws IllegalArgumentException naming the first bad field (the gateway cluster unknown to the topology
     *                                  included)
     */
    static GatewayReport parse(JsonNode body, Topology topology, long atNanos) {
        if (body == null || !body.isObject()) {
            throw new IllegalArgumentException("report: " + body + " (expected: a JSON object)");
        }
        String gateway = gateway(body.get("gateway"), topology);
        String instance = instance(body.get("instance"));
        JsonNode intervalNode = body.get("interval_seconds");
        if (intervalNode == null || intervalNode.isNull()) {
            throw new IllegalArgumentException("interval_seconds: missing (expected: a finite number > 0)");
        }
        double interval = number(intervalNode, "interval_seconds");
        if (!(interval > 0)) {
            throw new IllegalArgumentException("interval_seconds: " + intervalNode + " (expected: a finite number > 0)");
        }
        Set<String> classes = new HashSet<>();
        topology.classes().stream().map(TrafficClass::id).forEach(classes::add);
        Map<String, Long> arrivals = arrivals(body, interval, classes);
        Set<String> engineIds = new HashSet<>();
        topology.engines().stream().map(Engine::id).forEach(engineIds::add);
        Map<String, GatewayReport.EngineOutcomes> engines = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : entries(body.get("engines"), "engines", "an object of engine id → outcomes")) {
            GatewayReport.EngineOutcomes o = outcomes(e.getValue(), "engines." + e.getKey());
            if (engineIds.contains(e.getKey())) {
                engines.put(e.getKey(), o);
            }
        }
        Set<String> clusters = new HashSet<>();
        topology.engineClusters().stream().map(EngineCluster::id).forEach(clusters::add);
        Map<String, GatewayReport.RoundTrip> roundTrips = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : entries(body.get("rtt_ms"), "rtt_ms",
                "an object of engine cluster id → round trips")) {
            GatewayReport.RoundTrip rt = roundTrip(e.getValue(), "rtt_ms." + e.getKey());
            if (clusters.contains(e.getKey())) {
                roundTrips.put(e.getKey(), rt);
            }
        }
        Map<String, long[]> reuse = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : entries(body.get("reuse"), "reuse",
                "an object of class id → " + ReuseTimes.BUCKETS + " counts")) {
            long[] counts = reuseCounts(e.getValue(), "reuse." + e.getKey());
            if (classes.contains(e.getKey())) {
                reuse.put(e.getKey(), counts);
            }
        }
        Map<String, Long> inFlight = null;
        if (body.get("in_flight") != null && !body.get("in_flight").isNull()) {
            inFlight = new LinkedHashMap<>();
            for (Map.Entry<String, JsonNode> e : entries(body.get("in_flight"), "in_flight",
                    "an object of engine id → requests in flight")) {
                JsonNode v = e.getValue();
                if (v == null || v.isNull()) {
                    throw new IllegalArgumentException("in_flight." + e.getKey() + ": null (expected: " + WHOLE + ")");
                }
                long n = count(v, "in_flight." + e.getKey());
                if (engineIds.contains(e.getKey())) {
                    inFlight.put(e.getKey(), n);
                }
            }
        }
        return new GatewayReport(gateway, instance, atNanos, interval, arrivals, engines, roundTrips, reuse, inFlight);
    }

    /** A class's reuse-time counts: an array of exactly {@link ReuseTimes#BUCKETS} whole numbers ≥ 0. */
    private static long[] reuseCounts(JsonNode n, String at) {
        if (n == null || !n.isArray() || n.size() != ReuseTimes.BUCKETS) {
            throw new IllegalArgumentException(at + ": " + abbreviated(n) + " (expected: an array of "
                    + ReuseTimes.BUCKETS + " whole numbers >= 0)");
        }
        long[] out = new long[ReuseTimes.BUCKETS];
        for (int i = 0; i < out.length; i++) {
            JsonNode v = n.get(i);
            if (v == null || v.isNull()) {
                throw new IllegalArgumentException(at + "[" + i + "]: null (expected: " + WHOLE + ")");
            }
            out[i] = count(v, at + "[" + i + "]");
        }
        return out;
    }

    private static String gateway(JsonNode n, Topology topology) {
        if (n == null || n.isNull()) {
            throw new IllegalArgumentException("gateway: missing (expected: a gateway cluster id)");
        }
        if (!n.isTextual() || n.asText().isEmpty()) {
            throw new IllegalArgumentException("gateway: " + n + " (expected: a gateway cluster id)");
        }
        String id = n.asText();
        if (topology.gatewayClusters().stream().map(GatewayCluster::id).noneMatch(id::equals)) {
            throw new IllegalArgumentException("gateway: '" + id + "' (expected: a gateway cluster of the topology)");
        }
        return id;
    }

    private static String instance(JsonNode n) {
        if (n == null || n.isNull()) {
            return "";
        }
        String expected = " (expected: an id of 1 to " + MAX_INSTANCE_LENGTH
                + " letters, digits, '.', '_', ':' or '-')";
        if (!n.isTextual() || n.asText().isEmpty() || n.asText().length() > MAX_INSTANCE_LENGTH) {
            throw new IllegalArgumentException("instance: " + abbreviated(n) + expected);
        }
        for (char c : n.asText().toCharArray()) {
            boolean ok = c < 128 && (Character.isLetterOrDigit(c) || c == '.' || c == '_' || c == ':' || c == '-');
            if (!ok) {
                throw new IllegalArgumentException("instance: " + abbreviated(n) + expected);
            }
        }
        return n.asText();
    }

    /** Arrivals per class of the topology: {@code arrivals}, else from {@code demand_rps} (checked either way). */
    private static Map<String, Long> arrivals(JsonNode body, double interval, Set<String> classes) {
        Map<String, Double> rps = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : entries(body.get("demand_rps"), "demand_rps",
                "an object of class id → req/s")) {
            rps.put(e.getKey(), number(e.getValue(), "demand_rps." + e.getKey()));
        }
        Map<String, Long> out = new LinkedHashMap<>();
        JsonNode given = body.get("arrivals");
        if (given != null && !given.isNull()) {
            for (Map.Entry<String, JsonNode> e : entries(given, "arrivals", "an object of class id → requests")) {
                long n = count(e.getValue(), "arrivals." + e.getKey());
                if (classes.contains(e.getKey())) {
                    out.put(e.getKey(), n);
                }
            }
            return out;
        }
        rps.forEach((c, r) -> {
            double n = Math.rint(r * interval);
            if (n > MAX_COUNT) {
                throw new IllegalArgumentException("demand_rps." + c + ": " + r + " (expected: at most " + MAX_COUNT
                        + " requests in the report's " + interval + " s)");
            }
            if (classes.contains(c)) {
                out.put(c, (long) n);
            }
        });
        return out;
    }

    private static GatewayReport.EngineOutcomes outcomes(JsonNode n, String at) {
        if (!n.isObject()) {
            throw new IllegalArgumentException(at + ": " + abbreviated(n) + " (expected: an object)");
        }
        long requests = count(n.get("requests"), at + ".requests");
        long successes = count(n.get("successes"), at + ".successes");
        long connectErrors = count(n.get("connect_errors"), at + ".connect_errors");
        long timeouts = count(n.get("timeouts"), at + ".timeouts");
        long serverErrors = count(n.get("server_errors"), at + ".server_errors");
        long busy = count(n.get("busy"), at + ".busy");
        long overloaded = count(n.get("overloaded"), at + ".overloaded");
        long cancelled = count(n.get("cancelled"), at + ".cancelled");
        count(n.get("errors"), at + ".errors");
        long probes = count(n.get("probes"), at + ".probes");
        long probeFailures = count(n.get("probe_failures"), at + ".probe_failures");
        GatewayReport.Mean ttft = mean(n, at, "ttft");
        GatewayReport.Mean tbt = mean(n, at, "tbt");
        GatewayReport.Mean e2e = mean(n, at, "e2e");
        GatewayReport.Mean connect = mean(n, at, "connect");
        long kinds = successes + connectErrors + timeouts + serverErrors + busy + overloaded + cancelled;
        if (kinds > requests) {
            throw new IllegalArgumentException(at + ".requests: " + requests + " (expected: >= " + kinds
                    + ", the sum of successes, connect_errors, timeouts, server_errors, busy, overloaded and cancelled)");
        }
        if (probeFailures > probes) {
            throw new IllegalArgumentException(at + ".probe_failures: " + probeFailures + " (expected: <= probes, "
                    + probes + ")");
        }
        return new GatewayReport.EngineOutcomes(requests, successes, connectErrors, timeouts, serverErrors,
                busy + overloaded, ttft, tbt, e2e, connect, probes, probeFailures);
    }

    /** {@code <name>_ms} and {@code <name>_count}: the mean is required when the count is above 0. */
    private static GatewayReport.Mean mean(JsonNode n, String at, String name) {
        long count = count(n.get(name + "_count"), at + "." + name + "_count");
        JsonNode ms = n.get(name + "_ms");
        if (ms == null || ms.isNull()) {
            if (count > 0) {
                throw new IllegalArgumentException(at + "." + name + "_ms: missing (expected: " + FINITE + " when "
                        + name + "_count is " + count + ")");
            }
            return GatewayReport.Mean.NONE;
        }
        double v = number(ms, at + "." + name + "_ms");
        return count == 0 ? GatewayReport.Mean.NONE : new GatewayReport.Mean(v, count);
    }

    private static GatewayReport.RoundTrip roundTrip(JsonNode n, String at) {
        if (!n.isObject()) {
            throw new IllegalArgumentException(at + ": " + abbreviated(n) + " (expected: an object of min, mean, count)");
        }
        JsonNode minNode = required(n, "min", at, FINITE);
        JsonNode meanNode = required(n, "mean", at, FINITE);
        double min = number(minNode, at + ".min");
        double mean = number(meanNode, at + ".mean");
        if (mean < min) {
            throw new IllegalArgumentException(at + ".mean: " + meanNode + " (expected: >= min " + minNode + ")");
        }
        long count = count(required(n, "count", at, "a whole number >= 1"), at + ".count");
        if (count < 1) {
            throw new IllegalArgumentException(at + ".count: " + count + " (expected: a whole number >= 1)");
        }
        return new GatewayReport.RoundTrip(min, mean, count);
    }

    private static JsonNode required(JsonNode n, String field, String at, String expected) {
        JsonNode v = n.get(field);
        if (v == null || v.isNull()) {
            throw new IllegalArgumentException(at + "." + field + ": missing (expected: " + expected + ")");
        }
        return v;
    }

    /** The fields of an optional object ({@code at}: its name in messages); none when it is absent. */
    private static Iterable<Map.Entry<String, JsonNode>> entries(JsonNode n, String at, String expected) {
        if (n == null || n.isNull()) {
            return java.util.List.of();
        }
        if (!n.isObject()) {
            throw new IllegalArgumentException(at + ": " + abbreviated(n) + " (expected: " + expected + ")");
        }
        return n::fields;
    }

    /** A number that must be finite and ≥ 0. */
    private static double number(JsonNode n, String at) {
        if (n == null || !n.isNumber() || !(n.asDouble() >= 0) || Double.isInfinite(n.asDouble())) {
            throw new IllegalArgumentException(at + ": " + abbreviated(n) + " (expected: " + FINITE + ")");
        }
        return n.asDouble();
    }

    /** A count: a whole number in [0, {@link #MAX_COUNT}], 0 when absent. */
    private static long count(JsonNode n, String at) {
        if (n == null || n.isNull()) {
            return 0;
        }
        if (!n.isIntegralNumber() || !n.canConvertToLong() || n.asLong() < 0) {
            throw new IllegalArgumentException(at + ": " + abbreviated(n) + " (expected: " + WHOLE + ")");
        }
        if (n.asLong() > MAX_COUNT) {
            throw new IllegalArgumentException(at + ": " + n + " (expected: " + WHOLE + ", at most " + MAX_COUNT + ")");
        }
        return n.asLong();
    }

    /** A value as JSON text, cut short past 40 characters: a message repeats what was sent, not all of it. */
    private static String abbreviated(JsonNode n) {
        String s = String.valueOf(n);
        return s.length() <= 40 ? s : s.substring(0, 40) + "…";
    }
}
