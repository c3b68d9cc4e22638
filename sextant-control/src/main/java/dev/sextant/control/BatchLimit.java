package dev.sextant.control;

import java.util.Locale;

/**
 * How many requests one engine's batch holds, from its own evidence: the limit it reports (SGLang's
 * {@code max_running_requests}); the largest batch seen full with a queue; the largest seen without one; what its
 * KV cache holds for the current requests (running ÷ KV fraction); and, while no queue has shown the limit,
 * exploration upward from the configured value. Per engine, not per group: an engine whose hardware differs from
 * its configuration (a slower GPU rated like its peers) must not lend its limit to them, nor borrow theirs.
 */
final class BatchLimit {
    /** Below this KV-cache fraction, a batch's KV share says nothing reliable about the KV limit. */
    static final double MIN_KV_USAGE = 0.05;
    /** At or above this KV-cache fraction, a full batch is bounded by the KV cache, not by the sequence limit. */
    static final double KV_BOUND = 0.9;
    /** A batch within this factor of the estimate counts as the estimate being reached, for exploration. */
    static final double REACHED = 0.95;

    private double saturated = Double.NaN;
    private long saturatedIntervals;
    private double largest;
    private double recent;
    private double probed = Double.NaN;
    private long probedAtVersion = Long.MIN_VALUE;
    private int probes;
    private double kv = Double.NaN;
    private double reported = Double.NaN;
    private long lastAt;

    /** One interval of the engine. */
    void sample(Interval i) {
        if (!Double.isNaN(i.batchLimit()) && i.batchLimit() >= 1) {
            reported = i.batchLimit();
        }
        double end = i.runningEnd();
        if (!Double.isNaN(end)) {
            boolean kvBound = !Double.isNaN(i.kvUsage()) && i.kvUsage() >= KV_BOUND;
            if (i.saturated() && !kvBound && end >= 1) {
                // the largest batch seen with a queue: an interval can end between steps with fewer in the batch
                saturated = Double.isNaN(saturated) ? end : Math.max(saturated, end);
                saturatedIntervals++;
            } else if (!i.saturated()) {
                double batch = Math.max(end, Double.isNaN(i.runningStart()) ? 0 : i.runningStart());
                largest = Math.max(largest, batch);
                recent = Math.max(recent, batch);
                if (!Double.isNaN(saturated) && batch > saturated * 1.02) {
                    saturated = Double.NaN; // a larger batch ran without a queue since: that limit is gone
                }
            }
        }
        double r = i.running();
        if (!Double.isNaN(i.kvUsage()) && i.kvUsage() >= MIN_KV_USAGE && !Double.isNaN(r) && r >= 1) {
            double slots = r / i.kvUsage();
            kv = Double.isNaN(kv) ? slots : 0.7 * kv + 0.3 * slots;
        }
        lastAt = i.atNanos();
    }

    /** The estimate, given the configured batch {@code configured}. */
    double slots(double configured) {
        double seq;
        if (!Double.isNaN(reported)) {
            seq = reported;
        } else if (!Double.isNaN(saturated)) {
            seq = saturated;
        } else {
            seq = Math.max(configured, Math.max(largest, Double.isNaN(probed) ? 0 : probed));
        }
        return Math.max(1, Math.min(seq, Double.isNaN(kv) ? Double.POSITIVE_INFINITY : kv));
    }

    /** True when the estimate rests on evidence (reported, seen full, explored, or the KV cache), not the prior. */
    boolean fromEvidence(double configured) {
        return !Double.isNaN(reported) || !Double.isNaN(saturated) || !Double.isNaN(probed)
                || !Double.isNaN(kv) && kv < configured || largest > configured;
    }

    /**
     * Explores the limit upward, once per solve: while no queue has shown where the limit lies, an engine whose
     * batch reached {@value #REACHED} of the estimate since the last solve, and whose last exploration has been
     * tried (a snapshot published since), gets an estimate {@code margin} higher. An engine rated too low then shows
     * its room within a few publications, as far as the optimizer wants to use it; when the estimate passes the
     * real limit, requests queue, the limit is measured, and exploring stops. An engine the optimizer does not load
     * near its estimate is not explored: its room does not matter.
     *
     * @return true when the estimate rose
     */
    boolean probe(long publishedVersion, double configured, double margin) {
        boolean rose = false;
        if (publishedVersion > probedAtVersion && Double.isNaN(reported) && Double.isNaN(saturated)) {
            double n = slots(configured);
            boolean kvBound = !Double.isNaN(kv) && kv <= n;
            if (!kvBound && recent >= REACHED * n) {
                probed = n * (1 + margin);
                probedAtVersion = publishedVersion;
                probes++;
                rose = true;
            }
        }
        recent = 0;
        return rose;
    }

    /** Why the estimate is what it is. */
    String why(double configured, double margin) {
        double n = slots(configured);
        if (!Double.isNaN(kv) && kv <= n * 1.0001) {
            return String.format(Locale.ROOT, "%.0f requests fit in the KV cache at the current prompts", n);
        }
        if (!Double.isNaN(reported)) {
            return String.format(Locale.ROOT, "batch limit %.0f as the engine reports it", n);
        }
        if (!Double.isNaN(saturated)) {
            return String.format(Locale.ROOT, "batch of %.0f seen full with a queue (%d intervals)", n,
                    saturatedIntervals);
        }
        if (!Double.isNaN(probed) && probed >= n * 0.9999) {
            return String.format(Locale.ROOT, "batch of %.0f: explored %d× by %.0f%% (never seen full; configured "
                    + "%.0f)", n, probes, 100 * margin, configured);
        }
        if (n > configured * 1.0001) {
            return String.format(Locale.ROOT, "batch of %.0f ran without a queue (configured %.0f)", n, configured);
        }
        return String.format(Locale.ROOT, "batch of %.0f as configured (never seen full)", n);
    }
}
