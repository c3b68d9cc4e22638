package dev.sextant.control;

import dev.sextant.signal.Histogram;
import java.util.ArrayList;
import java.util.List;

/**
 * How variable a group's output lengths are, from the engines' histograms of output tokens per request (vLLM's
 * {@code vllm:request_generation_tokens}), with forgetting: the squared coefficient of variation c² = Var(n)/E[n]²
 * that the queue for a place in the batch depends on ({@link Batching}).
 *
 * <p>Implementation note. The histogram's buckets are wide (vLLM's are 1, 2, 5, 10, 20, 50, 100, 200, 500, …), so
 * the variance is not read off the buckets (a uniform spread inside them makes a narrow distribution look wide)
 * but fitted: two one-parameter families, each with its mean held at the histogram's exact mean (its sum over its
 * count), the Weibull (shape k; c² = Γ(1 + 2/k)/Γ(1 + 1/k)² − 1; k = 1 is the exponential, k &gt; 1 lengths bunched
 * around their mean, k &lt; 1 long tails) and the log-normal (spread σ; c² = exp(σ²) − 1; the heavier right tail),
 * each at the shape that makes the bucket counts most likely (a grid, then golden-section search), and the one
 * that makes them more likely wins. One family alone misjudges the other's shapes: the log-normal reads
 * exponential lengths as c² ≈ 3.4, the Weibull reads a log-normal of c² = 3.2 as 1.4. Until the histograms hold
 * evidence the estimate is the prior c² = 1 (exponential lengths, what the M/M/N queue assumes), blended
 * geometrically by how many requests were seen against {@link #PRIOR_REQUESTS}.
 */
final class OutputLengths {
    /** Requests whose lengths weigh as much as the prior c² = 1. */
    static final double PRIOR_REQUESTS = 30;
    /** The prior: exponential lengths. */
    static final double PRIOR_CV2 = 1;
    /**
     * How much the evidence grows before the fit is redone (a fit takes some thousand evaluations of a distribution
     * function; a group's histograms grow at every scrape of every engine, and a tenth more requests moves the fit
     * by little).
     */
    static final double REFIT = 1.1;

    /** Weibull shapes searched: c² from about 190 down to 0.003. */
    private static final double MIN_SHAPE = 0.2;
    private static final double MAX_SHAPE = 25;
    /** Log-normal spreads searched: c² from 1e-4 to about 8,000. */
    private static final double MIN_SIGMA = 0.01;
    private static final double MAX_SIGMA = 3;

    /** Finished requests per bucket (lower, upper], decayed; buckets as the engines export them. */
    private final List<double[]> buckets = new ArrayList<>();
    private double count;
    private double sum;
    private double fittedCv2 = Double.NaN;
    /** Requests behind {@link #fittedCv2}, decayed like the rest: the fit is redone once 10% more have come. */
    private double fittedCount;

    /** Adds the requests of one interval's histogram (a difference of two scrapes). */
    void add(Histogram h) {
        if (h.count() <= 0 || h.buckets().isEmpty() || !(h.sum() > 0)) {
            return;
        }
        double lower = 0;
        double below = 0;
        for (Histogram.Bucket b : h.buckets()) {
            double n = b.cumulativeCount() - below;
            if (n > 0) {
                bucket(lower, b.upperBound())[2] += n;
            }
            below = Math.max(below, b.cumulativeCount());
            lower = b.upperBound();
        }
        count += h.count();
        sum += h.sum();
    }

    private double[] bucket(double lower, double upper) {
        for (double[] b : buckets) {
            if (b[0] == lower && b[1] == upper) {
                return b;
            }
        }
        double[] b = {lower, upper, 0};
        buckets.add(b);
        return b;
    }

    /** Forgets by the factor {@code f} in (0, 1]: every count and the sum alike, so the fit itself is unchanged. */
    void decay(double f) {
        count *= f;
        sum *= f;
        fittedCount *= f;
        for (double[] b : buckets) {
            b[2] *= f;
        }
    }

    /** Requests behind the estimate, decayed. */
    double requests() {
        return count;
    }

    /** The estimate of c², the prior blended with the fit by the evidence. */
    double cv2() {
        if (!(count > 0) || !(sum > 0)) {
            return PRIOR_CV2;
        }
        if (count > REFIT * fittedCount) {
            fittedCv2 = fit();
            fittedCount = count;
        }
        if (Double.isNaN(fittedCv2)) {
            return PRIOR_CV2;
        }
        double w = count / (count + PRIOR_REQUESTS);
        return Math.pow(fittedCv2, w) * Math.pow(PRIOR_CV2, 1 - w);
    }

    /** The estimate as an operator reads it: "output lengths c² 0.03 from 1124 requests (prior 1)". */
    String why() {
        if (!(count >= 0.5) || !(sum > 0)) {
            return "output lengths c² 1 assumed (no histogram of them)";
        }
        return String.format(java.util.Locale.ROOT, "output lengths c² %.2f from %.0f requests (prior %.0f)", cv2(),
                count, PRIOR_CV2);
    }

    /**
     * The c² of whichever family fits the buckets better at its most likely shape, the mean held at the observed one
     * (both have one free parameter, so their likelihoods compare as they are); NaN when the buckets say nothing.
     */
    private double fit() {
        double mean = sum / count;
        double[] weibull = mostLikely(MIN_SHAPE, MAX_SHAPE, k -> logLikelihood(k, mean, WEIBULL));
        double[] logNormal = mostLikely(MIN_SIGMA, MAX_SIGMA, sigma -> logLikelihood(sigma, mean, LOG_NORMAL));
        if (!Double.isFinite(weibull[1]) && !Double.isFinite(logNormal[1])) {
            return Double.NaN;
        }
        return weibull[1] >= logNormal[1] ? weibullCv2(weibull[0]) : Math.expm1(logNormal[0] * logNormal[0]);
    }

    /** The shape in [lo, hi] (a log grid, then golden-section search) where {@code l} is largest, and l there. */
    private static double[] mostLikely(double lo, double hi, java.util.function.DoubleUnaryOperator l) {
        int grid = 60;
        double best = Double.NEGATIVE_INFINITY;
        int at = 0;
        double[] shapes = new double[grid];
        for (int i = 0; i < grid; i++) {
            shapes[i] = lo * Math.pow(hi / lo, i / (grid - 1.0));
            double v = l.applyAsDouble(shapes[i]);
            if (v > best) {
                best = v;
                at = i;
            }
        }
        double a = shapes[Math.max(0, at - 1)];
        double b = shapes[Math.min(grid - 1, at + 1)];
        double g = (Math.sqrt(5) - 1) / 2;
        for (int it = 0; it < 40; it++) {
            double c = b - g * (b - a);
            double d = a + g * (b - a);
            if (l.applyAsDouble(c) >= l.applyAsDouble(d)) {
                b = d;
            } else {
                a = c;
            }
        }
        double shape = 0.5 * (a + b);
        return new double[] {shape, l.applyAsDouble(shape)};
    }

    /** A family of distributions on (0, ∞): its distribution function at x for a shape, the mean held fixed. */
    private interface Family {
        double cdf(double x, double shape, double mean);
    }

    private static final Family WEIBULL = (x, k, mean) ->
            -Math.expm1(-Math.pow(x * Math.exp(logGamma(1 + 1 / k)) / mean, k));

    private static final Family LOG_NORMAL = (x, sigma, mean) ->
            normalCdf((Math.log(x) - Math.log(mean) + sigma * sigma / 2) / sigma);

    /** c² of a Weibull distribution of shape k. */
    static double weibullCv2(double k) {
        return Math.exp(logGamma(1 + 2 / k) - 2 * logGamma(1 + 1 / k)) - 1;
    }

    private double logLikelihood(double shape, double mean, Family f) {
        double l = 0;
        for (double[] b : buckets) {
            if (b[2] <= 0) {
                continue;
            }
            double upper = Double.isInfinite(b[1]) ? 1 : f.cdf(b[1], shape, mean);
            double lower = b[0] <= 0 ? 0 : f.cdf(b[0], shape, mean);
            l += b[2] * Math.log(Math.max(1e-300, upper - lower));
        }
        return l;
    }

    /** The standard normal distribution function, from the complementary error function. */
    static double normalCdf(double z) {
        return 0.5 * erfc(-z / Math.sqrt(2));
    }

    /**
     * The complementary error function, relative error below 1.2e-7 everywhere (the Chebyshev fit of Press et al.,
     * <i>Numerical Recipes</i>, §6.2).
     */
    static double erfc(double x) {
        double z = Math.abs(x);
        double t = 1 / (1 + 0.5 * z);
        double r = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
                + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
                + t * (-0.82215223 + t * 0.17087277)))))))));
        return x >= 0 ? r : 2 - r;
    }

    /**
     * ln Γ(x) for x &gt; 0, by Lanczos' approximation (g = 7, nine coefficients; relative error about 1e-15),
     * with the reflection-free form valid for x ≥ 0.5 and Γ(x) = Γ(x + 1)/x below.
     */
    static double logGamma(double x) {
        if (x < 0.5) {
            return logGamma(x + 1) - Math.log(x);
        }
        double[] c = {0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7};
        double y = x - 1;
        double a = c[0];
        double t = y + 7.5;
        for (int i = 1; i < 9; i++) {
            a += c[i] / (y + i);
        }
        return 0.5 * Math.log(2 * Math.PI) + (y + 0.5) * Math.log(t) - t + Math.log(a);
    }
}
