package dev.sextant.control;

import dev.sextant.request.ReuseTimes;

/**
 * The distribution of the times between the end of a conversation's request and its next request, from the
 * gateways' counts ({@link ReuseTimes}: one count per bucket of {@link ReuseTimes#BOUNDS_SECONDS}), forgotten like
 * the rest of the evidence: what decides whether an engine's cache still holds a conversation's context when its
 * next turn comes.
 */
final class ReuseDistribution {
    /** The counts of the times, by bucket ({@link ReuseTimes#FIRST_SEEN} left out). */
    private final double[] counts = new double[ReuseTimes.FIRST_SEEN];
    /** Requests counted. */
    private double requests;
    /** The prompt sizes counted of the requests whose conversation was not seen before (decayed). */
    private double firstSeen;
    /** The counts summed up to each bucket's end, made when first needed after a change (null: not made). */
    private double[] below;
    /** The integrals of the counts below the time up to each bound, made when first needed after a change (null: not made). */
    private double[] integral;

    /** Adds the counts of one report ({@link ReuseTimes#BUCKETS} of them, as {@link GatewayReport} holds them). */
    void add(long[] c) {
        for (int i = 0; i < counts.length; i++) {
            counts[i] += c[i];
        }
        requests += c[ReuseTimes.REQUESTS];
        firstSeen += c[ReuseTimes.FIRST_SEEN];
        below = null;
        integral = null;
    }

    /** Requests counted (decayed). */
    double requests() {
        return requests;
    }

    /** Adds another distribution's counts. */
    void add(ReuseDistribution other) {
        for (int i = 0; i < counts.length; i++) {
            counts[i] += other.counts[i];
        }
        requests += other.requests;
        firstSeen += other.firstSeen;
        below = null;
        integral = null;
    }

    /** Forgets: every count times {@code f} in (0, 1]. */
    void decay(double f) {
        for (int i = 0; i < counts.length; i++) {
            counts[i] *= f;
        }
        requests *= f;
        firstSeen *= f;
        below = null;
        integral = null;
    }

    /** The prompt sizes counted of the requests that follow an earlier one of their conversation (decayed). */
    double weight() {
        return sums()[counts.length];
    }

    /**
     * {@link #below}, made if need be: entry i the counts of the buckets before i (i below the last), the last entry
     * all of them.
     */
    private double[] sums() {
        double[] b = below;
        if (b == null) {
            b = new double[counts.length + 1];
            for (int i = 0; i < counts.length - 1; i++) {
                b[i + 1] = b[i] + counts[i];
            }
            b[counts.length] = java.util.Arrays.stream(counts).sum(); // compensated summation
            below = b;
        }
        return b;
    }

    /**
     * The share of the times below {@code seconds}: within a bucket spread evenly over the logarithm of the time (the
     * first bucket, from 0, evenly over the time), 1 at infinity. 0 without counts.
     */
    double cdf(double seconds) {
        double[] b = sums();
        double all = b[counts.length];
        if (!(all > 0) || !(seconds > 0)) {
            return 0;
        }
        if (Double.isInfinite(seconds)) {
            return 1;
        }
        double[] bounds = ReuseTimes.BOUNDS_SECONDS;
        int i = ReuseTimes.bucket(seconds);
        if (i >= bounds.length) {
            return b[bounds.length] / all;
        }
        double lo = i == 0 ? 0 : bounds[i - 1];
        double part = i == 0 ? seconds / bounds[0] : Math.log(seconds / lo) / Math.log(bounds[i] / lo);
        return (b[i] + counts[i] * part) / all;
    }

    /**
     * The share of requests that another request of their conversation follows, in [0, 1]: as many conversations end
     * as start, so the requests followed by a later one weigh as much as those that follow an earlier one, and the
     * rest as much as the conversations' first requests ({@link ReuseTimes#FIRST_SEEN}). 0 without counts.
     */
    double returning() {
        double w = weight();
        return w + firstSeen > 0 ? w / (w + firstSeen) : 0;
    }

    /**
     * How long, on average, the context a request leaves stays its conversation's latest, counted up to {@code t}
     * seconds after the request ended: ∫₀ᵗ (1 − r·G(u)) du, r = {@link #returning()}, G = {@link #cdf}. A cache that
     * keeps contexts t seconds after their last use holds, per request per second, this many seconds of contexts: a
     * conversation that comes back within t replaces its context by the longer one of its new request, and is not
     * held twice. At infinity, infinite unless every conversation comes back (then the mean time to its return).
     */
    double occupancy(double t) {
        if (!(t > 0)) {
            return 0;
        }
        if (Double.isInfinite(t)) {
            double[] bounds = ReuseTimes.BOUNDS_SECONDS;
            return growsBeyondTheLastBound() ? Double.POSITIVE_INFINITY : occupancy(bounds[bounds.length - 1]);
        }
        return t - returning() * cdfIntegral(t);
    }

    /**
     * The time t at which {@link #occupancy} reaches {@code seconds}: how long a cache with room for {@code seconds}
     * of requests' contexts keeps each (infinite when it never does: every conversation comes back, and the cache
     * holds them all).
     *
     * <p>Implementation note. The loop asks this at every load a law is evaluated at, so it costs a few logarithms:
     * the bucket is found from the occupancy at the buckets' bounds (made with the sums), and the time within it by
     * Newton's method (the occupancy's slope is 1 − r·G), bisecting where a step would leave the bucket.
     */
    double keptFor(double seconds) {
        if (!(seconds > 0)) {
            return 0;
        }
        double[] in = integrals();
        double all = sums()[counts.length];
        if (!(all > 0)) {
            return seconds;
        }
        double r = returning();
        double[] bounds = ReuseTimes.BOUNDS_SECONDS;
        for (int i = 0; i < bounds.length; i++) {
            if (bounds[i] - r * in[i] / all >= seconds) { // the occupancy at bound i
                return within(i, seconds);
            }
        }
        if (!growsBeyondTheLastBound()) {
            return Double.POSITIVE_INFINITY;
        }
        double last = bounds[bounds.length - 1];
        return last + (seconds - occupancy(last)) / slopeBeyondTheLastBound();
    }

    /** The occupancy's slope beyond the last bound, 1 − r·G there (1 without counts). */
    private double slopeBeyondTheLastBound() {
        double all = sums()[counts.length];
        return all > 0 ? 1 - returning() * sums()[ReuseTimes.BOUNDS_SECONDS.length] / all : 1;
    }

    /** Whether the occupancy grows without end: some conversations are not back by the last bound. */
    private boolean growsBeyondTheLastBound() {
        return slopeBeyondTheLastBound() > 1e-12;
    }

    /** The t in bucket {@code i} at which the occupancy is {@code seconds}. */
    private double within(int i, double seconds) {
        double r = returning();
        double[] bounds = ReuseTimes.BOUNDS_SECONDS;
        double lo = i == 0 ? 0 : bounds[i - 1];
        double hi = bounds[i];
        double t = 0.5 * (lo + hi);
        for (int it = 0; it < 60; it++) {
            double f = occupancy(t) - seconds;
            if (f < 0) {
                lo = t;
            } else {
                hi = t;
            }
            double next = t - f / (1 - r * cdf(t));
            if (!(next > lo && next < hi)) {
                next = 0.5 * (lo + hi);
            }
            if (Math.abs(next - t) <= 1e-12 * hi) {
                return next;
            }
            t = next;
        }
        return t;
    }

    /**
     * {@link #integral}, made if need be: entry i the integral up to bound i of the counts below the time, unscaled
     * (∫₀^bound_i G · all).
     */
    private double[] integrals() {
        double[] in = integral;
        if (in == null) {
            double[] b = sums();
            double[] bounds = ReuseTimes.BOUNDS_SECONDS;
            in = new double[bounds.length];
            in[0] = counts[0] * bounds[0] / 2;
            for (int i = 1; i < bounds.length; i++) {
                in[i] = in[i - 1] + part(b, i, bounds[i]);
            }
            integral = in;
        }
        return in;
    }

    /** ∫ from bucket i's lower bound to {@code u} of the counts below the time (unscaled); i ≥ 1. */
    private double part(double[] b, int i, double u) {
        double lo = ReuseTimes.BOUNDS_SECONDS[i - 1];
        // G·all = b_i + c_i·ln(u/lo)/ln(hi/lo) on the bucket; ∫ ln(u/lo) du = u·ln(u/lo) − u + lo
        return b[i] * (u - lo) + counts[i] * (u * Math.log(u / lo) - u + lo)
                / Math.log(ReuseTimes.BOUNDS_SECONDS[i] / lo);
    }

    /** ∫₀ᵗ G(u) du for the G of {@link #cdf}, in closed form within t's bucket; t finite, &gt; 0. */
    private double cdfIntegral(double t) {
        double[] b = sums();
        double all = b[counts.length];
        if (!(all > 0)) {
            return 0;
        }
        double[] in = integrals();
        double[] bounds = ReuseTimes.BOUNDS_SECONDS;
        int i = ReuseTimes.bucket(t);
        double sum;
        if (i == 0) {
            sum = counts[0] * t * t / (2 * bounds[0]);
        } else if (i < bounds.length) {
            sum = in[i - 1] + part(b, i, t);
        } else {
            sum = in[bounds.length - 1] + b[bounds.length] * (t - bounds[bounds.length - 1]);
        }
        return sum / all;
    }

    /** The median time, s (NaN without counts). */
    double median() {
        return quantile(0.5);
    }

    /**
     * The least time t with {@link #cdf}(t) ≥ {@code p}, p in (0, 1]: the cdf inverted within its bucket (evenly over
     * the logarithm of the time, the first bucket over the time); infinite where only the times beyond the last bound
     * reach p; NaN without counts.
     */
    double quantile(double p) {
        double[] b = sums();
        double all = b[counts.length];
        if (!(all > 0)) {
            return Double.NaN;
        }
        double target = p * all;
        double[] bounds = ReuseTimes.BOUNDS_SECONDS;
        for (int i = 0; i < bounds.length; i++) {
            if (counts[i] > 0 && b[i] + counts[i] >= target) {
                double part = Math.max(0, (target - b[i]) / counts[i]);
                if (i == 0) {
                    return part * bounds[0];
                }
                double lo = bounds[i - 1];
                return lo * Math.pow(bounds[i] / lo, part);
            }
        }
        return Double.POSITIVE_INFINITY;
    }
}
