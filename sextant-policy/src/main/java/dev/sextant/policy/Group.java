package dev.sextant.policy;

/**
 * One group of interchangeable engines as a single node: its load as a function of its price, and
 * the split of a given load among its engines.
 *
 * <p>Implementation note. The group's cost H(y) = min Σ φ_j(x_j) over Σ x_j = y, 0 ≤ x_j ≤ c_j is the
 * infimal convolution of the engines' costs. Its convex conjugate is the sum of theirs,
 * H*(p) = Σ φ_j*(p), so at price p the group carries y(p) = Σ x_j(p) with x_j(p) the load where
 * engine j's marginal cost equals p (Rockafellar, <i>Convex Analysis</i>, Thm. 16.4). Splitting a
 * load y is the inverse: find the common marginal cost μ with y(μ) = y (water-filling).
 */
final class Group {
    final EngineCost[] engines;
    final double capacity;
    final double priceFloor;
    final double priceCeiling;

    Group(EngineCost[] engines) {
        this.engines = engines;
        double c = 0;
        double lo = Double.POSITIVE_INFINITY;
        double hi = 0;
        for (EngineCost e : engines) {
            c += e.effectiveCapacity;
            lo = Math.min(lo, e.marginalAtZero);
            hi = Math.max(hi, e.marginalAtCapacity);
        }
        this.capacity = c;
        this.priceFloor = lo;
        this.priceCeiling = hi;
    }

    /** Load at price p, req/s; fills {@code loads} (per engine) and returns the sum. */
    double load(double p, double[] loads) {
        double y = 0;
        for (int i = 0; i < engines.length; i++) {
            loads[i] = engines[i].loadAt(p);
            y += loads[i];
        }
        return y;
    }

    /** dy/dp given the per-engine loads at p. */
    double loadSlope(double p, double[] loads) {
        double s = 0;
        for (int i = 0; i < engines.length; i++) {
            s += engines[i].loadSlope(p, loads[i]);
        }
        return s;
    }

    /** H*(p) given the per-engine loads at p. */
    double conjugate(double p, double[] loads) {
        double v = 0;
        for (int i = 0; i < engines.length; i++) {
            v += engines[i].conjugate(p, loads[i]);
        }
        return v;
    }

    /**
     * Splits load {@code y} (0 ≤ y ≤ capacity) among the engines at equal marginal cost; fills
     * {@code loads} and returns the common marginal cost μ (the price of the next request).
     */
    double split(double y, double[] loads) {
        if (y <= 0) {
            java.util.Arrays.fill(loads, 0);
            return priceFloor;
        }
        if (y >= capacity) {
            for (int i = 0; i < engines.length; i++) {
                loads[i] = engines[i].effectiveCapacity;
            }
            return priceCeiling;
        }
        double lo = priceFloor;
        double hi = priceCeiling;
        double mu = 0.5 * (lo + hi);
        for (int it = 0; it < 200; it++) {
            double got = load(mu, loads);
            double g = got - y;
            if (Math.abs(g) <= 1e-13 * Math.max(y, 1e-300)) {
                break;
            }
            if (g > 0) {
                hi = mu;
            } else {
                lo = mu;
            }
            if (hi - lo <= 1e-15 * hi) {
                break;
            }
            double slope = loadSlope(mu, loads);
            double next = slope > 0 ? mu - g / slope : Double.NaN;
            mu = next > lo && next < hi ? next : 0.5 * (lo + hi);
        }
        load(mu, loads);
        // hand the last rounding residue to engines strictly inside their box so the sum is exact
        double sum = 0;
        for (double x : loads) {
            sum += x;
        }
        double residue = y - sum;
        for (int i = 0; i < engines.length && residue != 0; i++) {
            double room = residue > 0 ? engines[i].effectiveCapacity - loads[i] : loads[i];
            double move = Math.min(Math.abs(residue), room);
            if (move > 0) {
                loads[i] += Math.signum(residue) * move;
                residue -= Math.signum(residue) * move;
            }
        }
        return mu;
    }

    /** H(y) given the engines' loads from {@link #split}. */
    double cost(double[] loads) {
        double v = 0;
        for (int i = 0; i < engines.length; i++) {
            v += engines[i].cost(loads[i]);
        }
        return v;
    }
}
