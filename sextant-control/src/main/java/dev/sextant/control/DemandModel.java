package dev.sextant.control;

import static dev.sextant.control.Explanations.rps;

import dev.sextant.topology.GatewayCluster;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * The demand per (gateway cluster, class) the optimizer plans for, from the gateways' reports of their arrivals
 * (docs/control-loop.md, "Demand"): each gateway process's {@link DemandTracker} per class, their sum per cluster, the
 * topology's demand as a prior and as the floor of a young estimate, and a recent peak held.
 */
final class DemandModel {
    /** Gateway processes silent this much longer than their cluster's latest report no longer count. */
    static final long INSTANCE_EXPIRY_NANOS = 30_000_000_000L;

    private final ControlOptions options;
    /** gateway cluster → instance → class → demand. */
    private final Map<String, Map<String, Map<String, DemandTracker>>> trackers = new HashMap<>();
    /** (gateway cluster, class) whose reports have reached or refuted the configured demand: it is no floor there. */
    private final Set<String> settled = new HashSet<>();
    /**
     * Per (gateway cluster, class): the lower bounds of its demand estimates within the hold, as [time, req/s], each
     * below every older one left (a sliding maximum: the first is the most within the hold).
     */
    private final Map<String, ArrayDeque<double[]>> recentLows = new HashMap<>();
    /** Estimates the last {@link #planned} raised to a recent peak, by (gateway cluster, class): what they were. */
    private final Map<String, DemandEstimate> heldFrom = new HashMap<>();
    /** Per (gateway cluster, class): its falls below its held peak and returns to it. */
    private final Map<String, Returns> returns = new HashMap<>();

    /** How a (gateway cluster, class)'s estimate moves about its held peak. */
    private static final class Returns {
        /** Below the peak beyond their noise since it last was at it. */
        boolean below;
        /** The last two times it came back to the peak after such a fall; MIN_VALUE: not yet. */
        long last = Long.MIN_VALUE;
        long beforeLast = Long.MIN_VALUE;
    }

    DemandModel(ControlOptions options) {
        this.options = Objects.requireNonNull(options, "options");
    }

    /** Forgets the gateway clusters and the (gateway cluster, class) pairs {@code t} no longer has. */
    void retain(Topology t) {
        Set<String> gateways = new HashSet<>();
        t.gatewayClusters().forEach(g -> gateways.add(g.id()));
        trackers.keySet().retainAll(gateways);
        Set<String> pairs = new HashSet<>();
        t.gatewayClusters().forEach(g -> t.classes().forEach(c -> pairs.add(pair(g.id(), c.id()))));
        recentLows.keySet().retainAll(pairs);
        returns.keySet().retainAll(pairs);
    }

    /**
     * Takes the arrivals of report {@code r} for every class of {@code t} (a class the report does not name arrived
     * 0 times); true when an estimate moved: it now averages fewer reports than before plus this one, or a first
     * report of a class counted arrivals.
     */
    boolean report(GatewayReport r, Topology t) {
        long window = options.demandWindow().toNanos();
        Map<String, DemandTracker> mine = trackers.computeIfAbsent(r.gateway(), k -> new HashMap<>())
                .computeIfAbsent(r.instance(), k -> new HashMap<>());
        boolean moved = false;
        for (TrafficClass c : t.classes()) {
            long n = r.arrivals().getOrDefault(c.id(), 0L);
            DemandTracker d = mine.get(c.id());
            boolean first = d == null;
            if (first) {
                d = new DemandTracker();
                mine.put(c.id(), d);
            }
            if (d.report(n, r.intervalSeconds(), r.atNanos(), window) || first && n > 0) {
                moved = true;
            }
        }
        return moved;
    }

    /** What a plan made at {@code now} is for: the floors and the held peaks of {@link #estimates} applied. */
    Map<String, Map<String, DemandEstimate>> planned(Topology t, long now) {
        heldFrom.clear();
        return estimates(t, true, now);
    }

    /** What the reports show at {@code now}, without a floor or a held peak: the load that came. */
    Map<String, Map<String, DemandEstimate>> reported(Topology t, long now) {
        return estimates(t, false, now);
    }

    /** True when the last {@link #planned} raised some estimate to a recent peak. */
    boolean anyHeld() {
        return !heldFrom.isEmpty();
    }

    /**
     * The demand per gateway cluster and class the optimizer plans for. With {@code floors}, the configured demand is
     * the floor of an observed demand below it while the reports cannot yet tell a ramp from a level: a cluster
     * starting up reports a fraction of its demand in its first seconds, and a plan for that fraction fills the
     * fastest engines with what arrives a report later. The floor ends, for good, once the reports have reached the
     * configured demand (within the agreement's tolerance) or refute it (even at the upper bound of their trend the
     * demand stays below it for a demand window, {@link DemandTracker#upperRate}), and a demand window after the
     * cluster's first report of the class whatever they say.
     */
    private Map<String, Map<String, DemandEstimate>> estimates(Topology topology, boolean floors, long now) {
        Map<String, Map<String, DemandEstimate>> out = new TreeMap<>();
        long window = options.demandWindow().toNanos();
        for (GatewayCluster g : topology.gatewayClusters()) {
            Map<String, Double> configured = topology.demandRps().getOrDefault(g.id(), Map.of());
            Map<String, Map<String, DemandTracker>> instances = trackers.getOrDefault(g.id(), Map.of());
            long newest = Long.MIN_VALUE;
            for (Map<String, DemandTracker> byClass : instances.values()) {
                for (DemandTracker d : byClass.values()) {
                    newest = Math.max(newest, d.lastAt());
                }
            }
            Map<String, DemandEstimate> row = new TreeMap<>();
            for (TrafficClass c : topology.classes()) {
                double conf = configured.getOrDefault(c.id(), 0.0);
                double rate = 0;
                double var = 0;
                int live = 0;
                long count = 0;
                double seconds = 0;
                double upper = 0;
                long first = Long.MAX_VALUE;
                for (Map<String, DemandTracker> byClass : instances.values()) {
                    DemandTracker d = byClass.get(c.id());
                    if (d == null || Double.isNaN(d.rate()) || d.lastAt() < newest - INSTANCE_EXPIRY_NANOS) {
                        continue;
                    }
                    live++;
                    rate += d.rate();
                    double se = d.standardError();
                    var += Double.isNaN(se) ? 0 : se * se;
                    seconds = Math.max(seconds, d.windowSeconds());
                    count += d.count();
                    upper += d.upperRate(window / 1e9);
                    first = Math.min(first, d.firstAt());
                }
                DemandEstimate e;
                if (!options.observedDemand() || live == 0) {
                    e = new DemandEstimate(conf, conf, 0, Double.NaN, options.observedDemand()
                            ? "configured (no report yet)" : "configured (demand from reports is off)");
                } else {
                    double observed = Math.min(Topology.MAX_RPS, rate);
                    String seen = String.format(Locale.ROOT, "%d requests in %.0f s of reports from %d gateway "
                            + "process%s", count, seconds, live, live == 1 ? "" : "es");
                    String key = pair(g.id(), c.id());
                    if (observed >= (1 - DemandTracker.AGREEMENT_RELATIVE) * conf || upper < conf) {
                        settled.add(key); // reached or refuted: the reports' own from now on
                    }
                    if (floors && observed < conf && !settled.contains(key) && newest - first < window) {
                        e = new DemandEstimate(conf, conf, observed, Math.sqrt(var), String.format(Locale.ROOT,
                                "configured, until the reports settle: %s so far show %s (a ramp, or too few reports "
                                + "to tell one from a level)", seen, rps(observed)));
                    } else {
                        e = new DemandEstimate(observed, conf, observed, Math.sqrt(var), String.format(Locale.ROOT,
                                "observed: %s; configured %s%s", seen, rps(conf), rate > Topology.MAX_RPS
                                        ? "; taken as " + rps(Topology.MAX_RPS) + ", the most a topology may say" : ""));
                    }
                }
                if (floors && live > 0 && options.observedDemand() && !options.demandHold().isZero()) {
                    e = held(pair(g.id(), c.id()), e, now);
                }
                if (e.rps() > 0 || configured.containsKey(c.id())) {
                    row.put(c.id(), e);
                }
            }
            out.put(g.id(), row);
        }
        return out;
    }

    /**
     * {@code e} (a demand the reports show), raised to the most they showed within {@link ControlOptions#demandHold()}:
     * of each estimate its lower bound (two standard errors below), where that is above the present estimate's upper
     * bound, so that a steady demand's noise raises nothing and a burst that recurs within the hold, or a level that
     * fell less than a hold ago, does (docs/control-loop.md, "Demand").
     */
    private DemandEstimate held(String key, DemandEstimate e, long now) {
        long hold = options.demandHold().toNanos();
        ArrayDeque<double[]> q = recentLows.computeIfAbsent(key, k -> new ArrayDeque<>());
        double se = Double.isNaN(e.standardError()) ? 0 : e.standardError();
        double low = e.reportedRps() - 2 * se;
        while (!q.isEmpty() && q.peekLast()[1] <= low) {
            q.pollLast();
        }
        // one entry a second at most, however often the estimates are asked for (each explanation asks)
        if (q.isEmpty() || now - (long) q.peekLast()[0] >= 1_000_000_000L) {
            q.addLast(new double[] {now, low});
        }
        while (q.peekFirst()[0] < now - hold) {
            q.pollFirst();
        }
        double peak = q.peekFirst()[1];
        boolean below = peak > e.reportedRps() + 2 * se;
        Returns r = returns.computeIfAbsent(key, k -> new Returns());
        if (peak <= low && r.below) {
            // back at the peak, beyond noise, after a fall below it
            r.beforeLast = r.last;
            r.last = now;
        }
        if (below || peak <= low) {
            r.below = below;
        }
        // held only where the past level is above the present beyond both their noise: its lower bound above the
        // present's upper bound
        if (!(peak > e.rps() && below)) {
            return e;
        }
        heldFrom.put(key, e);
        return new DemandEstimate(peak, e.configuredRps(), e.reportedRps(), e.standardError(), e.why()
                + String.format(Locale.ROOT, "; planned for %s, the most the reports showed in the last %s (its "
                + "lower bound), until %s passes without it", rps(peak), Durations.human(hold), Durations.human(hold)));
    }

    /** The key of a (gateway cluster, class) pair in the demand's own maps. */
    private static String pair(String gateway, String cls) {
        return gateway + "\u0000" + cls;
    }

    /**
     * True when the demand of {@code key} came back to its held peak after a fall below it twice within the hold before
     * {@code now}: bursts that recur. Once is what a surge after a lull, or a level reached again after one noisy
     * estimate, also does.
     */
    private boolean recurs(String key, long now) {
        Returns r = returns.get(key);
        return r != null && r.beforeLast != Long.MIN_VALUE && now - r.beforeLast <= options.demandHold().toNanos();
    }

    /**
     * {@code est}, whose solve sheds {@code shedRps}, with only as much of its held peaks as the engines carry: each
     * peak that recurs within the hold lowered by the same share of what it adds to the reports, so that together they
     * add {@code shedRps} less (after the peaks that do not recur, which go back to what the reports show); null when
     * that leaves nothing of a recurring peak. A burst that comes back every minute is then planned as far as the
     * engines carry it, not at the lull between (docs/control-loop.md, "Demand").
     */
    Estimates carried(Estimates est, double shedRps) {
        double recurring = 0;
        double once = 0;
        for (Map.Entry<String, Map<String, DemandEstimate>> row : est.demand().entrySet()) {
            for (Map.Entry<String, DemandEstimate> e : row.getValue().entrySet()) {
                String key = pair(row.getKey(), e.getKey());
                DemandEstimate before = heldFrom.get(key);
                if (before != null) {
                    double added = Math.max(0, e.getValue().rps() - before.rps());
                    if (recurs(key, est.atNanos())) {
                        recurring += added;
                    } else {
                        once += added;
                    }
                }
            }
        }
        double share = Math.min(1, 1 - (shedRps - once) / recurring);
        return recurring > 0 && share > 0 ? lowered(est, share) : null;
    }

    /** {@code est} with each estimate {@link #held} at a recent peak back at what the reports show. */
    Estimates unheld(Estimates est) {
        return lowered(est, 0);
    }

    /** {@code est} with each held estimate at what the reports show plus {@code share} of its peak's excess if it recurs. */
    private Estimates lowered(Estimates est, double share) {
        Map<String, Map<String, DemandEstimate>> d = new TreeMap<>();
        est.demand().forEach((g, row) -> {
            Map<String, DemandEstimate> r = new TreeMap<>(row);
            row.forEach((c, now) -> {
                String key = pair(g, c);
                DemandEstimate before = heldFrom.get(key);
                if (before == null) {
                    return;
                }
                double kept = recurs(key, est.atNanos()) ? share : 0;
                if (kept >= 1) {
                    return; // the whole peak carried: held as it was, and its explanation says so
                }
                double rps = before.rps() + kept * Math.max(0, now.rps() - before.rps());
                r.put(c, new DemandEstimate(rps, before.configuredRps(), before.reportedRps(), before.standardError(),
                        before.why() + (rps > before.rps()
                        ? String.format(Locale.ROOT, "; planned for %s of its recent peak of %s, as much as the engines "
                                + "carry", rps(rps), rps(now.rps()))
                        : "; not held at its recent peak: the engines do not carry it")));
            });
            d.put(g, r);
        });
        return new Estimates(est.atNanos(), est.engines(), d, est.links(), est.models(), est.affinityDiscountMs(),
                est.affinityWhy());
    }
}
