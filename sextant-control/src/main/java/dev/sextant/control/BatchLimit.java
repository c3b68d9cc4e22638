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
    /** Exploration needs the batch to have reached the estimate itself: evidence that the limit is no lower. */
    static final double REACHED = 1.0;
    /** Scrapes that find requests waiting while the batch is at the largest it ever ran that mark that as its ceiling. */
    static final int CEILING_HITS = 3;
    /**
     * Requests an interval needs for its mean wait to count as evidence of the batch: a wait is observed when it
     * happens to a few of them, so a mean over fewer requests is noise.
     */
    static final int MIN_WAIT_SAMPLES = 30;
    /**
     * Requests an interval needs for their not waiting to bound the batch from below: if the queue made a fraction
     * p of requests wait, a mean wait of zero over n of them is unlikely only when n·p is several; 100 requests
     * exclude waits of a few percent.
     */
    static final int MIN_NO_WAIT_SAMPLES = 100;
    /**
     * The queue, as a share of what an interval completed, that at both ends of the interval shows the batch stayed
     * full throughout: the queue of an engine near saturation but keeping up is a request or two that come and go by
     * chance, against the hundreds an interval completes; an engine that cannot keep up holds a backlog.
     */
    static final double BACKLOG = 0.05;
    /** Intervals that queued behind a full batch before that batch is taken for the limit. */
    static final int QUEUED_INTERVALS = 2;
    /**
     * Standard deviations of a Poisson count of completions above what was served under a backlog that a capacity
     * lowered by that count keeps: the laws' saturation is lowered only as far as the count still allows. An estimate
     * too low hides (the plan keeps the engine below it, so no backlog measures it again, and the rest is shed) where
     * one too high shows itself (the engine queues again, and the count grows and narrows): a single interval's count,
     * taken as it was, once set an engine's capacity 15% low at 2.5 deviations' bad luck, for good. Raising needs no
     * such margin: a count above the laws is served throughput, and too high it queues again.
     */
    static final double SERVED_SIGMAS = 2;
    /**
     * Completions under a backlog before their count is taken for the throughput: fewer are one request's luck (as for
     * a speed judgement), and none is no measurement at all, not a rate of zero (it once set an engine's saturation to
     * nothing, and the loop's step failed for the whole fleet).
     */
    static final int MIN_SERVED = 10;

    private double saturated = Double.NaN;
    /** The throughput measured with the batch kept full by a queue, req/s (NaN: none). */
    private double servedRps = Double.NaN;
    private long saturatedIntervals;
    private double largest;
    /** The largest batch seen at all, with a queue or without. */
    private double largestEver;
    private double recent;
    private double probed = Double.NaN;
    private long probedAtVersion = Long.MIN_VALUE;
    private int probes;
    private double kv = Double.NaN;
    private double reported = Double.NaN;
    /** Scrapes that found requests waiting with the batch at {@link #largestEver}. */
    private int ceilingHits;
    /** The batch an observed absence of queueing implies at least. */
    private double queueBound;
    /** What observed waits imply the batch is, averaged (NaN: no wait observed to imply it). */
    private double queueImplied = Double.NaN;
    private int queueImpliedIntervals;
    /** Intervals that queued behind a full batch, since the largest batch last rose. */
    private int queuedFull;
    /** Intervals in a row that kept the batch full with a queue, and what the counted ones completed, in how long. */
    private int fullIntervals;
    private double fullCompletions;
    private double fullSeconds;
    /** How long the present backlog has lasted, s (0: none). */
    private double backlogSeconds;
    private long lastAt;

    /**
     * Above this share of the engine's time spent prefilling, requests wait for prefill work as much as for a place
     * in the batch, and a queue no longer says the batch is full.
     */
    static final double PREFILL_BOUND = 0.25;

    /**
     * One interval of the engine.
     *
     * @param prefillShare the share of the engine's time its prefill took in the interval, from its group's law
     * @param otherWaitMs  the wait before admission its group's law explains without a full batch (for the prefill
     *                     work ahead, and for the step in progress), ms
     * @param residenceMs  how long a request holds its place in the batch, from its group's law at this load, ms
     */
    void sample(Interval i, double prefillShare, double otherWaitMs, double residenceMs) {
        if (!Double.isNaN(i.batchLimit()) && i.batchLimit() >= 1) {
            reported = i.batchLimit();
        }
        boolean kvBound = !Double.isNaN(i.kvUsage()) && i.kvUsage() >= KV_BOUND;
        // a queue says the batch is full only where it cannot be a queue for prefill work or for KV space
        boolean slotBound = !kvBound && prefillShare < PREFILL_BOUND;
        double end = i.runningEnd();
        if (!Double.isNaN(end)) {
            double before = largestEver;
            largestEver = Math.max(largestEver, Math.max(end, Double.isNaN(i.runningStart()) ? 0 : i.runningStart()));
            if (largestEver > before) {
                ceilingHits = 0;
                queuedFull = 0;
            }
            // requests waited longer than prefill and the step explain, behind a batch as large as it ever ran
            double step = Double.isNaN(i.tbtMs()) ? 1 : Math.max(1, i.tbtMs());
            double excess = Double.isNaN(i.queueMs()) ? Double.NaN : i.queueMs() - otherWaitMs;
            boolean queued = !Double.isNaN(excess) ? excess > 3 * step : i.saturated();
            // requests waiting while the batch is as large as it ever was: it cannot take more (its ceiling); where
            // the engine exports its queue time, only when they waited longer than prefill and the step explain
            boolean waitedForPlace = !Double.isNaN(excess) ? excess > step : prefillShare < PREFILL_BOUND / 2;
            if (slotBound && waitedForPlace && !Double.isNaN(i.waitingEnd()) && i.waitingEnd() >= 1 && end >= 1
                    && end >= largestEver && ++ceilingHits >= CEILING_HITS) {
                saturated = Double.isNaN(saturated) ? end : Math.max(saturated, end);
            }
            if (queued && end >= largestEver && slotBound && end >= 1 && ++queuedFull >= QUEUED_INTERVALS) {
                // the largest batch seen with a queue: an interval can end between steps with fewer in the batch
                saturated = Double.isNaN(saturated) ? end : Math.max(saturated, end);
                saturatedIntervals++;
            } else if (!i.saturated()) {
                double batch = Math.max(end, Double.isNaN(i.runningStart()) ? 0 : i.runningStart());
                largest = Math.max(largest, batch);
                recent = Math.max(recent, batch);
                if (!Double.isNaN(saturated) && batch > saturated * 1.02) {
                    saturated = Double.NaN; // a larger batch ran without a queue since: that limit is gone
                    clearSaturatedRps();
                }
                if (!Double.isNaN(servedRps) && servedMore(i)) {
                    clearSaturatedRps(); // more was served without a queue since
                }
            }
        }
        // while a backlog waits, requests leave at the rate the engine serves them at its limit, whatever bounds it
        // (places in the batch, prefill, KV space) and whatever the rate they arrive at: the completions of such
        // intervals measure the saturation throughput directly, averaged over them (from the second in a row: one
        // interval with a backlog at both ends may have emptied in between). A queue of a request or two at both ends
        // does not show that: near saturation a short queue comes and goes by chance, and the completions are then
        // the arrival rate. A queue holding a share (BACKLOG) of what the interval completed, at both ends, does
        double backlog = Math.max(1, BACKLOG * i.completions());
        boolean backlogged = !Double.isNaN(i.waitingStart()) && i.waitingStart() >= backlog
                && !Double.isNaN(i.waitingEnd()) && i.waitingEnd() >= backlog
                && (!slotBound || !Double.isNaN(i.runningStart()) && i.runningStart() >= largestEver);
        fullIntervals = backlogged ? fullIntervals + 1 : 0;
        // and only once a residence has passed under it: requests that started together (a burst of long answers)
        // finish together, so a backlog's first residence may complete none of them, then all at once
        boolean turnedOver = backlogSeconds * 1000 >= residenceMs;
        backlogSeconds = backlogged ? backlogSeconds + i.seconds() : 0;
        if (fullIntervals >= QUEUED_INTERVALS && turnedOver) {
            fullCompletions += i.completions();
            fullSeconds += i.seconds();
            if (fullCompletions >= MIN_SERVED) {
                servedRps = fullCompletions / fullSeconds;
            }
        }
        double r = i.running();
        queueEvidence(i, r, prefillShare, otherWaitMs, residenceMs);
        if (!Double.isNaN(i.kvUsage()) && i.kvUsage() >= MIN_KV_USAGE && !Double.isNaN(r) && r >= 1) {
            double slots = r / i.kvUsage();
            kv = Double.isNaN(kv) ? slots : 0.7 * kv + 0.3 * slots;
        }
        lastAt = i.atNanos();
    }

    /**
     * What the wait before admission says about the batch, read through the M/M/N queue of {@link Batching}: with a
     * places busy on average (the running batch), an observed wait beyond what prefill and the step explain (excess)
     * is what {@code Batching.serversForWait(a, D, excess)} places give; no excess to speak of says the batch has at
     * least the places for which the queue predicts so little. Only where the queue can be for a place at all (not
     * KV- or prefill-bound), and only with enough requests in the interval for its mean wait to mean something.
     */
    private void queueEvidence(Interval i, double a, double prefillShare, double otherWaitMs, double residenceMs) {
        if (Double.isNaN(i.queueMs()) || Double.isNaN(a) || a < 1 || i.ttftCount() < MIN_WAIT_SAMPLES
                || !(residenceMs > 0)
                || prefillShare >= PREFILL_BOUND || !Double.isNaN(i.kvUsage()) && i.kvUsage() >= KV_BOUND) {
            return;
        }
        double step = Double.isNaN(i.tbtMs()) ? 1 : Math.max(1, i.tbtMs());
        double excess = i.queueMs() - otherWaitMs;
        int cap = Batching.MAX_SLOTS;
        if (excess <= 0.5 * step) {
            if (i.ttftCount() < MIN_NO_WAIT_SAMPLES) {
                return; // too few requests for their not waiting to say the queue would make them wait little
            }
            // never more places than ran at once: the queue model takes arrivals for Poisson, and arrivals smoother
            // than that (conversations waiting for their answers, bounded load) wait less at the same load, so the
            // places it needs to explain no wait overstate the batch (an engine of 56 was read as one of 65, and
            // planned beyond what it serves); a batch larger than ran is for exploration to find (probe)
            queueBound = Math.max(queueBound,
                    Math.min(largestEver, Batching.serversForWait(a, residenceMs, 0.5 * step, cap)));
        } else {
            double n = Batching.serversForWait(a, residenceMs, excess, cap);
            queueImplied = Double.isNaN(queueImplied) ? n : 0.7 * queueImplied + 0.3 * n;
            queueImpliedIntervals++;
        }
    }

    /**
     * True when {@code i} completed more than the throughput measured under a backlog allows: 5% more, beyond three
     * standard deviations of a Poisson count of completions (long requests finish in lumps: an engine that serves 5
     * a second completes anywhere from 15 to 35 in 5 s).
     */
    private boolean servedMore(Interval i) {
        double expected = servedRps * i.seconds();
        return i.completions() > 1.05 * expected + 3 * Math.sqrt(expected);
    }

    private void clearSaturatedRps() {
        servedRps = Double.NaN;
        fullCompletions = 0;
        fullSeconds = 0;
    }

    /**
     * Forgets the throughput served under a backlog: the engine's pace changed (it was found slow, or fast again, or
     * its whole group changed pace), and what it served at the old pace says nothing of the new. Kept, a count taken
     * while an engine ran 4× slow held its capacity there after it was fast again: the plan then kept it below the
     * count, no backlog measured it again, and a fleet shed a quarter of its demand for minutes with that engine
     * idle. Without the count the laws stand, at the engine's new pace; if they are too high a backlog forms and
     * measures it again.
     */
    void paceChanged() {
        clearSaturatedRps();
        fullIntervals = 0;
        backlogSeconds = 0;
    }

    /** True when a batch was seen full with a queue (and no larger one ran without a queue since). */
    boolean seenFull() {
        return !Double.isNaN(saturated) || !Double.isNaN(servedRps);
    }

    /** The throughput measured with the batch kept full by a queue, req/s; NaN when none. */
    double servedRps() {
        return servedRps;
    }

    /**
     * The saturation throughput, req/s, given the laws' {@code law}: the count served under a backlog where it is
     * above the laws; the laws lowered to the count's upper end ({@link #SERVED_SIGMAS}) where they are above that;
     * {@code law} itself where nothing was measured or the count allows it. Positive for a positive {@code law}: a
     * count is taken only from {@link #MIN_SERVED} completions on.
     */
    double servedSaturation(double law) {
        if (Double.isNaN(servedRps)) {
            return law;
        }
        if (law <= servedRps) {
            return servedRps;
        }
        return Math.min(law, servedRps + SERVED_SIGMAS * Math.sqrt(fullCompletions) / fullSeconds);
    }

    /** The estimate, given the configured batch {@code configured}. */
    double slots(double configured) {
        double seq;
        if (!Double.isNaN(reported)) {
            seq = reported;
        } else if (!Double.isNaN(saturated)) {
            seq = saturated;
        } else if (queueImpliedIntervals >= QUEUED_INTERVALS + 1) {
            // what the waits imply, but never less than a batch that ran, nor than places that did not make requests wait
            seq = Math.max(queueImplied, Math.max(queueBound, largest));
        } else {
            seq = Math.max(configured, Math.max(Math.max(largest, queueBound), Double.isNaN(probed) ? 0 : probed));
        }
        return Math.max(1, Math.min(Math.min(seq, ceiling()), Double.isNaN(kv) ? Double.POSITIVE_INFINITY : kv));
    }

    /**
     * The batch limit the topology states for the engine ({@code max_num_seqs}), a ceiling on every estimate
     * ({@link #ceiling()}): the engine runs no more sequences than its server was started with, so exploring beyond it
     * would only make requests queue to show it; infinite when the topology states none.
     */
    private final double ceiling;

    /**
     * {@link #ceiling} while nothing refutes it: the engine's own report is of the server as it runs, and a batch larger
     * than the topology says ran (the file is older than the server's flags); infinite then.
     */
    private double ceiling() {
        return Double.isNaN(reported) && !(largestEver > ceiling) ? ceiling : Double.POSITIVE_INFINITY;
    }

    BatchLimit() {
        this(0);
    }

    /** A batch limit of an engine whose topology states {@code maxNumSeqs} (0: states none). */
    BatchLimit(int maxNumSeqs) {
        this.ceiling = maxNumSeqs > 0 ? maxNumSeqs : Double.POSITIVE_INFINITY;
    }

    /** True when the estimate rests on evidence (reported, seen full, explored, or the KV cache), not the prior. */
    boolean fromEvidence(double configured) {
        return !Double.isNaN(reported) || !Double.isNaN(saturated) || !Double.isNaN(probed)
                || !Double.isNaN(kv) && kv < configured || largest > configured || queueBound > configured
                || queueImpliedIntervals >= QUEUED_INTERVALS + 1;
    }

    /**
     * Explores the limit upward, once per solve, where the optimizer wants more of the engine than the estimate
     * allows: while no queue has shown where the limit lies, an engine whose capacity binds in the published snapshot
     * ({@code binding}: planned at 95% of its effective capacity or more), whose batch reached the estimate since the
     * last solve, and whose last exploration has been tried (a snapshot published since), gets an estimate
     * {@code margin} higher. When the estimate passes the real limit, requests queue behind a full batch, the limit
     * is measured, and exploring stops. Elsewhere the estimate only follows the largest batch seen without a queue
     * (a batch that ran proves its limit is no lower; random peaks of load raise it as far as the engine is used).
     *
     * @return true when the estimate rose
     */
    boolean probe(boolean binding, long publishedVersion, double configured, double margin) {
        boolean rose = false;
        if (binding && publishedVersion > probedAtVersion && Double.isNaN(reported) && Double.isNaN(saturated)) {
            double n = slots(configured);
            boolean kvBound = !Double.isNaN(kv) && kv <= n;
            if (!kvBound && n < ceiling() && recent >= REACHED * n) {
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
        String batch = batchWhy(configured, margin);
        if (Double.isNaN(servedRps)) {
            return batch;
        }
        return batch + String.format(Locale.ROOT, "; %.1f req/s served while a backlog kept it full (%.0f requests in "
                + "%.0f s, ±%.1f)", servedRps, fullCompletions, fullSeconds,
                SERVED_SIGMAS * Math.sqrt(fullCompletions) / fullSeconds);
    }

    private String batchWhy(double configured, double margin) {
        double n = slots(configured);
        if (!Double.isNaN(kv) && kv <= n * 1.0001) {
            return String.format(Locale.ROOT, "%.0f requests fit in the KV cache at the current prompts", n);
        }
        if (!Double.isNaN(reported)) {
            return String.format(Locale.ROOT, "batch limit %.0f as the engine reports it", n);
        }
        if (n >= ceiling() * 0.9999) {
            return String.format(Locale.ROOT, "batch of %.0f, the topology's max_num_seqs", n);
        }
        if (!Double.isNaN(saturated)) {
            return String.format(Locale.ROOT, "batch of %.0f seen full with a queue (%d intervals)", n,
                    saturatedIntervals);
        }
        if (queueImpliedIntervals >= QUEUED_INTERVALS + 1) {
            return String.format(Locale.ROOT, "batch of %.0f: what the waits of %d intervals imply", n,
                    queueImpliedIntervals);
        }
        if (queueBound >= n * 0.9999 && queueBound > configured) {
            return String.format(Locale.ROOT, "batch of %.0f at least: requests did not wait at a batch of %.0f "
                    + "(configured %.0f)", n, largest, configured);
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
