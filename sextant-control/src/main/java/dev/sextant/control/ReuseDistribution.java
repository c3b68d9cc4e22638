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
    /** The counts summed up to each bucket's end, made when first needed after a change (null: not made). */
    private double[] below;

    /** Adds the counts of one report ({@link ReuseTimes#BUCKETS} of them, as {@link GatewayReport} holds them). */
    void add(long[] c) {
        for (int i = 0; i < counts.length; i++) {
            counts[i] += c[i];
        }
        requests += c[ReuseTimes.REQUESTS];
        below = null;
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
        below = null;
    }

    /** Forgets: every count times {@code f} in (0, 1]. */
    void decay(double f) {
        for (int i = 0; i < counts.length; i++) {
            counts[i] *= f;
        }
        requests *= f;
        below = null;
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

    /** The median time, s (NaN without counts). */
    double median() {
        if (!(weight() > 0)) {
            return Double.NaN;
        }
        double lo = 0;
        double hi = ReuseTimes.BOUNDS_SECONDS[ReuseTimes.BOUNDS_SECONDS.length - 1];
        if (cdf(hi) < 0.5) {
            return Double.POSITIVE_INFINITY;
        }
        for (int i = 0; i < 60; i++) {
            double mid = 0.5 * (lo + hi);
            if (cdf(mid) < 0.5) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        return hi;
    }
}
