package dev.sextant.snapshot;

import java.util.List;

/**
 * How many retries a gateway may spend: each request deposits {@code r(u)} tokens, each retry spends
 * one, plus {@code minRetriesPerSecond}. {@code r} is linear between the points of {@code curve}
 * (sorted by utilization) and constant beyond its ends.
 *
 * @param curve               points (utilization, retry ratio), at least one, ratios in [0, 1]
 * @param minRetriesPerSecond retries per second allowed whatever the deposits, ≥ 0
 */
public record RetryBudget(List<Point> curve, double minRetriesPerSecond) {

    /** One point of the curve: at fleet utilization {@code utilization}, deposit {@code ratio} per request. */
    public record Point(double utilization, double ratio) {
        public Point {
            if (!(ratio >= 0 && ratio <= 1)) {
                throw new IllegalArgumentException("ratio: " + ratio + " (expected: in [0, 1])");
            }
        }
    }

    /** 20% retries below 50% utilization, falling linearly to 1% at 95%; 1 retry/s floor. */
    public static final RetryBudget DEFAULT = new RetryBudget(List.of(new Point(0.5, 0.2), new Point(0.95, 0.01)), 1.0);

    public RetryBudget {
        if (curve == null || curve.isEmpty()) {
            throw new IllegalArgumentException("curve: empty (expected: at least one point)");
        }
        curve = List.copyOf(curve);
        for (int i = 1; i < curve.size(); i++) {
            if (!(curve.get(i).utilization() > curve.get(i - 1).utilization())) {
                throw new IllegalArgumentException("curve: utilizations not increasing (expected: sorted, distinct)");
            }
        }
        if (!(minRetriesPerSecond >= 0)) {
            throw new IllegalArgumentException("min_retries_per_second: " + minRetriesPerSecond + " (expected: >= 0)");
        }
    }

    /** The retry ratio r(u) at fleet utilization {@code u}. */
    public double ratio(double u) {
        Point first = curve.get(0);
        if (u <= first.utilization()) {
            return first.ratio();
        }
        for (int i = 1; i < curve.size(); i++) {
            Point b = curve.get(i);
            if (u <= b.utilization()) {
                Point a = curve.get(i - 1);
                return a.ratio() + (u - a.utilization()) * (b.ratio() - a.ratio()) / (b.utilization() - a.utilization());
            }
        }
        return curve.get(curve.size() - 1).ratio();
    }
}
