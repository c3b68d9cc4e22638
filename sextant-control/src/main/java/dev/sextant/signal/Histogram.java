package dev.sextant.signal;

import java.util.ArrayList;
import java.util.List;

/**
 * A Prometheus histogram as scraped: cumulative bucket counts, total count and sum.
 *
 * @param buckets cumulative buckets in strictly increasing order of upper bound; the last one is usually
 *                {@code +Inf}; may be empty
 * @param count   number of observations, ≥ 0 (from {@code _count})
 * @param sum     sum of the observations, in the histogram's unit (seconds for the latency histograms)
 */
public record Histogram(List<Bucket> buckets, double count, double sum) {
    /** A histogram with no bucket and no observation. */
    public static final Histogram EMPTY = new Histogram(List.of(), 0, 0);

    /**
     * One cumulative bucket.
     *
     * @param upperBound      the {@code le} bound, inclusive; may be {@code +Inf}
     * @param cumulativeCount observations ≤ {@code upperBound}
     */
    public record Bucket(double upperBound, double cumulativeCount) {
        public Bucket {
            if (Double.isNaN(upperBound)) {
                throw new IllegalArgumentException("upper_bound: NaN (expected: a number or +Inf)");
            }
        }
    }

    public Histogram {
        buckets = List.copyOf(buckets);
        for (int i = 1; i < buckets.size(); i++) {
            if (!(buckets.get(i).upperBound() > buckets.get(i - 1).upperBound())) {
                throw new IllegalArgumentException("buckets: bound " + buckets.get(i).upperBound() + " after "
                        + buckets.get(i - 1).upperBound() + " (expected: strictly increasing bounds)");
            }
        }
    }

    /**
     * This histogram where it is one a Prometheus client can export, else as much of it as is: {@link #EMPTY} when
     * its count or sum is negative, not finite or beyond {@link EngineMetrics#MAX_COUNTER}, or its count not whole;
     * without its buckets when a bucket's count is negative, not finite, not whole, below the bucket before it, or
     * above the count. This histogram itself when nothing is wrong.
     */
    public Histogram sane() {
        double max = EngineMetrics.MAX_COUNTER;
        if (!(count >= 0 && count <= max && whole(count) && sum >= 0 && sum <= max)) {
            return EMPTY;
        }
        double before = 0;
        for (Bucket b : buckets) {
            double c = b.cumulativeCount();
            if (!(Double.isFinite(c) && c >= before && c <= count && whole(c))) {
                return new Histogram(List.of(), count, sum);
            }
            before = c;
        }
        return this;
    }

    /**
     * True for a count of observations: a whole number. A count of 1e-300 once made one request's prompt 1e309 tokens
     * (the interval's prompt tokens divided by it).
     */
    private static boolean whole(double c) {
        return c == Math.rint(c);
    }

    /** Mean observation {@code sum / count}; {@code NaN} when there is no observation. */
    public double mean() {
        return count > 0 ? sum / count : Double.NaN;
    }

    /**
     * The observations made since {@code earlier}, a scrape of the same histogram: bucket by bucket, count and
     * sum differences. When the count went down the engine restarted, and, as Prometheus' {@code rate} does,
     * this histogram is taken whole as the difference. Buckets whose bound {@code earlier} lacks are kept as
     * they are.
     */
    public Histogram minus(Histogram earlier) {
        if (count < earlier.count) {
            return this;
        }
        List<Bucket> out = new ArrayList<>(buckets.size());
        int j = 0;
        for (Bucket b : buckets) {
            while (j < earlier.buckets.size() && earlier.buckets.get(j).upperBound() < b.upperBound()) {
                j++;
            }
            double before = j < earlier.buckets.size() && earlier.buckets.get(j).upperBound() == b.upperBound()
                    ? earlier.buckets.get(j).cumulativeCount() : 0;
            out.add(new Bucket(b.upperBound(), Math.max(0, b.cumulativeCount() - before)));
        }
        return new Histogram(out, count - earlier.count, sum - earlier.sum);
    }

    /**
     * An estimate of quantile {@code q}, interpolating linearly inside the bucket that holds it, as Prometheus'
     * {@code histogram_quantile} does (the lowest bucket starts at 0; a quantile in the {@code +Inf} bucket
     * returns the highest finite bound).
     *
     * @param q in [0, 1]
     * @return the estimate in the histogram's unit; {@code NaN} when there are no observations or no buckets
     */
    public double quantile(double q) {
        if (!(q >= 0 && q <= 1)) {
            throw new IllegalArgumentException("q: " + q + " (expected: in [0, 1])");
        }
        if (buckets.isEmpty()) {
            return Double.NaN;
        }
        double total = buckets.get(buckets.size() - 1).cumulativeCount();
        if (!(total > 0)) {
            return Double.NaN;
        }
        double rank = q * total;
        double lowerBound = 0;
        double lowerCount = 0;
        for (Bucket b : buckets) {
            if (b.cumulativeCount() >= rank) {
                if (Double.isInfinite(b.upperBound())) {
                    return lowerBound;
                }
                double inBucket = b.cumulativeCount() - lowerCount;
                return inBucket <= 0 ? b.upperBound()
                        : lowerBound + (b.upperBound() - lowerBound) * (rank - lowerCount) / inBucket;
            }
            lowerBound = b.upperBound();
            lowerCount = b.cumulativeCount();
        }
        return lowerBound;
    }
}
