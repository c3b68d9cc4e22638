package dev.sextant.policy;

import java.util.Arrays;

/**
 * Solves one connected component of the routing problem (sources that share engine groups).
 *
 * <p>Implementation note. The problem is a convex separable transportation problem: sources k with
 * demand λ_k send flow over arcs of linear cost a_kg (network ms, less the affinity discount on the
 * flow kept from the previous snapshot, which is a capped arc) to groups with convex cost H_g, or shed
 * it at cost P_k. Relaxing conservation at the groups with prices p gives the concave dual
 * {@code q(p) = Σ_k D_k(p) − Σ_g H_g*(p_g)} with D_k(p) the cheapest way to place λ_k at arc costs
 * a + p — a piecewise-linear function, so Newton's method does not apply to q directly. We maximize
 * instead its entropic smoothing q_τ, where each source places its demand in a Gibbs distribution
 * over its options (logistic on capped arcs): q_τ is smooth and concave, its gradient is flow in
 * minus group load, its Hessian is Σ_k (diag(s_k) − s_k s_kᵀ / S_k) + diag(y'), and Newton's method
 * with a backtracking line search converges fast. τ falls tenfold per stage, each stage warm-started
 * from the last, until the certificate below closes (Cuturi &amp; Peyré's entropic regularization of
 * transport; Nesterov, "Smooth minimization of non-smooth functions", 2005).
 *
 * <p>Certificate. At each stage the Gibbs flows are a feasible routing (all demand placed, group
 * loads within capacity after a repair of rounding residue), and q(p) — the exact, unsmoothed dual
 * at the same prices, with shed amounts fixed — is a lower bound on every routing's cost, so the
 * relative gap between them bounds the distance to the optimum. The prices p are the dual variables
 * of the group balance, so at a full group they include the capacity's shadow price, as the bound
 * needs (docs/design.md §3).
 *
 * <p>Why one long class: the stages, the Newton step and its line search, the Gibbs flows, the repair and the
 * certificate share one set of arrays sized once per component and reused across stages and re-solves, and that
 * reuse is what keeps a re-solve of the L fleet fast (BENCHMARKS.md); the group costs are in {@link EngineCost} and
 * {@link Group}, the instance's arrays in {@link Instance}.
 */
final class DualNewton {
    private static final double ARMIJO = 1e-4;
    /** Options this many τ above a source's price get no flow (e^-60 ≈ 1e-26 of it). */
    private static final double NEGLIGIBLE = 60;
    /**
     * The flow imbalance, relative to the demand and to the gap target, below which a Newton step asks whether
     * the gap is met already. On the L fleet's warm re-solve the gap reaches 1e-4 once the imbalance is
     * 2e-4 to 1e-3 of the demand; at 2e-3 it had not yet. Over twelve re-solves of L in a row at gap 1e-4
     * ({@code WarmChain L 12 1e-4}), 10 took 124 steps without affinity and 285 with it; 3 took 174 and 309, 30
     * took 130 and 359, 100 took 144 and 392.
     */
    private static final double CHECK_IMBALANCE = 10;
    /**
     * The smallest gap tolerance at which a stage stops once certified. Below it the certificate needs nearly the
     * stage's own imbalance tolerance anyway (at 1e-6, twelve re-solves of L in a row took 1% fewer Newton steps
     * with it), and stopping early would leave the marginal costs of a class's engines visibly apart where
     * {@code explain} shows them equal: 23,230 and 23,238 ms for the talk example's two engines instead of 23,233.
     */
    private static final double STOP_EARLY_FROM = 1e-5;

    private final int sources;
    private final int groupCount;
    private final double[] lambda;
    private final double[] shedCost;
    /** Per source: its groups (local indices), arc costs and affinity caps, one slot per group. */
    private final int[][] slotGroup;
    private final double[][] slotArc;
    private final double[][] slotKept;
    private final double discount;
    private final Group[] groups;
    private final double[][] loads;

    // per evaluation
    private final double[][] flowRegular;
    private final double[][] flowKept;
    private final double[][] slotS;
    private final double[] shed;
    private final double[] shedS;
    private final double[] pi;
    private final double[] y;
    private final double[] ySlope;
    private final double[] grad;
    private final double[][] hessian;

    private final double maxShedCost;
    private final double totalDemand;

    private double damping;
    private double radius;

    int iterations;
    int stages;
    double tau;

    DualNewton(double[] lambda, double[] shedCost, int[][] slotGroup, double[][] slotRtt, double[][] slotKept,
               double discount, Group[] groups) {
        this.sources = lambda.length;
        this.groupCount = groups.length;
        this.lambda = lambda;
        this.shedCost = shedCost;
        for (int[] sg : slotGroup) {
            for (int a = 1; a < sg.length; a++) {
                if (sg[a] <= sg[a - 1]) { // the Hessian's lower triangle is filled on this order
                    throw new IllegalArgumentException("a source's groups: " + Arrays.toString(sg)
                            + " (expected: strictly ascending)");
                }
            }
        }
        this.slotGroup = slotGroup;
        this.slotArc = slotRtt;
        this.slotKept = slotKept;
        this.discount = discount;
        this.groups = groups;
        double maxShed = 0;
        double total = 0;
        for (int k = 0; k < sources; k++) {
            maxShed = Math.max(maxShed, shedCost[k]);
            total += lambda[k];
        }
        this.maxShedCost = maxShed;
        this.totalDemand = total;
        this.loads = new double[groupCount][];
        for (int g = 0; g < groupCount; g++) {
            loads[g] = new double[groups[g].engines.length];
        }
        flowRegular = new double[sources][];
        flowKept = new double[sources][];
        slotS = new double[sources][];
        for (int k = 0; k < sources; k++) {
            flowRegular[k] = new double[slotGroup[k].length];
            flowKept[k] = new double[slotGroup[k].length];
            slotS[k] = new double[slotGroup[k].length];
        }
        shed = new double[sources];
        shedS = new double[sources];
        pi = new double[sources];
        y = new double[groupCount];
        ySlope = new double[groupCount];
        grad = new double[groupCount];
        hessian = new double[groupCount][groupCount];
    }

    /** The result of a solve. */
    /**
     * @param objective latency cost of the routing (with the affinity credit), shed excluded
     * @param bound     dual bound on it with the shed amounts fixed
     * @param gap       (objective − bound) / objective
     * @param fullGap   the distance of the whole objective (shed penalties included) from its dual
     *                  bound, relative to the latency cost: certifies the shed amounts and where they
     *                  are placed
     */
    record Solution(double[][] flow, double[] shed, double[] prices, double[][] engineLoads, double objective,
                    double bound, double gap, double fullGap) {
    }

    Solution solve(double[] p0, double tau0, double gapTolerance) {
        double[] p = p0.clone();
        double gradTol = 1e-10 * Math.max(1, totalDemand);
        double looseTol = 1e-6 * Math.max(1, totalDemand);
        tau = tau0;
        Solution best = null;
        int worse = 0;
        // whether this stage's τ is expected to reach the tolerance, so that it may stop once certified (from
        // STOP_EARLY_FROM up): the first stage's may (a warm start's small τ does), a later one's when the
        // previous gap, shrunk in proportion to τ, is within it
        boolean stopEarly = gapTolerance >= STOP_EARLY_FROM;
        boolean mayMeet = stopEarly;
        // at least one stage, whatever τ: a solution is owed even where the costs' scale leaves τ below the floor
        for (stages = 1; stages <= 40 && (stages == 1 || tau >= 1e-15 * maxShedCost); stages++) {
            // a stage need not be solved to rounding: the certificate holds at any prices. Stop at a flow
            // imbalance of a millionth of the demand, and go on to rounding when that left the gap just short
            // of the tolerance, or no better than the best stage's (a stall is judged on stages solved to
            // rounding: with shedding, prices near the shed cost, loose stages can fail to improve while
            // exact ones still do). On the L fleet: a fifth fewer Newton steps warm, 6% cold, same gaps.
            double target = mayMeet ? gapTolerance : -1;
            Solution s = newton(p, looseTol, target);
            s = s != null ? s : primal(p);
            boolean met = s.gap <= gapTolerance && s.fullGap <= gapTolerance;
            boolean better = best == null || Math.max(s.gap, s.fullGap) < Math.max(best.gap, best.fullGap);
            // stalled: τ fell (at least twofold) but the gap did not even halve. Seen with shedding, where loose
            // stages improved a little each time, so never went to rounding, until τ was too small for Newton
            boolean stalled = best != null && Math.max(s.gap, s.fullGap) > 0.5 * Math.max(best.gap, best.fullGap);
            if (!met && (s.gap <= 10 * gapTolerance || !better || stalled)) {
                Solution exact = newton(p, gradTol, target);
                s = exact != null ? exact : primal(p);
            }
            if (best == null || Math.max(s.gap, s.fullGap) < Math.max(best.gap, best.fullGap)) {
                best = s;
                worse = 0;
            } else if (++worse >= 3) {
                // smaller τ no longer helps: rounding at these prices dominates
                return best;
            }
            if (s.gap <= gapTolerance && s.fullGap <= gapTolerance) {
                return s;
            }
            // the gap shrinks in proportion to τ: aim the next stage at a third of the tolerance,
            // but never more than tenfold at once (Newton's region of fast convergence shrinks with τ)
            double shrink = Math.max(0.1, Math.min(0.5, 0.3 * gapTolerance / Math.max(s.gap, s.fullGap)));
            tau *= shrink;
            mayMeet = stopEarly && shrink * Math.max(s.gap, s.fullGap) <= gapTolerance;
        }
        return best;
    }

    /**
     * Newton's method on q_τ from p until the flow imbalance is at most {@code gradTol}, leaving p at the last
     * prices. With a {@code gapTarget} ≥ 0 it stops sooner when the routing at the current prices is certified
     * within it (the certificate holds at any prices, so a warm start a few steps from the optimum need not
     * converge), and returns that solution; null otherwise. It asks only once the imbalance is small enough
     * for the gap to have a chance, {@link #CHECK_IMBALANCE} times the target (relative to the demand), and
     * again only after the imbalance has fallen tenfold: each question costs about one evaluation.
     */
    private Solution newton(double[] p, double gradTol, double gapTarget) {
        double q = evaluate(p, true);
        double checkBelow = gapTarget >= 0 ? CHECK_IMBALANCE * gapTarget * Math.max(1, totalDemand) : -1;
        double pmax = 0;
        for (double v : p) {
            pmax = Math.max(pmax, Math.abs(v));
        }
        radius = Math.max(radius, 0.5 * pmax + tau);
        damping = 1e-10;
        double[] d = new double[groupCount];
        double[] trial = new double[groupCount];
        for (int it = 0; it < 200; it++) {
            double gmax = 0;
            for (double g : grad) {
                gmax = Math.max(gmax, Math.abs(g));
            }
            if (gmax <= gradTol) {
                return null;
            }
            if (gmax <= checkBelow) {
                // the flows are those at p: the last evaluation was at p, and the Hessian changes none of them
                Solution s = primalOfFlows(p);
                if (s.gap <= gapTarget && s.fullGap <= gapTarget) {
                    return s;
                }
                checkBelow = gmax / 10;
            }
            iterations++;
            solveNewtonSystem(d);
            // far from the optimum the dual can be nearly flat (a full group, a source that sheds):
            // never move one price by more than the largest shed cost in one step
            // trust region on the largest price move: a nearly singular direction (a full group
            // that one source depends on) otherwise proposes absurd steps that the line search
            // then halves a dozen times, one evaluation each
            double dmax = 0;
            for (double v : d) {
                dmax = Math.max(dmax, Math.abs(v));
            }
            double scaleDown = dmax > radius ? radius / dmax : 1;
            for (int g = 0; g < groupCount; g++) {
                d[g] *= scaleDown;
            }
            dmax *= scaleDown;
            double slope = 0;
            for (int g = 0; g < groupCount; g++) {
                slope += grad[g] * d[g];
            }
            double t = 1;
            double[] gradBefore = grad.clone();
            double qTrial = Double.NaN;
            boolean accepted = false;
            for (int ls = 0; ls < 40; ls++) {
                for (int g = 0; g < groupCount; g++) {
                    trial[g] = p[g] + t * d[g];
                }
                qTrial = evaluate(trial, false);
                // near the optimum q is flat to rounding; accept a step that is no worse within it
                double noise = 1e-13 * (Math.abs(q) + 1);
                if (qTrial >= q + ARMIJO * t * slope - noise) {
                    accepted = true;
                    break;
                }
                t *= 0.5;
            }
            if (!accepted) {
                // no ascent possible at this precision: restore the state at p and stop the stage
                evaluate(p, true);
                System.arraycopy(gradBefore, 0, grad, 0, groupCount);
                return null;
            }
            // Levenberg–Marquardt: a step that had to be cut means the quadratic model was poor
            // (a nearly flat direction, e.g. a full group one source depends on); damp the next one
            if (t == 1) {
                radius = Math.min(maxShedCost, Math.max(radius, 4 * dmax));
            } else {
                radius = Math.max(1e-9, 2 * t * dmax);
            }
            if (t == 1) {
                damping = Math.max(1e-12, damping * 0.1);
            } else if (t < 0.25) {
                damping = Math.min(1, damping * 10);
            }
            // the accepted trial's evaluation left flows, loads and gradient at the new prices: only the
            // Hessian is missing
            System.arraycopy(trial, 0, p, 0, groupCount);
            buildHessian();
            q = qTrial;
        }
        return null;
    }

    /** Fills flows, group loads and the gradient at prices p for the current τ; returns q_τ(p). */
    private double evaluate(double[] p, boolean withHessian) {
        double value = 0;
        for (int k = 0; k < sources; k++) {
            value += placeSource(k, p);
        }
        for (int g = 0; g < groupCount; g++) {
            y[g] = groups[g].load(p[g], loads[g]);
            ySlope[g] = groups[g].loadSlope(p[g], loads[g]);
            value -= groups[g].conjugate(p[g], loads[g]);
            grad[g] = -y[g];
        }
        for (int k = 0; k < sources; k++) {
            int[] sg = slotGroup[k];
            for (int a = 0; a < sg.length; a++) {
                grad[sg[a]] += flowRegular[k][a] + flowKept[k][a];
            }
        }
        if (withHessian) {
            buildHessian();
        }
        return value;
    }

    /**
     * Places source k's demand in the Gibbs distribution over its options at temperature τ, fills its
     * flows and sensitivities, and returns its smoothed dual value D_k^τ(p).
     */
    private double placeSource(int k, double[] p) {
        int[] sg = slotGroup[k];
        double[] arc = slotArc[k];
        double[] kept = slotKept[k];
        double lam = lambda[k];
        double cmin = shedCost[k];
        boolean capped = false;
        for (int a = 0; a < sg.length; a++) {
            cmin = Math.min(cmin, arc[a] + p[sg[a]]);
            capped |= kept[a] > 0;
        }
        // uncapped options only: log-sum-exp in closed form. Each option's Boltzmann factor is kept, so
        // that its flow below is that factor times λ/z: one exponential per option, and no logarithm
        // (log f = (π − c)/τ is known)
        double[] boltzmann = slotS[k];
        double z = Math.exp(-(shedCost[k] - cmin) / tau);
        for (int a = 0; a < sg.length; a++) {
            double over = arc[a] + p[sg[a]] - cmin;
            double e = over <= NEGLIGIBLE * tau ? Math.exp(-over / tau) : 0;
            boltzmann[a] = e;
            z += e;
        }
        double piK = cmin + tau * Math.log(lam / z);
        double share = lam / z;
        if (capped) {
            piK = solvePrice(k, p, piK, cmin, z);
            share = Math.exp((piK - cmin) / tau);
        }
        pi[k] = piK;
        double value = 0;
        double sh = Math.exp((piK - shedCost[k]) / tau);
        shed[k] = sh;
        shedS[k] = sh / tau;
        // c·f + τ·(f·log f − f) with log f = (π − c)/τ: f·(π − τ)
        value += sh * (piK - tau);
        for (int a = 0; a < sg.length; a++) {
            double c = arc[a] + p[sg[a]];
            // an option 60 τ above the source's price carries e^-60 of it: none, to the last digit
            double f = (c - piK) > NEGLIGIBLE * tau ? 0 : boltzmann[a] * share;
            flowRegular[k][a] = f;
            double s = f / tau;
            value += f * (piK - tau);
            if (kept[a] > 0) {
                double cd = c - discount;
                double sigma = logistic((cd - piK) / tau);
                double fk = kept[a] * sigma;
                flowKept[k][a] = fk;
                s += fk * (1 - sigma) / tau;
                value += cd * fk + tau * kept[a] * (plogp(sigma) + plogp(1 - sigma));
            } else {
                flowKept[k][a] = 0;
            }
            slotS[k][a] = s;
        }
        // D_k^τ = min_f Σ c f + τ·ent(f) with Σ f = λ; at the optimum Σ f = λ, so add π(λ − Σ f) ≈ 0
        double placed = sh;
        for (int a = 0; a < sg.length; a++) {
            placed += flowRegular[k][a] + flowKept[k][a];
        }
        return value + piK * (lam - placed);
    }

    /**
     * 1 / (1 + e^x), the share of a capped option's cap it places at {@code x} = (discounted cost − price) / τ.
     * Below −37, e^x is under half an ulp of 1, so the quotient is exactly 1: returned without the exponential.
     * At small τ most kept flows stay where they are, so this is the common case of the affinity term's
     * innermost loop; the result is the same to the last bit either way.
     */
    static double logistic(double x) {
        return x < -37 ? 1 : 1 / (1 + Math.exp(x));
    }

    private static double plogp(double s) {
        return s > 0 ? s * Math.log(s) : 0;
    }

    /**
     * The source price where the placed flow equals the demand, with capped (kept) options. The bracket:
     * {@code upper}, the price without the capped options, is always above the answer; below it, the
     * price where the uncapped options place what the caps cannot (see below), and the price this source
     * had at the last evaluation (prices move little between evaluations) on whichever side it falls;
     * failing both, a lower end grown downwards in steps of τ doubling. Newton (in log scale) starts from
     * the last price, or else the lower end, kept inside the bracket, bisecting when a step leaves it, and
     * stops once a step is below the precision of the price. (Starting in the middle of the bracket, in
     * linear scale, and stopping only at a relative residual of 1e-14 took about 24 evaluations of the
     * placed flow per source, most of them bisecting an interval a few units in the last place wide.)
     */
    private double solvePrice(int k, double[] p, double upper, double cmin, double z) {
        double lam = lambda[k];
        double[] ps = new double[2];
        // the capped options' costs less the discount, and their caps; the uncapped part of every option
        // and the shed option together place e^((π − cmin)/τ)·z, one exponential for all of them
        int capped = 0;
        double[] kept = slotKept[k];
        for (double v : kept) {
            capped += v > 0 ? 1 : 0;
        }
        double[] keptCost = new double[capped];
        double[] keptAmount = new double[capped];
        for (int a = 0, i = 0; a < kept.length; a++) {
            if (kept[a] > 0) {
                keptCost[i] = slotArc[k][a] + p[slotGroup[k][a]] - discount;
                keptAmount[i++] = kept[a];
            }
        }
        double hi = upper;
        double lo;
        // The kept flows are capped, so they place at most Σ kept: where the uncapped options alone place
        // λ − Σ kept (τ·log((λ − Σ kept)/λ) below `upper`, where they place λ) everything placed is at
        // most λ. That price is a lower end of the bracket, and usually near the answer: between the
        // kept flows' saturation and the uncapped options' rise the placed flow has a plateau that
        // Newton cannot cross and bisection crosses slowly.
        double keptTotal = 0;
        for (double v : keptAmount) {
            keptTotal += v;
        }
        double floor = lam > keptTotal ? upper + tau * Math.log((lam - keptTotal) / lam) : Double.NaN;
        double last = pi[k] < hi && pi[k] > hi - 1e3 * tau ? pi[k] : Double.NaN;
        double x = hi;
        lo = floor < hi ? floor : Double.NaN;
        if (last > floor || Double.isNaN(floor) && last < hi) {
            // the price at the last evaluation, usually the closest: Newton starts there, on either side
            x = last;
            if (placed(cmin, z, keptCost, keptAmount, x, ps) < lam) {
                lo = x;
            } else {
                hi = x;
            }
        } else if (floor < hi) {
            x = floor;
            placed(cmin, z, keptCost, keptAmount, x, ps);
        }
        if (Double.isNaN(lo)) { // no lower end yet: grow one downwards from the upper end
            double step = tau;
            lo = hi - step;
            for (int i = 0; i < 200 && placed(cmin, z, keptCost, keptAmount, lo, ps) > lam; i++) {
                hi = lo;
                step *= 2;
                lo = hi - step;
            }
            x = lo; // the last evaluation, kept in ps
        }
        double fx = ps[0] - lam;
        for (int it = 0; it < 200; it++) {
            // Newton on log(placed) − log(λ): a sum of exponentials is nearly linear in log scale, so the
            // step is good far from the root too, where plain Newton on an exponential crawls by τ per step
            // from above and overshoots from below
            double step = -Math.log(ps[0] / lam) * ps[0] / ps[1];
            if (Math.abs(fx) <= 1e-14 * lam || Math.abs(step) <= 2 * Math.ulp(x)) {
                return x; // on the root, to the precision of x
            }
            if (fx > 0) {
                hi = x;
            } else {
                lo = x;
            }
            if (hi - lo <= 1e-15 * Math.max(1, Math.abs(hi))) {
                return 0.5 * (lo + hi);
            }
            double next = x + step;
            x = next > lo && next < hi ? next : 0.5 * (lo + hi);
            fx = placed(cmin, z, keptCost, keptAmount, x, ps) - lam;
        }
        return x;
    }

    /**
     * Flow a source places at source price {@code piK}, returned and in {@code out[0]}, and its derivative
     * with respect to the price in {@code out[1]}: the shed and uncapped options together
     * {@code e^((piK − cmin)/τ)·z} (z their Boltzmann sum relative to cmin, as {@link #placeSource} has it),
     * each capped option its cap times a logistic of its discounted cost.
     */
    private double placed(double cmin, double z, double[] keptCost, double[] keptAmount, double piK, double[] out) {
        double open = Math.exp((piK - cmin) / tau) * z;
        double sum = open;
        double slope = open;
        for (int i = 0; i < keptCost.length; i++) {
            double sigma = logistic((keptCost[i] - piK) / tau);
            sum += keptAmount[i] * sigma;
            slope += keptAmount[i] * sigma * (1 - sigma);
        }
        out[0] = sum;
        out[1] = slope / tau;
        return sum;
    }

    /**
     * The Newton system's matrix at the last evaluation: its lower triangle and diagonal only, which is
     * all {@link #cholesky} reads.
     */
    private void buildHessian() {
        for (double[] row : hessian) {
            Arrays.fill(row, 0);
        }
        int[] active = new int[0];
        double[] after = new double[0];
        for (int k = 0; k < sources; k++) {
            int[] sg = slotGroup[k];
            double[] s = slotS[k];
            if (active.length < sg.length) {
                active = new int[sg.length];
            }
            int n = 0;
            double total = shedS[k];
            for (int a = 0; a < sg.length; a++) {
                if (s[a] > 0) {
                    active[n++] = a;
                    total += s[a];
                }
            }
            if (total <= 0) {
                continue;
            }
            // s_a (S − s_a) / S with S − s_a summed from the others (the shed option, the active options
            // before a and those after it), free of cancellation: suffix sums first
            if (after.length < n + 1) {
                after = new double[n + 1];
            }
            after[n] = 0;
            for (int i = n - 1; i >= 0; i--) {
                after[i] = after[i + 1] + s[active[i]];
            }
            double before = shedS[k];
            for (int i = 0; i < n; i++) {
                int a = active[i];
                int ga = sg[a];
                double others = before + after[i + 1];
                before += s[a];
                double sa = s[a] / total;
                // the lower triangle only, each pair once: it is all the Cholesky factorization reads
                // (a source's groups ascend, so gb < ga)
                double[] row = hessian[ga];
                for (int j = 0; j < i; j++) {
                    int b = active[j];
                    row[sg[b]] -= sa * s[b];
                }
                hessian[ga][ga] += sa * others;
            }
        }
        for (int g = 0; g < groupCount; g++) {
            hessian[g][g] += ySlope[g];
        }
    }

    /** Solves H d = grad by Cholesky with a small ridge (H is positive semidefinite). */
    private void solveNewtonSystem(double[] d) {
        int n = groupCount;
        double maxDiag = 0;
        for (int g = 0; g < n; g++) {
            maxDiag = Math.max(maxDiag, hessian[g][g]);
        }
        double ridge = damping * maxDiag + 1e-12 * totalDemand / tau + 1e-300;
        double[][] l = new double[n][n];
        for (int attempt = 0; attempt < 30; attempt++) {
            if (cholesky(l, ridge)) {
                break;
            }
            ridge *= 100;
        }
        double[] w = new double[n];
        for (int i = 0; i < n; i++) {
            double v = grad[i];
            for (int j = 0; j < i; j++) {
                v -= l[i][j] * w[j];
            }
            w[i] = v / l[i][i];
        }
        for (int i = n - 1; i >= 0; i--) {
            double v = w[i];
            for (int j = i + 1; j < n; j++) {
                v -= l[j][i] * d[j];
            }
            d[i] = v / l[i][i];
        }
    }

    private boolean cholesky(double[][] l, double ridge) {
        int n = groupCount;
        for (int i = 0; i < n; i++) {
            for (int j = 0; j <= i; j++) {
                double v = hessian[i][j] + (i == j ? ridge : 0);
                double[] li = l[i];
                double[] lj = l[j];
                for (int m = 0; m < j; m++) {
                    v -= li[m] * lj[m];
                }
                if (i == j) {
                    if (!(v > 0)) {
                        return false;
                    }
                    li[i] = Math.sqrt(v);
                } else {
                    li[j] = v / lj[j];
                }
            }
        }
        return true;
    }

    /**
     * The feasible routing at prices p (the Gibbs flows of the last evaluation, cleaned of negligible
     * flows and of rounding beyond capacity), its cost and the exact dual bound with shed fixed.
     */
    private Solution primal(double[] p) {
        evaluate(p, false);
        return primalOfFlows(p);
    }

    /** {@link #primal} from the flows of the last evaluation, which must have been at p. */
    private Solution primalOfFlows(double[] p) {
        double[][] flow = new double[sources][];
        double[] shedOut = new double[sources];
        double[] load = new double[groupCount];
        for (int k = 0; k < sources; k++) {
            int m = slotGroup[k].length;
            flow[k] = new double[m];
            int biggest = -1;
            for (int a = 0; a < m; a++) {
                flow[k][a] = flowRegular[k][a] + flowKept[k][a];
                if (biggest < 0 || flow[k][a] > flow[k][biggest]) {
                    biggest = a;
                }
            }
            double placed = shed[k];
            for (int a = 0; a < m; a++) {
                placed += flow[k][a];
            }
            // scale to the exact demand, then fold negligible flows into the biggest option
            double scale = lambda[k] / placed;
            shedOut[k] = shed[k] * scale;
            for (int a = 0; a < m; a++) {
                flow[k][a] *= scale;
            }
            double negligible = 1e-12 * lambda[k];
            if (biggest >= 0) {
                for (int a = 0; a < m; a++) {
                    if (a != biggest && flow[k][a] < negligible) {
                        flow[k][biggest] += flow[k][a];
                        flow[k][a] = 0;
                    }
                }
                if (shedOut[k] < negligible) {
                    flow[k][biggest] += shedOut[k];
                    shedOut[k] = 0;
                }
            }
            for (int a = 0; a < m; a++) {
                load[slotGroup[k][a]] += flow[k][a];
            }
        }
        repairCapacity(flow, shedOut, load);
        fillPricedGroups(p, flow, shedOut, load);
        return finish(p, flow, shedOut, load);
    }

    private Solution finish(double[] p, double[][] flow, double[] shedOut, double[] load) {
        double objective = 0;
        double[][] engineLoads = new double[groupCount][];
        for (int g = 0; g < groupCount; g++) {
            engineLoads[g] = new double[groups[g].engines.length];
            groups[g].split(load[g], engineLoads[g]);
            objective += groups[g].cost(engineLoads[g]);
        }
        for (int k = 0; k < sources; k++) {
            for (int a = 0; a < flow[k].length; a++) {
                objective += slotArc[k][a] * flow[k][a] - discount * Math.min(flow[k][a], slotKept[k][a]);
            }
        }
        double[] prices = new double[groupCount];
        for (int g = 0; g < groupCount; g++) {
            prices[g] = Math.max(p[g], groups[g].priceFloor);
        }
        double bound = bound(prices, shedOut, false);
        double gap = objective > 0 ? Math.max(0, objective - bound) / objective : 0;
        double full = objective;
        for (int k = 0; k < sources; k++) {
            full += shedCost[k] * shedOut[k];
        }
        double fullBound = bound(prices, shedOut, true);
        // relative to the latency cost, not to the whole objective: the shed penalty would otherwise
        // hide how well the shed is placed among sources of one priority
        double fullGap = objective > 0 ? Math.max(0, full - fullBound) / objective : (full > fullBound ? 1 : 0);
        return new Solution(flow, shedOut, prices, engineLoads, objective, bound, gap, fullGap);
    }

    /**
     * A group whose price is above its marginal cost at capacity should be full; if rounding left it
     * a hair short while a source using it sheds, move that much from the shed to the group. Without
     * this, the bound with shed fixed would charge the group's (large) shadow price on the shortfall.
     */
    private void fillPricedGroups(double[] p, double[][] flow, double[] shedOut, double[] load) {
        for (int g = 0; g < groupCount; g++) {
            double deficit = groups[g].capacity - load[g];
            if (deficit <= 0 || p[g] <= groups[g].priceCeiling) {
                continue;
            }
            for (int k = 0; k < sources && deficit > 0; k++) {
                int a = indexOf(slotGroup[k], g);
                if (a < 0 || shedOut[k] <= 0) {
                    continue;
                }
                double move = Math.min(deficit, shedOut[k]);
                shedOut[k] -= move;
                flow[k][a] += move;
                load[g] += move;
                deficit -= move;
            }
        }
    }

    private static int indexOf(int[] a, int v) {
        for (int i = 0; i < a.length; i++) {
            if (a[i] == v) {
                return i;
            }
        }
        return -1;
    }

    /** Moves flow beyond a group's capacity (rounding residue) to the source's roomiest other group, else sheds it. */
    private void repairCapacity(double[][] flow, double[] shedOut, double[] load) {
        for (int g = 0; g < groupCount; g++) {
            double excess = load[g] - groups[g].capacity;
            if (excess <= 0) {
                continue;
            }
            double before = load[g];
            for (int k = 0; k < sources; k++) {
                int[] sg = slotGroup[k];
                for (int a = 0; a < sg.length; a++) {
                    if (sg[a] != g || flow[k][a] == 0) {
                        continue;
                    }
                    double move = flow[k][a] * excess / before;
                    flow[k][a] -= move;
                    load[g] -= move;
                    int target = -1;
                    double room = move;
                    for (int b = 0; b < sg.length; b++) {
                        double free = groups[sg[b]].capacity - load[sg[b]];
                        if (b != a && free >= room) {
                            target = b;
                            room = free;
                        }
                    }
                    if (target >= 0) {
                        flow[k][target] += move;
                        load[sg[target]] += move;
                    } else {
                        shedOut[k] += move;
                    }
                }
            }
            load[g] = Math.min(load[g], groups[g].capacity);
        }
    }

    /**
     * The exact Lagrangian dual at prices p: each source places its demand on its cheapest options
     * (kept flow first where cheaper), less Σ H_g*(p_g). With {@code withShed} false the shed amounts
     * are fixed and only the routed demand is placed; with it true, shedding is one more option at
     * cost P_k and the whole demand is placed.
     */
    private double bound(double[] p, double[] shedOut, boolean withShed) {
        double value = 0;
        double[] cost = new double[0];
        double[] cap = new double[0];
        for (int k = 0; k < sources; k++) {
            int m = slotGroup[k].length;
            double routed = withShed ? lambda[k] : lambda[k] - shedOut[k];
            if (routed <= 0) {
                continue;
            }
            if (cost.length < m) {
                cost = new double[m];
                cap = new double[m];
            }
            // the cheapest option without a cap takes whatever the kept flows cheaper than it leave
            double best = withShed ? shedCost[k] : Double.POSITIVE_INFINITY;
            int n = 0;
            for (int a = 0; a < m; a++) {
                double c = slotArc[k][a] + p[slotGroup[k][a]];
                best = Math.min(best, c);
                if (slotKept[k][a] > 0) {
                    cost[n] = c - discount;
                    cap[n] = slotKept[k][a];
                    n++;
                }
            }
            // kept flows cheaper than that, cheapest first (insertion sort: a source keeps flow in a few groups)
            int cheaper = 0;
            for (int i = 0; i < n; i++) {
                if (cost[i] < best) {
                    double c = cost[i];
                    double u = cap[i];
                    int at = cheaper++;
                    while (at > 0 && cost[at - 1] > c) {
                        cost[at] = cost[at - 1];
                        cap[at] = cap[at - 1];
                        at--;
                    }
                    cost[at] = c;
                    cap[at] = u;
                }
            }
            double left = routed;
            for (int i = 0; i < cheaper && left > 0; i++) {
                double take = Math.min(left, cap[i]);
                value += take * cost[i];
                left -= take;
            }
            if (left > 0 && best < Double.POSITIVE_INFINITY) {
                value += left * best;
            }
        }
        double[] scratch;
        for (int g = 0; g < groupCount; g++) {
            scratch = new double[groups[g].engines.length];
            groups[g].load(p[g], scratch);
            value -= groups[g].conjugate(p[g], scratch);
        }
        return value;
    }
}
