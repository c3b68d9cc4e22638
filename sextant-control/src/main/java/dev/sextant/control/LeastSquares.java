package dev.sextant.control;

/**
 * Weighted linear least squares with exponential forgetting and a prior, for the few-parameter laws of
 * {@link Batching}: minimizes {@code Σ wᵢ·(yᵢ − xᵢ·θ)² + W·Σ_p s_p²·(θ_p − θ⁰_p)²} over θ ≥ 0. The second sum is
 * the prior θ⁰ as a ridge worth W observations: s_p is the root-mean-square of regressor p over the data (so that
 * the penalty on each coefficient is measured in the units of the predictions it makes on that data, and no prior
 * value outside the data's range gets the leverage it would as a pseudo-observation). With little data the fit
 * stays near the prior, with much the data rule; the prior is never forgotten, the data is.
 *
 * <p>Implementation note. The normal equations are kept as running sums (k×k and k), so adding a sample and
 * forgetting (multiplying the data sums by e^(−Δt/τ)) are O(k²). The non-negativity constraint is an active set:
 * solve, fix the most negative coefficient at 0, solve the rest again (at most k rounds; k ≤ 4 here). Gaussian
 * elimination with partial pivoting; the ridge keeps the system regular.
 */
final class LeastSquares {
    private final int k;
    private final double[][] xx;
    private final double[] xy;
    private final double[][] priorXx;
    private final double[] priorXy;
    private double weight;
    /** Σ wᵢ·yᵢ², forgotten like the rest: the residual sum of squares of any θ follows from it. */
    private double yy;
    private long samples;

    LeastSquares(int k) {
        this.k = k;
        xx = new double[k][k];
        xy = new double[k];
        priorXx = new double[k][k];
        priorXy = new double[k];
    }

    /** Adds one observation {@code y ≈ x·θ} with weight {@code w > 0}. */
    void add(double[] x, double y, double w) {
        accumulate(xx, xy, x, y, w);
        weight += w;
        yy += w * y * y;
        samples++;
    }

    /**
     * Sets the prior: coefficients {@code theta0} worth {@code w} observations; {@code scale} is the typical value of
     * each regressor to use while there is no data to measure it on.
     */
    void prior(double[] theta0, double w, double[] scale) {
        clearPrior();
        for (int p = 0; p < k; p++) {
            double s2 = weight > 1e-9 ? xx[p][p] / weight : scale[p] * scale[p];
            if (!(s2 > 0)) {
                s2 = scale[p] * scale[p] > 0 ? scale[p] * scale[p] : 1;
            }
            priorXx[p][p] = w * s2;
            priorXy[p] = w * s2 * theta0[p];
        }
    }

    /** Forgets the prior's pseudo-observations, to set new ones. */
    void clearPrior() {
        for (int i = 0; i < k; i++) {
            java.util.Arrays.fill(priorXx[i], 0);
        }
        java.util.Arrays.fill(priorXy, 0);
    }

    private void accumulate(double[][] a, double[] b, double[] x, double y, double w) {
        for (int i = 0; i < k; i++) {
            for (int j = 0; j < k; j++) {
                a[i][j] += w * x[i] * x[j];
            }
            b[i] += w * x[i] * y;
        }
    }

    /** Multiplies the data's weight by {@code factor} in [0, 1] (forgetting). */
    void decay(double factor) {
        for (int i = 0; i < k; i++) {
            for (int j = 0; j < k; j++) {
                xx[i][j] *= factor;
            }
            xy[i] *= factor;
        }
        weight *= factor;
        yy *= factor;
    }

    /** The data's total weight after forgetting: the effective number of observations. */
    double weight() {
        return weight;
    }

    /** Σ wᵢ·(yᵢ − xᵢ·θ)² over the (forgotten) data. */
    private double residual(double[] theta) {
        double r = yy;
        for (int i = 0; i < k; i++) {
            r -= 2 * theta[i] * xy[i];
            for (int j = 0; j < k; j++) {
                r += theta[i] * xx[i][j] * theta[j];
            }
        }
        return Math.max(0, r);
    }

    /**
     * How strongly, and by how much, the data refute {@code theta0}, against the data's own least-squares fit θ̂:
     * {@code [F, e]} with F the F statistic of the hypothesis θ = θ⁰, {@code ((RSS(θ⁰) − RSS(θ̂)) / k) /
     * (RSS(θ̂) / (n − k))} (n the effective number of observations: near 1 when θ⁰ is as good as the fit up to
     * noise, beyond a few when the data reject it), and e the root-mean-square error θ⁰ makes beyond the fit's,
     * relative to the root-mean-square observation (how wrong its predictions are on this data). Both 0 while
     * there are too few observations to tell (n ≤ 2k) or the data's fit is singular.
     */
    double[] conflict(double[] theta0) {
        if (samples <= 2L * k || weight <= 2 * k || !(yy > 0)) {
            return new double[] {0, 0};
        }
        // the data's own fit, with a ridge a millionth of the data's only to keep a collinear system regular
        double[][] ridgeXx = new double[k][k];
        double[] ridgeXy = new double[k];
        for (int p = 0; p < k; p++) {
            ridgeXx[p][p] = 1e-6 * Math.max(xx[p][p], 1e-300);
            ridgeXy[p] = ridgeXx[p][p] * theta0[p];
        }
        boolean[] all = new boolean[k];
        java.util.Arrays.fill(all, true);
        double[] fit = solveFree(all, ridgeXx, ridgeXy);
        if (fit == null) {
            return new double[] {0, 0};
        }
        double rssFit = residual(fit);
        double excess = Math.max(0, residual(theta0) - rssFit);
        double relative = Math.sqrt(excess / yy);
        double noise = rssFit / (weight - k);
        double f = noise > 0 ? excess / k / noise : excess > 0 ? Double.POSITIVE_INFINITY : 0;
        return new double[] {f, relative};
    }

    /** The coefficients, each ≥ 0; {@code fallback} when the system is singular. */
    double[] solve(double[] fallback) {
        boolean[] free = new boolean[k];
        java.util.Arrays.fill(free, true);
        for (int round = 0; round <= k; round++) {
            double[] theta = solveFree(free, priorXx, priorXy);
            if (theta == null) {
                return fallback.clone();
            }
            int worst = -1;
            for (int i = 0; i < k; i++) {
                if (free[i] && theta[i] < 0 && (worst < 0 || theta[i] < theta[worst])) {
                    worst = i;
                }
            }
            if (worst < 0) {
                return theta;
            }
            free[worst] = false;
        }
        return fallback.clone();
    }

    /** The least-squares coefficients of the {@code free} ones (the others 0), with {@code px, py} as the prior. */
    private double[] solveFree(boolean[] free, double[][] px, double[] py) {
        int m = 0;
        int[] idx = new int[k];
        for (int i = 0; i < k; i++) {
            if (free[i]) {
                idx[m++] = i;
            }
        }
        double[][] a = new double[m][m + 1];
        for (int r = 0; r < m; r++) {
            for (int c = 0; c < m; c++) {
                a[r][c] = xx[idx[r]][idx[c]] + px[idx[r]][idx[c]];
            }
            a[r][m] = xy[idx[r]] + py[idx[r]];
        }
        for (int col = 0; col < m; col++) {
            int pivot = col;
            for (int r = col + 1; r < m; r++) {
                if (Math.abs(a[r][col]) > Math.abs(a[pivot][col])) {
                    pivot = r;
                }
            }
            if (Math.abs(a[pivot][col]) < 1e-300) {
                return null;
            }
            double[] t = a[col];
            a[col] = a[pivot];
            a[pivot] = t;
            for (int r = 0; r < m; r++) {
                if (r != col) {
                    double f = a[r][col] / a[col][col];
                    for (int c = col; c <= m; c++) {
                        a[r][c] -= f * a[col][c];
                    }
                }
            }
        }
        double[] theta = new double[k];
        for (int r = 0; r < m; r++) {
            theta[idx[r]] = a[r][m] / a[r][r];
            if (!Double.isFinite(theta[idx[r]])) {
                return null;
            }
        }
        return theta;
    }
}
