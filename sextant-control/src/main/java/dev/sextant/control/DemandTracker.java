package dev.sextant.control;

import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.Locale;

/**
 * The demand of one (gateway process, class): the arrivals its reports counted, averaged over the longest run of
 * recent reports that agree with each other, within {@link ControlOptions#demandWindow()}.
 *
 * <p>Implementation note. Going back from the newest report, an older one joins the average while its rate is
 * within four standard deviations (of the difference of two Poisson counts) and 10% of the average of the newer
 * ones. A steady demand then averages the whole window (a report is excluded by noise alone about once in 16,000:
 * a fleet has hundreds of these estimates, and at three standard deviations one of them would split by chance
 * every few reports), so the estimate does not follow noise;
 * a surge, a failover or a ramp is followed from the first report that shows it, because the reports from before
 * the change disagree with the ones after it and drop out of the average at once. Within the reports averaged, a
 * trend (a ramp slower than one report can show) is fitted by weighted least squares of rate on time, each report
 * weighted by its length (the inverse of its Poisson variance); when the slope is more than four standard errors
 * from zero, the estimate is the fitted line at the newest report rather than the mean, which lags a ramp by half
 * the window. A lone newest report that disagrees with the agreeing reports before it is held back until the next
 * one confirms it: one interval of extraordinary arrivals (a thousand requests sent at once) is not a new level of
 * demand, and planning for it after it has passed would only shed requests that are not coming. While the
 * reports cannot yet tell a ramp from a level, the loop keeps the configured demand as their floor
 * ({@link #upperRate}).
 */
final class DemandTracker {
    /** How many Poisson standard deviations a report may differ from the newer ones and still be averaged with them. */
    static final double AGREEMENT_SD = 4;
    /** … and by how much relative to them, at least (small counts have wide Poisson bands anyway). */
    static final double AGREEMENT_RELATIVE = 0.1;

    private record Report(long atNanos, long count, double seconds) {
    }

    /** Reports the trend fit needs: fewer cannot tell a ramp from a level. */
    static final int TREND_REPORTS = 4;
    /** Standard errors above its fitted trend that the demand is bounded by: a one-sided 97.7% bound. */
    static final double LEVEL_SE = 2;

    private final ArrayDeque<Report> reports = new ArrayDeque<>();
    private long firstAt = Long.MIN_VALUE;
    private double slopeBound = Double.NaN;
    private long lastAt = Long.MIN_VALUE;
    private double rate = Double.NaN;
    private double seconds;
    private long count;

    /** Adds a report; true when the estimate now averages fewer reports than before plus this one (a change). */
    boolean report(long n, double s, long at, long windowNanos) {
        int before = averaged();
        reports.addLast(new Report(at, n, s));
        if (firstAt == Long.MIN_VALUE) {
            firstAt = at;
        }
        lastAt = at;
        for (Iterator<Report> it = reports.iterator(); it.hasNext() && reports.size() > 1; ) {
            if (at - it.next().atNanos() > windowNanos) {
                it.remove();
            } else {
                break;
            }
        }
        estimate();
        return averagedReports < Math.min(reports.size(), before + 1);
    }

    private int averagedReports;
    private int skipped;

    private int averaged() {
        return averagedReports;
    }

    private void estimate() {
        java.util.List<Report> newest = new java.util.ArrayList<>(reports);
        java.util.Collections.reverse(newest);
        int start = 0;
        if (newest.size() >= 3 && !agrees(newest.get(0), newest.get(1).count(), newest.get(1).seconds())
                && agrees(newest.get(2), newest.get(1).count(), newest.get(1).seconds())) {
            start = 1; // the newest alone disagrees with agreeing older ones: not confirmed yet
        }
        java.util.List<Report> used = new java.util.ArrayList<>();
        long c = 0;
        double s = 0;
        for (int i = start; i < newest.size(); i++) {
            Report r = newest.get(i);
            if (!used.isEmpty() && !agrees(r, c, s)) {
                // an isolated report that disagrees (a burst) is passed over when the one before it agrees again
                if (i + 1 < newest.size() && agrees(newest.get(i + 1), c, s)) {
                    continue;
                }
                break;
            }
            used.add(r);
            c += r.count();
            s += r.seconds();
        }
        skipped = start;
        averagedReports = used.size();
        count = c;
        seconds = s;
        rate = s > 0 ? c / s : Double.NaN;
        trend = 0;
        slopeBound = used.size() >= TREND_REPORTS && rate == 0 ? 0 : Double.NaN;
        if (used.size() >= TREND_REPORTS && rate > 0) {
            // the fitted line at the newest report averaged, when the trend is significant
            double tMean = 0;
            for (Report r : used) {
                tMean += r.seconds() * r.atNanos() / 1e9;
            }
            tMean /= s;
            double sxx = 0;
            double sxy = 0;
            for (Report r : used) {
                double dt = r.atNanos() / 1e9 - tMean;
                sxx += r.seconds() * dt * dt;
                sxy += r.seconds() * dt * (r.count() / r.seconds() - rate);
            }
            if (sxx > 0) {
                double slope = sxy / sxx;
                double se = Math.sqrt(rate / sxx);
                slopeBound = Math.max(0, slope + LEVEL_SE * se);
                // four standard errors, as for a split (AGREEMENT_SD): tested at every report, a chance run of low
                // reports passes three often enough to publish a trend that is not there
                if (Math.abs(slope) > AGREEMENT_SD * se) {
                    trend = slope;
                    rate = Math.max(0, rate + slope * (used.get(0).atNanos() / 1e9 - tMean));
                }
            }
        }
    }

    /**
     * The most demand the reports allow {@code horizonSeconds} after the newest, req/s: the estimate plus
     * {@link #LEVEL_SE} standard errors above the slope fitted to the reports averaged (no less than flat); infinite
     * while fewer than {@link #TREND_REPORTS} agree, which cannot bound a trend.
     */
    double upperRate(double horizonSeconds) {
        return Double.isNaN(slopeBound) ? Double.POSITIVE_INFINITY : rate + slopeBound * horizonSeconds;
    }

    long firstAt() {
        return firstAt;
    }

    /**
     * True when report {@code r} agrees with {@code c} requests in {@code s} seconds (Poisson, and 10%). The two
     * counts are compared as two Poisson samples: the variance of r's count about what the rate of the others
     * predicts is its own (the prediction) plus the prediction's, prediction²/c, so that two reports that both
     * happen to be low do not outvote the older ones as if their mean were exact.
     */
    private static boolean agrees(Report r, long c, double s) {
        double expected = s > 0 ? c / s * r.seconds() : 0;
        double sd = Math.sqrt(Math.max(expected, 1) + expected * expected / Math.max(c, 1));
        return Math.abs(r.count() - expected) <= Math.max(AGREEMENT_SD * sd, AGREEMENT_RELATIVE * expected);
    }

    private double trend;

    /** The significant trend of the averaged reports, req/s per second (0 when none). */
    double trend() {
        return trend;
    }

    /** The estimate, req/s; NaN before the first report. */
    double rate() {
        return rate;
    }

    /** The Poisson standard error of {@link #rate()}, req/s. */
    double standardError() {
        return seconds > 0 ? Math.sqrt(Math.max(rate, 0) / seconds) : Double.NaN;
    }

    /** Seconds of reports the estimate averages. */
    double windowSeconds() {
        return seconds;
    }

    /** Requests the estimate averages. */
    long count() {
        return count;
    }

    long lastAt() {
        return lastAt;
    }

    String why() {
        return String.format(Locale.ROOT, "%d requests in %.0f s of reports", count, seconds);
    }
}
