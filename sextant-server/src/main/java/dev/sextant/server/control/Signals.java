package dev.sextant.server.control;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.signal.EngineMetrics;
import dev.sextant.signal.MetricsInterval;
import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Engine;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.logging.Logger;

/**
 * The control plane's signal path state: per engine the last scrape, missed scrapes, health and outlier penalty;
 * per gateway cluster the observed demand. Fed by scrapes and gateway reports, read by the policy loop. Time is
 * passed in (ns), so tests drive it.
 *
 * <p>Global outlier rule (DESIGN.md §5): at each evaluation an engine whose measured mean TTFT exceeds
 * {@code ttftFactor ×} its profile's TTFT at its planned utilization, or whose gateways saw more than
 * {@code errorLimit} of at least 5 requests fail, has its penalty halved (floor 0.1) with the reason; otherwise a
 * penalty recovers by 0.1 per evaluation until it is gone.
 */
final class Signals {
    private static final Logger LOG = Logger.getLogger(Signals.class.getName());
    static final double MIN_PENALTY = 0.1;
    static final double RECOVERY_STEP = 0.1;
    static final int MIN_REQUESTS_FOR_ERROR_RATE = 5;

    static final class EngineSignal {
        EngineMetrics last;
        long lastNanos;
        int misses;
        boolean healthy = true;
        double penalty = 1;
        String reason;
        double meanTtftMs = Double.NaN;
        long requests;
        long errors;
        double gatewayTtftMs = Double.NaN;
        String lastError;
    }

    private record Observed(Map<String, Double> rps, long atNanos) {
    }

    private final int missedScrapes;
    private final Map<String, EngineSignal> engines = new TreeMap<>();
    private final Map<String, Observed> demand = new HashMap<>();

    Signals(int missedScrapes) {
        this.missedScrapes = missedScrapes;
    }

    private EngineSignal engine(String id) {
        return engines.computeIfAbsent(id, k -> new EngineSignal());
    }

    /** A scrape of {@code engineId} succeeded at {@code nowNanos}. */
    synchronized void scraped(String engineId, EngineMetrics metrics, long nowNanos) {
        EngineSignal s = engine(engineId);
        if (s.last != null && nowNanos > s.lastNanos) {
            MetricsInterval i = MetricsInterval.between(s.last, metrics, (nowNanos - s.lastNanos) / 1e9);
            s.meanTtftMs = i.meanTtftSeconds() * 1000;
        }
        s.last = metrics;
        s.lastNanos = nowNanos;
        s.misses = 0;
        s.lastError = null;
        if (!s.healthy) {
            s.healthy = true;
            LOG.warning("engine " + engineId + " healthy again: its /metrics answers");
        }
    }

    /** A scrape of {@code engineId} failed. */
    synchronized void scrapeFailed(String engineId, String why) {
        EngineSignal s = engine(engineId);
        s.misses++;
        s.lastError = why;
        if (s.healthy && s.misses >= missedScrapes) {
            s.healthy = false;
            LOG.warning("engine " + engineId + " UNHEALTHY after " + s.misses + " missed scrapes: " + why);
        }
    }

    /**
     * A gateway's report (the JSON of {@code docs/servers.md}).
     *
     * @throws IllegalArgumentException naming the field when the report is malformed
     */
    synchronized void report(JsonNode r, Topology topology, long nowNanos) {
        JsonNode gw = r.get("gateway");
        if (gw == null || !gw.isTextual()) {
            throw new IllegalArgumentException("gateway: missing (expected: a gateway cluster id)");
        }
        if (topology.gatewayClusters().stream().noneMatch(g -> g.id().equals(gw.asText()))) {
            throw new IllegalArgumentException("gateway: '" + gw.asText() + "' (expected: a gateway cluster of the topology)");
        }
        // everything is checked before anything is applied: a report with one bad field changes nothing
        Map<String, Double> rps = new LinkedHashMap<>();
        JsonNode d = r.path("demand_rps");
        for (Iterator<Map.Entry<String, JsonNode>> it = d.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            rps.put(e.getKey(), finite(e.getValue(), "demand_rps." + e.getKey()));
        }
        record Counts(EngineSignal signal, long requests, long errors, double ttftMs) {
        }
        List<Counts> counts = new ArrayList<>();
        Set<String> known = new HashSet<>();
        topology.engines().forEach(en -> known.add(en.id()));
        for (Iterator<Map.Entry<String, JsonNode>> it = r.path("engines").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String at = "engines." + e.getKey();
            if (!e.getValue().isObject()) {
                throw new IllegalArgumentException(at + ": " + e.getValue() + " (expected: an object)");
            }
            long requests = count(e.getValue().get("requests"), at + ".requests");
            long errors = count(e.getValue().get("errors"), at + ".errors");
            JsonNode ttft = e.getValue().get("ttft_ms");
            double ttftMs = ttft == null || ttft.isNull() ? Double.NaN : finite(ttft, at + ".ttft_ms");
            if (known.contains(e.getKey())) {
                counts.add(new Counts(engine(e.getKey()), requests, errors, ttftMs));
            } // else an engine the topology no longer has (the gateway's snapshot is older): nothing to count it for
        }
        demand.put(gw.asText(), new Observed(rps, nowNanos));
        for (Counts c : counts) {
            c.signal.requests += c.requests;
            c.signal.errors += c.errors;
            if (!Double.isNaN(c.ttftMs)) {
                c.signal.gatewayTtftMs = c.ttftMs;
            }
        }
    }

    /** A report's number that must be finite and ≥ 0. */
    private static double finite(JsonNode n, String at) {
        if (n == null || !n.isNumber() || !(n.asDouble() >= 0) || Double.isInfinite(n.asDouble())) {
            throw new IllegalArgumentException(at + ": " + n + " (expected: a finite number >= 0)");
        }
        return n.asDouble();
    }

    /** A report's count: a whole number ≥ 0, 0 when absent. */
    private static long count(JsonNode n, String at) {
        if (n == null || n.isNull()) {
            return 0;
        }
        if (!n.isIntegralNumber() || !n.canConvertToLong() || n.asLong() < 0) {
            throw new IllegalArgumentException(at + ": " + n + " (expected: a whole number >= 0)");
        }
        return n.asLong();
    }

    /** Engine id → health (1 or 0 after too many missed scrapes). */
    synchronized Map<String, Double> health() {
        Map<String, Double> out = new TreeMap<>();
        engines.forEach((id, s) -> out.put(id, s.healthy ? 1.0 : 0.0));
        return out;
    }

    /** Applies the global outlier rule once (see the class comment); returns engine id → penalty &lt; 1. */
    synchronized Map<String, Double> evaluatePenalties(Topology topology, Snapshot current, double ttftFactor,
                                                       double errorLimit) {
        Map<String, Double> out = new TreeMap<>();
        for (Engine e : topology.engines()) {
            EngineSignal s = engine(e.id());
            String outlier = null;
            EngineState st = current == null ? null : current.engines().get(e.id());
            double rho = st == null ? 0 : Math.min(0.95, Math.max(0, st.utilization()));
            double predicted = e.profile().ttftMs(rho);
            if (!Double.isNaN(s.meanTtftMs) && s.meanTtftMs > ttftFactor * predicted) {
                outlier = String.format("TTFT %.0f ms > %.1f × profile %.0f ms at utilization %.2f", s.meanTtftMs,
                        ttftFactor, predicted, rho);
            } else if (s.requests >= MIN_REQUESTS_FOR_ERROR_RATE && s.errors > errorLimit * s.requests) {
                outlier = String.format("errors %d of %d gateway requests > %.0f%%", s.errors, s.requests,
                        errorLimit * 100);
            }
            s.meanTtftMs = Double.NaN;
            s.requests = 0;
            s.errors = 0;
            if (outlier != null) {
                double before = s.penalty;
                s.penalty = Math.max(MIN_PENALTY, s.penalty * 0.5);
                s.reason = outlier;
                if (s.penalty != before) {
                    LOG.warning("engine " + e.id() + " penalized to " + s.penalty + ": " + outlier);
                }
            } else if (s.penalty < 1) {
                s.penalty = Math.min(1, Math.round((s.penalty + RECOVERY_STEP) * 100) / 100.0);
                if (s.penalty >= 1) {
                    LOG.info("engine " + e.id() + " recovered; penalty lifted (was: " + s.reason + ")");
                    s.reason = null;
                }
            }
            if (s.penalty < 1) {
                out.put(e.id(), s.penalty);
            }
        }
        return out;
    }

    /**
     * The demand to solve for: per gateway cluster and class, the configured demand, the observed one (a report
     * younger than {@code maxAgeNanos}), or the larger of both.
     */
    synchronized Map<String, Map<String, Double>> demand(Topology t, String mode, long nowNanos, long maxAgeNanos) {
        Map<String, Map<String, Double>> out = new TreeMap<>();
        t.gatewayClusters().forEach(g -> {
            Map<String, Double> configured = t.demandRps().getOrDefault(g.id(), Map.of());
            Observed o = demand.get(g.id());
            boolean fresh = o != null && nowNanos - o.atNanos() <= maxAgeNanos;
            Map<String, Double> m = new TreeMap<>();
            for (TrafficClass c : t.classes()) {
                double conf = configured.getOrDefault(c.id(), 0.0);
                double obs = fresh ? o.rps().getOrDefault(c.id(), 0.0) : conf;
                double v = switch (mode) {
                    case "observed" -> fresh ? obs : conf;
                    case "configured" -> conf;
                    default -> Math.max(conf, obs);
                };
                if (v > 0) {
                    m.put(c.id(), v);
                }
            }
            out.put(g.id(), m);
        });
        return out;
    }

    /** For {@code /healthz}: engine id → {healthy, misses, penalty, reason, last scrape error}. */
    synchronized Map<String, Map<String, Object>> describe() {
        Map<String, Map<String, Object>> out = new TreeMap<>();
        engines.forEach((id, s) -> {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("healthy", s.healthy);
            m.put("missed_scrapes", s.misses);
            m.put("penalty", s.penalty);
            m.put("reason", s.reason);
            m.put("scrape_error", s.lastError);
            out.put(id, m);
        });
        return out;
    }
}
