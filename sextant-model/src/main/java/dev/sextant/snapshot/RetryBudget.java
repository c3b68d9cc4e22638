package dev.sextant.snapshot;

import java.util.List;

/**
 * How many retries a gateway may spend on a class: each request of the class deposits {@code r(u)} tokens into the
 * class's budget, each retry spends one, plus {@code minRetriesPerSecond}; u is the utilization of the engines the
 * class may use ({@link Snapshot#allowedUtilizationOf}). {@code r} is linear between the points of {@code curve}
 * and constant beyond its ends, so it falls as the engines fill and retries cannot turn an overload into a retry
 * storm.
 *
 * @param curve               points (utilization, retry ratio), at least one, utilizations strictly increasing
 * @param minRetriesPerSecond retries per second a class may spend whatever its deposits, finite, ≥ 0
 */
public record RetryBudget(List<Point> curve, double minRetriesPerSecond) {

    /**
     * One point of the curve: at utilization {@code utilization} (Σ load / Σ effective capacity, finite, ≥ 0; above
     * 1 for engines loaded beyond their effective capacity), deposit {@code ratio} retries per request, in [0, 1].
     */
    public record Point(double utilization, double ratio) {
        public Point {
            if (!(utilization >= 0) || Double.isInfinite(utilization)) {
                throw new IllegalArgumentException("utilization: " + utilization + " (expected: a finite number >= 0)");
            }
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
        curve = Present.items(curve, "curve", "a list of points", "a point {utilization, ratio}");
        for (int i = 1; i < curve.size(); i++) {
            if (!(curve.get(i).utilization() > curve.get(i - 1).utilization())) {
                throw new IllegalArgumentException("curve: utilizations not increasing (expected: sorted, distinct)");
            }
        }
        if (!(minRetriesPerSecond >= 0) || Double.isInfinite(minRetriesPerSecond)) {
            throw new IllegalArgumentException("min_retries_per_second: " + minRetriesPerSecond
                    + " (expected: a finite number >= 0)");
        }
    }

    /** The retry ratio r(u) at utilization {@code u}, in [0, 1]; NaN gives the last point's ratio. */
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
