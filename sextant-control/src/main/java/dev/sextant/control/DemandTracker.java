package dev.sextant.control;

import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.Locale;

/**
 * The demand of one (gateway process, class): the arrivals its reports counted, averaged over the longest run of
 * recent reports that agree with each other, within {@link ControlOptions#demandWindow()}.
 *
 * <p>Implementation note. Going back from the newest report, an older one joins the average while its rate is
 * within three Poisson standard deviations (and 10%) of the average of the newer ones. A steady demand then averages
 * the whole window (a report is excluded by noise alone about once in 400), so the estimate does not follow noise;
 * a surge, a failover or a ramp is followed from the first report that shows it, because the reports from before
 * the change disagree with the ones after it and drop out of the average at once. Within the reports averaged, a
 * trend (a ramp slower than one report can show) is fitted by weighted least squares of rate on time, each report
 * weighted by its length (the inverse of its Poisson variance); when the slope is more than three standard errors
 * from zero, the estimate is the fitted line at the newest report rather than the mean, which lags a ramp by half
 * the window.
 */
final class DemandTracker {
    /** How many Poisson standard deviations a report may differ from the newer ones and still be averaged with them. */
    static final double AGREEMENT_SD = 3;
    /** … and by how much relative to them, at least (small counts have wide Poisson bands anyway). */
    static final double AGREEMENT_RELATIVE = 0.1;

    private record Report(long atNanos, long count, double seconds) {
    }

    private final ArrayDeque<Report> reports = new ArrayDeque<>();
    private long lastAt = Long.MIN_VALUE;
    private double rate = Double.NaN;
    private double seconds;
    private long count;

    /** Adds a report; true when the estimate now averages fewer reports than before plus this one (a change). */
    boolean report(long n, double s, long at, long windowNanos) {
        int before = averaged();
        reports.addLast(new Report(at, n, s));
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

    private int averaged() {
        return averagedReports;
    }

    private void estimate() {
        long c = 0;
        double s = 0;
        int k = 0;
        for (Iterator<Report> it = reports.descendingIterator(); it.hasNext(); ) {
            Report r = it.next();
            if (k > 0) {
                double mean = c / s;
                double expected = mean * r.seconds();
                double sd = Math.sqrt(Math.max(expected, 1));
                if (Math.abs(r.count() - expected) > Math.max(AGREEMENT_SD * sd, AGREEMENT_RELATIVE * expected)) {
                    break;
                }
            }
            c += r.count();
            s += r.seconds();
            k++;
        }
        averagedReports = k;
        count = c;
        seconds = s;
        rate = s > 0 ? c / s : Double.NaN;
        if (k >= 4 && rate > 0) {
            // the fitted line at the newest report, when the trend is significant
            double tMean = 0;
            int i = 0;
            for (Iterator<Report> it = reports.descendingIterator(); it.hasNext() && i < k; i++) {
                Report r = it.next();
                tMean += r.seconds() * r.atNanos() / 1e9;
            }
            tMean /= s;
            double sxx = 0;
            double sxy = 0;
            i = 0;
            long newest = reports.peekLast().atNanos();
            for (Iterator<Report> it = reports.descendingIterator(); it.hasNext() && i < k; i++) {
                Report r = it.next();
                double dt = r.atNanos() / 1e9 - tMean;
                sxx += r.seconds() * dt * dt;
                sxy += r.seconds() * dt * (r.count() / r.seconds() - rate);
            }
            if (sxx > 0) {
                double slope = sxy / sxx;
                double se = Math.sqrt(rate / sxx);
                if (Math.abs(slope) > 3 * se) {
                    trend = slope;
                    rate = Math.max(0, rate + slope * (newest / 1e9 - tMean));
                    return;
                }
            }
        }
        trend = 0;
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
