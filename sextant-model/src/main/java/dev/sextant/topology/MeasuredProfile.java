package dev.sextant.topology;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * A latency profile from measured points (utilization → TTFT, TBT), made monotone and convex before use.
 *
 * <p>Implementation note. The optimizer needs TTFT and TBT non-decreasing and convex in ρ, and
 * measurements are noisy, so each of the two series goes through the same rule: (1) sort the points
 * by utilization; (2) replace each value by the running maximum from the left (the least
 * non-decreasing majorant of the points); (3) take the lower convex hull of the result (Andrew's
 * monotone chain), the greatest convex function below it. Because the input of step 3 is
 * non-decreasing, every hull segment has a slope ≥ 0, so the result is both. The function is
 * linear between hull vertices, constant at the first value below the first point, and continues
 * with the last segment's slope beyond the last point (constant if there is one point).
 *
 * <p>Measurements stop short of saturation, where queueing makes TTFT grow without bound, and a
 * flat stretch of the hull would make the optimizer's cost x·T(x) linear there (so its load
 * indeterminate). Both are handled by one more term: TTFT gets {@code 0.001 · TTFT₀ · ρ / (1 − ρ)},
 * with TTFT₀ the hull's value at its first point — under 1% of TTFT₀ up to ρ = 0.9, strictly
 * increasing, and unbounded as ρ → 1 like the parametric form.
 *
 * <p>Built from at least one point, utilizations distinct in [0, 1).
 */
public final class MeasuredProfile implements LatencyProfile {

    /**
     * One measurement.
     *
     * @param utilization load / capacity_rps in [0, 1)
     * @param ttftMs      time to first token, ms, &gt; 0
     * @param tbtMs       time between tokens, ms, ≥ 0
     */
    public record Point(double utilization, double ttftMs, double tbtMs) {
        public Point {
            if (!(utilization >= 0 && utilization < 1)) {
                throw new IllegalArgumentException("utilization: " + utilization + " (expected: in [0, 1))");
            }
            Checks.positive("ttft_ms", ttftMs);
            Checks.finiteNonNegative("tbt_ms", tbtMs);
        }
    }

    private final List<Point> points;
    private final Curve ttft;
    private final Curve tbt;

    public MeasuredProfile(List<Point> points) {
        if (points == null || points.isEmpty()) {
            throw new IllegalArgumentException("points: empty (expected: at least one point)");
        }
        points = List.copyOf(points);
        List<Point> sorted = new ArrayList<>(points);
        sorted.sort(Comparator.comparingDouble(Point::utilization));
        for (int i = 1; i < sorted.size(); i++) {
            if (sorted.get(i).utilization() == sorted.get(i - 1).utilization()) {
                throw new IllegalArgumentException("points: utilization " + sorted.get(i).utilization()
                        + " appears twice (expected: distinct utilizations)");
            }
        }
        this.points = points;
        this.ttft = Curve.of(points, Point::ttftMs);
        this.tbt = Curve.of(points, Point::tbtMs);
    }

    /** The measured points as given. */
    public List<Point> points() {
        return points;
    }

    private Curve ttft() {
        return ttft;
    }

    private Curve tbt() {
        return tbt;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof MeasuredProfile m && m.points.equals(points);
    }

    @Override
    public int hashCode() {
        return points.hashCode();
    }

    @Override
    public String toString() {
        return "MeasuredProfile[points=" + points + "]";
    }

    /** The hull vertices of the TTFT series after the monotone-convex rule, as {ρ, ms} pairs. */
    public double[][] ttftHull() {
        return ttft().vertices();
    }

    /** The hull vertices of the TBT series after the monotone-convex rule, as {ρ, ms} pairs. */
    public double[][] tbtHull() {
        return tbt().vertices();
    }

    /** Weight of the queueing term added to TTFT, relative to the first hull value. */
    static final double QUEUE_WEIGHT = 0.001;

    @Override
    public double ttftMs(double rho) {
        if (rho >= 1) {
            return Double.POSITIVE_INFINITY;
        }
        return ttft().value(rho) + QUEUE_WEIGHT * ttft.ys()[0] * rho / (1 - rho);
    }

    @Override
    public double ttftSlope(double rho) {
        if (rho >= 1) {
            return Double.POSITIVE_INFINITY;
        }
        double q = 1 - rho;
        return ttft().slope(rho) + QUEUE_WEIGHT * ttft.ys()[0] / (q * q);
    }

    @Override
    public double ttftCurvature(double rho) {
        if (rho >= 1) {
            return Double.POSITIVE_INFINITY;
        }
        double q = 1 - rho;
        return 2 * QUEUE_WEIGHT * ttft.ys()[0] / (q * q * q);
    }

    @Override
    public double tbtMs(double rho) {
        return tbt().value(rho);
    }

    @Override
    public double tbtSlope(double rho) {
        return tbt().slope(rho);
    }

    @Override
    public double tbtCurvature(double rho) {
        return 0;
    }

    /** A monotone convex piecewise-linear function; built on demand, small (a few vertices). */
    private record Curve(double[] xs, double[] ys) {
        static Curve of(List<Point> points, java.util.function.ToDoubleFunction<Point> value) {
            List<Point> sorted = new ArrayList<>(points);
            sorted.sort(Comparator.comparingDouble(Point::utilization));
            int n = sorted.size();
            double[] x = new double[n];
            double[] y = new double[n];
            double max = Double.NEGATIVE_INFINITY;
            for (int i = 0; i < n; i++) {
                x[i] = sorted.get(i).utilization();
                max = Math.max(max, value.applyAsDouble(sorted.get(i)));
                y[i] = max;
            }
            double[] hx = new double[n];
            double[] hy = new double[n];
            int h = 0;
            for (int i = 0; i < n; i++) {
                while (h >= 2 && cross(hx[h - 2], hy[h - 2], hx[h - 1], hy[h - 1], x[i], y[i]) <= 0) {
                    h--;
                }
                hx[h] = x[i];
                hy[h] = y[i];
                h++;
            }
            return new Curve(java.util.Arrays.copyOf(hx, h), java.util.Arrays.copyOf(hy, h));
        }

        /** > 0 when (a, b, c) turn left, i.e. b lies strictly below the chord a–c. */
        private static double cross(double ax, double ay, double bx, double by, double cx, double cy) {
            return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
        }

        double[][] vertices() {
            double[][] v = new double[xs.length][];
            for (int i = 0; i < xs.length; i++) {
                v[i] = new double[] {xs[i], ys[i]};
            }
            return v;
        }

        double slope(double rho) {
            int n = xs.length;
            if (n == 1 || rho < xs[0]) {
                return 0;
            }
            int i = segment(rho);
            return (ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i]);
        }

        double value(double rho) {
            int n = xs.length;
            if (n == 1 || rho <= xs[0]) {
                return ys[0];
            }
            int i = segment(rho);
            return ys[i] + (rho - xs[i]) * (ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i]);
        }

        /** Index i of the segment [xs[i], xs[i+1]) holding rho, the last segment beyond the end. */
        private int segment(double rho) {
            int i = 0;
            while (i + 2 < xs.length && rho >= xs[i + 1]) {
                i++;
            }
            return i;
        }
    }
}
