package dev.sextant.control;

import dev.sextant.request.ReuseTimes;
import java.util.Arrays;

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

    /** Adds the counts of one report ({@link ReuseTimes#BUCKETS} of them). */
    void add(long[] c) {
        for (int i = 0; i < counts.length && i < c.length; i++) {
            counts[i] += c[i];
        }
        if (c.length == ReuseTimes.BUCKETS) {
            requests += c[ReuseTimes.REQUESTS];
        }
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
    }

    /** Forgets: every count times {@code f} in (0, 1]. */
    void decay(double f) {
        for (int i = 0; i < counts.length; i++) {
            counts[i] *= f;
        }
        requests *= f;
    }

    /** The prompt sizes counted of the requests that follow an earlier one of their conversation (decayed). */
    double weight() {
        return Arrays.stream(counts).sum();
    }

    /**
     * The share of the times below {@code seconds}: within a bucket spread evenly over the logarithm of the time (the
     * first bucket, from 0, evenly over the time), 1 at infinity. 0 without counts.
     */
    double cdf(double seconds) {
        double all = weight();
        if (!(all > 0) || !(seconds > 0)) {
            return 0;
        }
        if (Double.isInfinite(seconds)) {
            return 1;
        }
        double[] b = ReuseTimes.BOUNDS_SECONDS;
        double below = 0;
        for (int i = 0; i < b.length; i++) {
            if (seconds < b[i]) {
                double lo = i == 0 ? 0 : b[i - 1];
                double part = i == 0 ? seconds / b[0] : Math.log(seconds / lo) / Math.log(b[i] / lo);
                return (below + counts[i] * part) / all;
            }
            below += counts[i];
        }
        return below / all;
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
