package dev.sextant.policy;

import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Engine;
import dev.sextant.topology.GatewayCluster;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Explains a snapshot's numbers for one (gateway cluster, class).
 *
 * <p>The explanation falls out of optimality (docs/design.md §3): every engine a class uses has the same
 * marginal cost, network ms plus the engine's price (its marginal latency plus any capacity shadow
 * price), and that common value is the class price π. An unused engine's marginal cost is at least π,
 * and the difference, split into "farther" and "slower or fuller", is the reason it gets nothing.
 */
public final class Explainer {
    private Explainer() {
    }

    /**
     * Builds the explanation of how {@code snapshot} routes class {@code classId} at {@code gateway}.
     *
     * @throws IllegalArgumentException when the gateway or class is unknown
     */
    public static Explanation explain(Topology topology, Snapshot snapshot, String gateway, String classId) {
        return explain(topology, snapshot, gateway, classId,
                name -> Policies.byName(name).solve(topology, SolveOptions.defaults()));
    }

    /**
     * As above, with the snapshots of the policies it compares against ({@code nearest}, {@code waterfall}) given
     * by name: each is a whole solve of {@code topology} (hundreds of ms on a large fleet), which a server keeps
     * for as long as the topology holds instead of solving again for every explanation.
     */
    public static Explanation explain(Topology topology, Snapshot snapshot, String gateway, String classId,
                                      java.util.function.Function<String, Snapshot> baseline) {
        GatewayCluster g = topology.gatewayClusters().stream().filter(x -> x.id().equals(gateway)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("gateway: unknown gateway cluster '" + gateway + "'"));
        TrafficClass c = topology.classes().stream().filter(x -> x.id().equals(classId)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("class: unknown class '" + classId + "'"));
        Route route = snapshot.route(g.id(), c.id());
        if (route == null) {
            throw new IllegalArgumentException("gateway/class: the snapshot has no route for " + gateway + "/" + classId);
        }
        Map<String, Double> rtt = topology.networkRttMs().getOrDefault(g.id(), Map.of());
        double price = route.priceMs();

        List<Explanation.EngineLine> lines = new ArrayList<>();
        List<String> disallowed = new ArrayList<>();
        double nearestUsed = Double.POSITIVE_INFINITY;
        double farthestUsed = 0;
        boolean usedFull = false;
        for (Engine e : topology.engines()) {
            Double w = route.weights().get(e.id());
            if (w != null && w > 0) {
                double ms = rtt.get(e.cluster());
                nearestUsed = Math.min(nearestUsed, ms);
                farthestUsed = Math.max(farthestUsed, ms);
                usedFull |= snapshot.engines().get(e.id()).shadowPriceMs() > 0;
            }
        }
        double minRtt = Double.POSITIVE_INFINITY;
        for (Engine e : topology.engines()) {
            String region = topology.regionOf(e);
            if (!e.serves(c.model())) {
                disallowed.add(e.id() + ": does not serve model " + c.model());
                continue;
            }
            if (!c.allowsRegion(region)) {
                disallowed.add(e.id() + ": region " + region + " is outside the class's residency " + c.residency());
                continue;
            }
            if (!rtt.containsKey(e.cluster())) {
                disallowed.add(e.id() + ": no network path from " + g.id() + " to " + e.cluster());
                continue;
            }
            EngineState s = snapshot.engines().get(e.id());
            double ms = rtt.get(e.cluster());
            minRtt = Math.min(minRtt, ms);
            double weight = route.weights().getOrDefault(e.id(), 0.0);
            double enginePrice = s.marginalCostMs() + s.shadowPriceMs();
            double marginal = ms + enginePrice;
            double use = s.effectiveCapacityRps() > 0 ? s.loadRps() / s.effectiveCapacityRps() : Double.NaN;
            String why = weight <= 0 && Math.abs(marginal - price) < 0.5 ? leftTo(snapshot, g.id(), c, e.id()) : null;
            lines.add(new Explanation.EngineLine(e.id(), weight, ms, s.latencyMs(), marginal, use,
                    s.shadowPriceMs(), s.penalty(),
                    why != null ? why : reason(weight, ms, marginal, price, s, nearestUsed, usedFull)));
        }
        lines.sort(Comparator.comparingDouble((Explanation.EngineLine l) -> -l.weight())
                .thenComparingDouble(Explanation.EngineLine::marginalCostMs).thenComparing(Explanation.EngineLine::engine));

        List<String> summary = new ArrayList<>();
        summary.add(String.format(Locale.ROOT, "Class %s at gateway cluster %s: %.1f req/s of %s, price %s, shed %.1f%%.",
                c.id(), g.id(), route.demandRps(), c.model(), ms(price), 100 * route.shedFraction()));
        double far = 0;
        for (Explanation.EngineLine l : lines) {
            if (l.weight() > 0 && l.networkMs() > minRtt) {
                far += l.weight();
            }
        }
        if (far > 0 && !Double.isNaN(price)) {
            double near = 0;
            for (Explanation.EngineLine l : lines) {
                if (l.networkMs() == minRtt) {
                    near = Math.max(near, l.engineLatencyMs());
                }
            }
            summary.add(String.format(Locale.ROOT, "%.1f%% goes to engines farther than the nearest (up to +%.0f ms of "
                    + "network): at the margin, one more request on the nearest engines would wait longer than the "
                    + "extra distance costs (their latency is already %.0f ms at this load).", 100 * far,
                    farthestUsed - minRtt, near));
        }
        if (route.shedFraction() > 0) {
            summary.add("Demand exceeds what the allowed engines can carry; the lowest priorities are shed first.");
        }
        summary.addAll(alternatives(baseline, snapshot, g.id(), c.id()));
        return new Explanation(g.id(), c.id(), route.demandRps(), price, route.shedFraction(), lines, disallowed,
                summary);
    }

    /**
     * Why an engine at the class price carries none of this class: the classes of lower priority at the same gateway
     * cluster and model that it carries instead (the optimizer gives the higher priorities the engines that answer
     * first, docs/optimizer.md), or null when there are none.
     */
    private static String leftTo(Snapshot snapshot, String gateway, TrafficClass c, String engine) {
        List<String> lower = new ArrayList<>();
        snapshot.routes().getOrDefault(gateway, Map.of()).forEach((id, r) -> {
            if (r.model().equals(c.model()) && r.priority() < c.priority()
                    && r.weights().getOrDefault(engine, 0.0) > 0) {
                lower.add(id + " (priority " + r.priority() + ")");
            }
        });
        return lower.isEmpty() ? null : "at the class price, and left to lower priorities of this gateway cluster: "
                + String.join(", ", lower) + " (higher priorities get the engines that answer first)";
    }

    private static String reason(double weight, double rttMs, double marginal, double price, EngineState s,
                                 double nearestUsed, boolean usedFull) {
        if (s.effectiveCapacityRps() <= 0) {
            return "out of service: no effective capacity (health or penalty)";
        }
        if (weight > 0) {
            // equal at the optimum; a solve to a loose gap tolerance leaves them apart by what it allows, which
            // the line then says rather than claim an equality its own columns contradict
            double off = marginal - price;
            String r = !(Math.abs(off) >= 0.5) ? "in use: its marginal cost equals the class price"
                    : String.format(Locale.ROOT, "in use: its marginal cost is %s %s the class price (as near as the "
                    + "solve's gap tolerance asked)", ms(Math.abs(off)), off > 0 ? "above" : "below");
            if (s.shadowPriceMs() > 0) {
                r += "; full, and more traffic would rather come here (capacity shadow price " + ms(s.shadowPriceMs())
                        + ")";
            }
            return r;
        }
        if (Double.isNaN(price)) {
            return "not used by this policy";
        }
        double excess = marginal - price;
        double farther = rttMs - nearestUsed;
        if (farther > 0 && !usedFull) {
            return String.format(Locale.ROOT, "%.0f ms farther than needed: the engines in use have spare capacity "
                    + "(marginal cost here %s above the class price)", farther, ms(excess));
        }
        return String.format(Locale.ROOT, "not needed: even its first request would cost %s more than the class price "
                + "(slower engine or longer distance)", ms(excess));
    }

    /** What the other policies would give this class and the whole fleet. */
    private static List<String> alternatives(java.util.function.Function<String, Snapshot> baseline, Snapshot snapshot,
                                             String gateway, String classId) {
        List<String> out = new ArrayList<>();
        for (String name : List.of("nearest", "waterfall")) {
            if (name.equals(snapshot.policy())) {
                continue;
            }
            Snapshot other = baseline.apply(name);
            out.add("With " + name + " routing instead: " + describe(other, gateway, classId) + " (this policy: "
                    + describe(snapshot, gateway, classId) + ").");
        }
        return out;
    }

    /** Mean latency of one class at one gateway under a snapshot, or the overloaded engine. */
    static String describe(Snapshot s, String gateway, String classId) {
        Route r = s.route(gateway, classId);
        double sum = 0;
        double weight = 0;
        for (Map.Entry<String, Double> w : r.weights().entrySet()) {
            EngineState e = s.engines().get(w.getKey());
            if (e.loadRps() > e.effectiveCapacityRps() * (1 + 1e-9)) {
                return String.format(Locale.ROOT, "unbounded latency, engine %s at %.0f%% of its effective capacity",
                        w.getKey(), 100 * e.loadRps() / e.effectiveCapacityRps());
            }
            Double ms = s.networkRttMs().getOrDefault(gateway, Map.of()).get(e.cluster());
            sum += w.getValue() * (ms + e.latencyMs());
            weight += w.getValue();
        }
        String shed = r.shedFraction() > 0 ? String.format(Locale.ROOT, ", %.1f%% shed", 100 * r.shedFraction()) : "";
        double fleet = s.objective().meanLatencyMs();
        String fleetText = Double.isFinite(fleet) && !overloaded(s) ? String.format(Locale.ROOT, "%.0f ms", fleet)
                : "unbounded (an engine is over capacity)";
        return String.format(Locale.ROOT, "mean latency %.0f ms for this class, %s fleet-wide%s",
                weight > 0 ? sum / weight : 0, fleetText, shed);
    }

    private static boolean overloaded(Snapshot s) {
        for (EngineState e : s.engines().values()) {
            if (e.loadRps() > e.effectiveCapacityRps() * (1 + 1e-9)) {
                return true;
            }
        }
        return false;
    }

    /** The explanation as text for a terminal. */
    public static String toText(Explanation x) {
        StringBuilder b = new StringBuilder();
        for (String s : x.summary()) {
            b.append(s).append('\n');
        }
        b.append('\n');
        b.append(String.format(Locale.ROOT, "%-14s %7s %8s %10s %12s %6s %9s  %s%n", "engine", "weight", "net ms",
                "engine ms", "marginal ms", "use", "shadow", "why"));
        for (Explanation.EngineLine l : x.engines()) {
            // an engine out of service has no utilization (load over no capacity): "-", as the JSON's null
            String use = Double.isFinite(l.utilization())
                    ? String.format(Locale.ROOT, "%5.0f%%", 100 * l.utilization()) : "     -";
            b.append(String.format(Locale.ROOT, "%-14s %6.1f%% %8.0f %10.0f %12.0f %s %9.0f  %s%n", l.engine(),
                    100 * l.weight(), l.networkMs(), l.engineLatencyMs(), l.marginalCostMs(), use,
                    l.shadowPriceMs(), l.reason()));
        }
        if (!x.disallowed().isEmpty()) {
            b.append("\nNot allowed:\n");
            for (String d : x.disallowed()) {
                b.append("  ").append(d).append('\n');
            }
        }
        return b.toString();
    }

    private static String ms(double v) {
        return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.1f ms", v);
    }
}
