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

    /*
     * Engines of one group often share a shape (capacity_rps, profile, output tokens) and differ only
     * in health, which moves the box, not the marginal cost. The inverse of the marginal cost is solved
     * once per shape and clamped per engine; each shape remembers its last answer to start Newton there.
     */
    private final EngineCost[] shapes;
    private final int[] shapeOf;
    private final double[] shapeLoad;
    private final double[] shapePrice;
    private final double[] shapeSlope;
    private final double[] shapeCost;
    private final double[] costAtCapacity;

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
        java.util.List<EngineCost> reps = new java.util.ArrayList<>();
        shapeOf = new int[engines.length];
        costAtCapacity = new double[engines.length];
        for (int i = 0; i < engines.length; i++) {
            EngineCost e = engines[i];
            costAtCapacity[i] = e.cost(e.effectiveCapacity);
            int found = -1;
            for (int s = 0; s < reps.size(); s++) {
                EngineCost r = reps.get(s);
                if (r.capacity == e.capacity && r.outputTokens == e.outputTokens && r.profile.equals(e.profile)) {
                    found = s;
                    if (e.effectiveCapacity > r.effectiveCapacity) {
                        reps.set(s, new EngineCost(-1, e.capacity, e.effectiveCapacity, e.outputTokens, e.profile));
                    }
                    break;
                }
            }
            if (found < 0) {
                found = reps.size();
                reps.add(new EngineCost(-1, e.capacity, e.effectiveCapacity, e.outputTokens, e.profile));
            }
            shapeOf[i] = found;
        }
        shapes = reps.toArray(new EngineCost[0]);
        shapeLoad = new double[shapes.length];
        shapePrice = new double[shapes.length];
        java.util.Arrays.fill(shapePrice, Double.NaN);
        shapeSlope = new double[shapes.length];
        shapeCost = new double[shapes.length];
    }

    /** Solves every shape at price p (once per price), remembering load, slope and cost. */
    private void solveShapes(double p) {
        for (int s = 0; s < shapes.length; s++) {
            if (shapePrice[s] == p) {
                continue;
            }
            EngineCost r = shapes[s];
            double x = r.loadAt(p, shapeLoad[s]);
            shapeLoad[s] = x;
            shapePrice[s] = p;
            shapeSlope[s] = r.loadSlope(p, x);
            shapeCost[s] = r.cost(x);
        }
    }

    /** Load at price p, req/s; fills {@code loads} (per engine) and returns the sum. */
    double load(double p, double[] loads) {
        solveShapes(p);
        double y = 0;
        for (int i = 0; i < engines.length; i++) {
            loads[i] = Math.min(shapeLoad[shapeOf[i]], engines[i].effectiveCapacity);
            y += loads[i];
        }
        return y;
    }

    /** dy/dp given the per-engine loads at p. */
    double loadSlope(double p, double[] loads) {
        solveShapes(p);
        double s = 0;
        for (int i = 0; i < engines.length; i++) {
            if (loads[i] > 0 && loads[i] < engines[i].effectiveCapacity) {
                s += shapeSlope[shapeOf[i]];
            }
        }
        return s;
    }

    /** H*(p) given the per-engine loads at p. */
    double conjugate(double p, double[] loads) {
        solveShapes(p);
        double v = 0;
        for (int i = 0; i < engines.length; i++) {
            double x = loads[i];
            if (x <= 0) {
                continue;
            }
            double cost = x < engines[i].effectiveCapacity ? shapeCost[shapeOf[i]] : costAtCapacity[i];
            v += p * x - cost;
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
