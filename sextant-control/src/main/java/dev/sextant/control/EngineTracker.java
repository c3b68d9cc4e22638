package dev.sextant.control;

import dev.sextant.signal.EngineMetrics;
import dev.sextant.topology.Engine;
import java.util.Locale;

/**
 * Everything the evidence says about one engine apart from its group's laws: whether it answers (scrapes, gateway
 * outcomes, canaries), how often its attempts fail, and its speed factor: how much slower than its group's law it
 * decodes at its own batch and prefill load. Mutated only by {@link DefaultControlLoop}, under its lock.
 */
final class EngineTracker {
    /** Half-life of the gateway outcomes an error rate is computed from: two report intervals. */
    static final long OUTCOME_HALF_LIFE_NANOS = 10_000_000_000L;
    /**
     * Attempts after which older outcomes give way to newer ones, whatever their age: an engine serving dozens of
     * requests a second is judged on about its last hundred, so that the seconds of successes before a fault began do
     * not dilute its error rate until the gateways eject it and the evidence stops coming. A hundred attempts tell
     * an engine failing at the limit (20%) from a healthy one: at a 5% error rate 20 failures in 100 come once in
     * 10⁷ reports.
     */
    static final int RECENT_ATTEMPTS = 100;
    /** The chance an engine still failing at the limit rate passes the canaries that lift its exclusion. */
    static final double FALSE_RECOVERY = 0.05;
    /** Failed attempts since a missed scrape that, with no success, take an engine out at once. */
    static final int FAILURES_FOR_FAST_DOWN = 3;
    /**
     * Failed attempts in a row, with no success between them however far apart, that judge an engine's error rate
     * without {@code minAttempts}: the gateways eject an engine after as many consecutive failures (their default, and
     * Envoy's {@code consecutive_5xx}) for 30 s and longer, so an engine that fails everything has a handful of attempts
     * per ejection, forgotten before the next, and never reaches {@code minAttempts} recent attempts. Five in a row come
     * once in 10⁸ attempts of an engine at a 2% error rate, and the error rate must still be at the limit and twice its
     * peers'.
     */
    static final int FAILED_IN_A_ROW = 5;
    /**
     * How long an engine that holds requests may go without any sign of work before it is {@link Condition#STALLED}:
     * no token generated, no prompt prefilled, no request finished and no change of its KV-cache use across at least
     * two scrape intervals. A working engine shows one of them at every step, and a step lasts well under a second on
     * any GPU when prefill is chunked (vLLM's V1 engine budgets 2,048–8,192 tokens per step; SGLang's chunked prefill
     * 8,192), and a long prefill moves the KV-cache gauge chunk by chunk. Ten seconds is many steps of silence, short
     * beside the minute a gateway waits for a first token and the ten a client waits for a whole answer.
     */
    static final long STALL_NANOS = 10_000_000_000L;
    /**
     * The same for an engine exporting SGLang's metrics, whose scheduler sets its gauges (running, queued, KV-cache use)
     * when it logs a prefill batch or every 40th decode batch, and once idle only every 30 s: for up to 30 s after its
     * last request ends, its gauges may still show requests it no longer holds while nothing moves. Forty seconds of
     * silence outlasts that refresh by a scrape interval or more.
     */
    static final long SGLANG_STALL_NANOS = 40_000_000_000L;
    /**
     * The largest speed factor the model expresses (and 1/this the smallest): a ratio beyond it is one more
     * reading of "not working", not a pace to price.
     */
    static final double SLOWEST = 20;
    /** Gain of the speed factor's average when the new interval agrees with it. */
    static final double SPEED_GAIN = 0.3;

    /** {@code factor} held within the range the model expresses, [1/{@link #SLOWEST}, {@link #SLOWEST}]. */
    private static double withinRange(double factor) {
        return Math.max(1 / SLOWEST, Math.min(SLOWEST, factor));
    }

    final String id;
    Engine config;
    GroupModel group;
    /** True for an engine that joined after the loop started: it must prove itself before it gets traffic. */
    final boolean joinedLater;

    // scrapes
    private EngineMetrics lastMetrics;
    private long lastScrapeAt;
    boolean everScraped;
    int misses;
    private long firstMissAt;
    String scrapeError;
    Interval lastInterval;
    /**
     * Start of the run of scrape intervals in which the engine held requests and showed no sign of work (Long.MIN_VALUE:
     * the last interval showed some), how many intervals the run holds, and the requests held in the last of them.
     */
    private long stillSince = Long.MIN_VALUE;
    private int stillIntervals;
    private double stillHeld;
    /** The requests it held when it was judged stalled. */
    private double stalledHeld;
    /**
     * Failures reported since it came back from a stall that are still taken for the requests it held then: those end
     * at the gateways' timeouts, or are cut, after it is back, and are the stall's, not evidence that it fails.
     */
    private double stallLeftover;
    /** Whether the engine's gauges held requests through its last interval while nothing in it moved. */
    private boolean idleWithWork;
    /** Whether the gateways had requests in flight on it at every interval of the run (their word, not a gauge's). */
    private boolean stillByGateways;
    /**
     * Gateway process → the requests it had in flight on this engine at its last report that listed any, and until when
     * that report stands (two of its intervals after it came): evidence that the engine was sent requests it has not
     * answered, whatever its own gauges say.
     */
    private final java.util.Map<String, long[]> inFlightBy = new java.util.HashMap<>();
    /**
     * Start of the silence for which the engine was judged stalled (Long.MIN_VALUE: it is not), and how long that
     * silence was then. A stalled engine is back when a canary is answered in full after that start, not when its
     * metrics move: an engine core that crawls (a step in tens of seconds) moves them now and then, and is no more fit
     * for traffic in between.
     */
    private long stalledSince = Long.MIN_VALUE;
    private double stalledForSeconds;

    /** How many requests its batch holds. */
    final BatchLimit batch;

    // speed
    double speed = 1;
    boolean slow;
    String speedWhy = "not judged yet";
    // where the speed was last judged: the batch, prefill load, batch limit and TBT, and the law's work per step
    // there then (Batching.stepWork; NaN before the first judgement); see rebase
    private double judgedRunning;
    private double judgedPi;
    private double judgedSlots;
    private double judgedTbt;
    private double judgedLaw;
    private double judgedWork = Double.NaN;

    // gateway outcomes, forgotten with OUTCOME_HALF_LIFE_NANOS
    private long outcomesAt;
    private boolean outcomesStarted;
    double attempts;
    double successes;
    double connectErrors;
    double timeouts;
    double serverErrors;
    /** Answers that said the engine was full (429, 503), forgotten like the other outcomes. */
    double busy;
    /**
     * Failed attempts since the gateways last reported a success, not forgotten with time ({@link #FAILED_IN_A_ROW}); a
     * report with a success ends the run (its failures may all have come before it).
     */
    long failedInARow;
    /**
     * Attempts (the gateways' and canaries) since the engine was found failing after a healthy spell, and how many of
     * them failed: what a last resort is judged on, since the recent attempts that found it failing straddle the fault's
     * start and put its error rate near the limit whatever it is since (docs/control-loop.md). An engine that fails a
     * share of its requests may pass its canaries and be found failing again within seconds: the count goes on across
     * such a spell, shorter than {@link #FAULT_SPELL_NANOS}.
     */
    double attemptsSinceFailing;
    double errorsSinceFailing;
    /** When the engine was last failing (Long.MIN_VALUE: never). */
    private long lastFailingAt = Long.MIN_VALUE;
    /** A healthy spell shorter than this does not end the fault the counts since failing measure: a minute. */
    static final long FAULT_SPELL_NANOS = 60_000_000_000L;
    private long lastSuccessAt = Long.MIN_VALUE;
    /** When a scrape or a canary last found it answering after it had been marked down. */
    private long backAt = Long.MIN_VALUE;
    private long failuresSinceMiss;

    // canaries
    int canaryOk;
    int canaryFailed;
    private long lastCanarySent = Long.MIN_VALUE;
    private long lastCanaryOkAt = Long.MIN_VALUE;
    String canaryWhy;

    // condition
    Condition condition = Condition.HEALTHY;
    String conditionWhy = "as configured (no evidence yet)";
    private boolean failing;
    /** Failing but planned as capacity of last resort (DefaultControlLoop#failingAsLastResort). */
    boolean lastResort;
    private String failingWhy;

    EngineTracker(Engine config, GroupModel group, boolean joinedLater) {
        this.id = config.id();
        this.config = config;
        this.batch = new BatchLimit(config.maxNumSeqs());
        this.group = group;
        this.joinedLater = joinedLater;
        if (joinedLater) {
            condition = Condition.UNPROVEN;
            conditionWhy = "new: no traffic until its first successful scrape or canary";
        }
    }

    /**
     * Canary successes in a row that lift a failing engine's exclusion: the fewest n with (1 − limit)^n ≤
     * {@value #FALSE_RECOVERY}, so that an engine still failing a fraction {@code limit} of its requests passes them
     * with probability at most 5% (14 at the default limit of 20%).
     */
    static int canariesToRecover(double limit) {
        return limit >= 1 ? 1 : (int) Math.ceil(Math.log(FALSE_RECOVERY) / Math.log(1 - limit));
    }

    /** A scrape answered: the interval since the previous one, or null for the first. */
    Interval scraped(EngineMetrics m, long at) {
        Interval i = null;
        if (lastMetrics != null && at > lastScrapeAt) {
            i = Interval.between(lastMetrics, m, (at - lastScrapeAt) / 1e9, at);
            lastInterval = i;
            double kvBefore = lastMetrics.kvCacheUsage();
            double kvAfter = m.kvCacheUsage();
            boolean kvMoved = !Double.isNaN(kvBefore) && !Double.isNaN(kvAfter) && kvBefore != kvAfter;
            long byGateways = inFlight(at);
            boolean silent = i.noTokens() && !kvMoved;
            // what the engine's own gauges say decides what the interval teaches; the gateways' word counts toward a
            // stall only (a report stands for two of its intervals, and the requests it counted may have ended since)
            idleWithWork = silent && i.held() >= 1;
            double held = Math.max(i.held(), byGateways);
            if (held >= 1 && silent) {
                if (stillIntervals == 0) {
                    stillSince = lastScrapeAt;
                    stillByGateways = true;
                }
                stillIntervals++;
                stillHeld = held;
                stillByGateways &= byGateways > 0;
            } else {
                stillSince = Long.MIN_VALUE;
                stillIntervals = 0;
            }
        }
        if (condition == Condition.DOWN) {
            backAt = at;
        }
        lastMetrics = m;
        lastScrapeAt = at;
        everScraped = true;
        misses = 0;
        failuresSinceMiss = 0;
        scrapeError = null;
        return i;
    }

    /**
     * Gateway process {@code from} reported at {@code at} that it had {@code n} requests in flight on this engine, in a
     * report covering {@code intervalSeconds}.
     */
    void inFlight(String from, long n, long at, double intervalSeconds) {
        if (n <= 0) {
            inFlightBy.remove(from);
        } else {
            inFlightBy.put(from, new long[] {n, at + Math.round(2 * intervalSeconds * 1e9)});
        }
    }

    /**
     * How long the current silence must last to stall the engine: the gateways' word needs no allowance for gauges that
     * lag; SGLang's gauges alone do.
     */
    private long stallNanos() {
        return stillByGateways || lastMetrics.flavor() != EngineMetrics.Flavor.SGLANG ? STALL_NANOS
                : SGLANG_STALL_NANOS;
    }

    /** The requests the gateways' reports standing at {@code now} had in flight on this engine. */
    private long inFlight(long now) {
        inFlightBy.values().removeIf(v -> v[1] < now);
        long n = 0;
        for (long[] v : inFlightBy.values()) {
            n += v[0];
        }
        return n;
    }

    void scrapeFailed(String why, long at) {
        if (misses == 0) {
            firstMissAt = at;
            failuresSinceMiss = 0;
        }
        misses++;
        scrapeError = why;
    }

    private void decayOutcomes(long now) {
        if (!outcomesStarted) {
            outcomesStarted = true;
            outcomesAt = now;
            return;
        }
        if (now <= outcomesAt) {
            return;
        }
        double f = Math.exp(-(now - outcomesAt) * Math.log(2) / OUTCOME_HALF_LIFE_NANOS);
        outcomesAt = now;
        scaleOutcomes(f);
    }

    private void scaleOutcomes(double f) {
        attempts *= f;
        successes *= f;
        connectErrors *= f;
        timeouts *= f;
        serverErrors *= f;
        busy *= f;
    }

    /**
     * A gateway's outcomes on this engine over the {@code seconds} before {@code at}. A success proves the engine
     * answered at some time in that interval, so it counts as evidence of life from the interval's start: a report
     * that arrives after a crash, about the seconds before it, does not hide the crash.
     */
    void outcomes(GatewayReport.EngineOutcomes o, long at, double seconds, boolean linkDown) {
        decayOutcomes(at);
        // connections refused while it is down, or in a report that began before it came back, tell of the outage;
        // those refused over a link that is down (linkDown) tell of the link
        boolean whileDown = condition == Condition.DOWN || at - Math.round(seconds * 1e9) < backAt || linkDown;
        long heldTimeouts = Math.min(o.timeouts(), (long) stallLeftover);
        long heldErrors = Math.min(o.serverErrors(), (long) (stallLeftover - heldTimeouts));
        stallLeftover -= heldTimeouts + heldErrors;
        long timedOut = o.timeouts() - heldTimeouts;
        long serverFailed = o.serverErrors() - heldErrors;
        long counted = o.requests() - (whileDown ? o.connectErrors() : 0) - heldTimeouts - heldErrors;
        if (counted > 0 && attempts > 0) {
            // a busy engine is judged on about its last RECENT_ATTEMPTS attempts: older ones give way to newer
            scaleOutcomes(Math.max(0, 1 - counted / (double) RECENT_ATTEMPTS));
        }
        attempts += counted;
        countSinceFailing(at, counted, (whileDown ? 0 : o.connectErrors()) + serverFailed + timedOut);
        successes += o.successes();
        connectErrors += whileDown ? 0 : o.connectErrors();
        timeouts += timedOut;
        serverErrors += serverFailed;
        busy += o.busy();
        failedInARow = o.successes() > 0 ? 0
                : failedInARow + (whileDown ? 0 : o.connectErrors()) + serverFailed + (queued() ? 0 : timedOut);
        if (o.successes() > 0) {
            lastSuccessAt = Math.max(lastSuccessAt, at - Math.round(seconds * 1e9));
            failuresSinceMiss = 0;
        } else if (misses > 0) {
            failuresSinceMiss += o.connectErrors() + serverFailed + timedOut;
        }
    }

    /**
     * The load of the last interval in which requests queued for the engine (NaN: none, or a larger load ran without a
     * queue since, so that queue was not the engine's limit).
     */
    private double queuedAtLoad = Double.NaN;

    /** Keeps the evidence of a queue that {@link #canBeFull()} reads. */
    void queueEvidence(Interval i) {
        if (i.saturated()) {
            queuedAtLoad = i.load();
        } else if (!Double.isNaN(queuedAtLoad) && i.load() > 1.05 * queuedAtLoad) {
            queuedAtLoad = Double.NaN;
        }
    }

    /**
     * True when the evidence shows this engine can be full: requests queued for it at the most it has carried, it
     * answered that it was full (429 or 503) in the last seconds, or its batch was seen full with a queue. Without
     * such evidence a capacity below its rating is an extrapolation of its laws, good enough to price the engine but
     * not to refuse requests for (see {@code DefaultControlLoop.step}).
     */
    boolean canBeFull() {
        return !Double.isNaN(queuedAtLoad) || busy >= 1 || batch.seenFull();
    }

    private void clearOutcomes() {
        failedInARow = 0;
        attempts = 0;
        successes = 0;
        connectErrors = 0;
        timeouts = 0;
        serverErrors = 0;
    }

    /**
     * Counts {@code attempts} made at {@code at}, {@code errors} of them failed, toward {@link #attemptsSinceFailing}
     * while the engine is failing or within a fault spell of it.
     */
    private void countSinceFailing(long at, double attempts, double errors) {
        if (failing || inFaultSpell(at)) {
            attemptsSinceFailing += attempts;
            errorsSinceFailing += errors;
        }
    }

    /** Whether {@code t} is within {@link #FAULT_SPELL_NANOS} of the engine's last failing. */
    private boolean inFaultSpell(long t) {
        return lastFailingAt != Long.MIN_VALUE && t - lastFailingAt < FAULT_SPELL_NANOS;
    }

    /** Failed attempts counted toward an error rate: timeouts of an engine whose last interval queued are load. */
    double errors() {
        return connectErrors + serverErrors + (queued() ? 0 : timeouts);
    }

    /**
     * Whether requests queued in the engine's last interval, and it worked through them: its timeouts then are load, not
     * faults. A queue that does not move is not load.
     */
    private boolean queued() {
        return lastInterval != null && lastInterval.saturated() && !idleWithWork;
    }

    /**
     * True when the engine's last scrape interval is no evidence of its pace, its batch or its queue: it held requests
     * and showed no sign of work, or the engine is stalled.
     */
    boolean inert() {
        return idleWithWork || stalledSince != Long.MIN_VALUE;
    }

    /**
     * A canary came back. A successful one is evidence of life, and its time between tokens is evidence of speed: it
     * is judged against the group's law at the batch the engine last reported (or an empty one), as an interval of
     * traffic is, so that an engine that lost its traffic for being slow recovers on evidence.
     */
    void canary(CanaryResult r, ControlOptions o) {
        if (r.ok() && judgedNanos != Long.MIN_VALUE) {
            // an answer renews the clock of a stale engine's canaries (one a minute), whatever its speed says below
            judgedNanos = Math.max(judgedNanos, r.atNanos());
        }
        if (r.ok() && !Double.isNaN(r.tbtMs()) && r.tbtMs() > 0) {
            double running = lastInterval == null || Double.isNaN(lastInterval.running()) ? 1
                    : Math.max(1, lastInterval.running());
            double law = group.lawTbt(r.atNanos(), running, 0, batch.slots(group.configuredSlots()));
            if (law > 0 && Double.isFinite(law)) {
                double ratio = withinRange(r.tbtMs() / law);
                if (slow || ratio < speed / o.slowFactor()) {
                    adjustSpeed(ratio, o);
                    speedFromCanary = true;
                    judgedAt(r.atNanos(), running, 0, batch.slots(group.configuredSlots()), r.tbtMs(), law, law);
                    speedWhy = String.format(Locale.ROOT, "canary TBT %.1f ms (law of its group: %.1f ms)", r.tbtMs(),
                            law);
                }
                // otherwise, an engine not judged slow is only lifted by a canary, never condemned by one: a canary is
                // one request, whose steps share the batch with other requests' prefill (on healthy engines of
                // large-fleet.yaml canaries read 0.84–3.5 times the law); slowness is judged on traffic
            }
        }
        countSinceFailing(r.atNanos(), 1, r.ok() ? 0 : 1);
        if (r.ok()) {
            if (condition == Condition.DOWN) {
                backAt = r.atNanos();
            }
            canaryOk++;
            canaryFailed = 0;
            lastCanaryOkAt = r.atNanos();
            canaryWhy = String.format(Locale.ROOT, "canary answered (TTFT %.0f ms, TBT %.1f ms)", r.ttftMs(), r.tbtMs());
        } else {
            canaryFailed++;
            canaryOk = 0;
            canaryWhy = "canary failed: " + r.failure();
        }
    }

    /**
     * True when a canary should go to this engine now; marks it sent. One every {@code interval} while the engine
     * is out of service, slow, or its speed stale ({@link #speedStale}) and shows no sign of recovery; a failing engine
     * whose last canary succeeded gets the next as soon as that one is back, so that the run of successes that lifts
     * it takes a few seconds, not {@code k × interval}.
     */
    boolean canaryDue(long now, long interval) {
        if (judgedNanos == Long.MIN_VALUE) {
            judgedNanos = now; // the configured speed counts as judged when the loop first looks
        }
        boolean needs = condition.outOfService() || slow || speedStale(now);
        boolean recovering = failing && canaryOk > 0 && lastCanaryOkAt >= lastCanarySent;
        if (!needs || !recovering && lastCanarySent != Long.MIN_VALUE && now - lastCanarySent < interval) {
            return false;
        }
        lastCanarySent = now;
        return true;
    }

    /**
     * Judges the engine's speed on one interval against its group's law at its own batch and prefill load: the
     * cautious {@link #reading} of its mean time between tokens against the law's. A ratio far from the current factor
     * (beyond the slow factor) is taken at once, so that a sudden slow-down shows in the next solve; a ratio near it is
     * averaged in.
     * Intervals with too few token gaps, or with a prefill load more than twice the busiest one the group has seen
     * (one huge prompt, a burst of new requests), are not evidence of speed.
     */
    void judge(Interval i, ControlOptions o) {
        lastReading = Double.NaN;
        double r = i.decoding();
        if (Double.isNaN(i.tbtMs()) || Double.isNaN(r) || i.tbtCount() <= 0) {
            return;
        }
        double pi = i.prefillRate();
        if (group.intervals() >= 5 && pi > 2 * group.largestPrefill() + 1) {
            speedWhy = String.format(Locale.ROOT, "last interval not judged: prefill load %.0f tokens/s, over twice the "
                    + "busiest seen (%.0f)", pi, group.largestPrefill());
            return;
        }
        double slots = batch.slots(group.configuredSlots());
        Batching fitted = group.fitted(i.atNanos());
        double seen = Batching.tokenBatch(r, Batching.places(slots));
        double law = fitted.stepTime(seen, pi);
        double work = fitted.stepWork(seen, pi, i.tbtMs());
        if (!(law > 0) || !Double.isFinite(law) || !(work > 0) || !Double.isFinite(work)) {
            // a law that cannot explain the interval at all (saturated by a prefill load the engine served) says the
            // law is wrong, not the engine fast: it is refitted, and the engine is not judged on it
            return;
        }
        lastReading = reading(i.tbtMs(), law, work);
        // an engine with little traffic is judged on its intervals pooled until they hold enough requests
        pendingObserved += i.tbtMs() * i.tbtCount();
        pendingLaw += law * i.tbtCount();
        pendingWork += work * i.tbtCount();
        pendingGaps += i.tbtCount();
        pendingRequests += i.completions();
        if (pendingGaps < o.minTokenGaps() || pendingRequests < MIN_REQUESTS_JUDGED) {
            return;
        }
        double observed = pendingObserved / pendingGaps;
        double predicted = pendingLaw / pendingGaps;
        adjustSpeed(withinRange(reading(pendingObserved, pendingLaw, pendingWork)), o);
        speedFromCanary = false;
        judgedAt(i.atNanos(), r, pi, slots, i.tbtMs(), law, work);
        speedWhy = String.format(Locale.ROOT, "TBT %.1f ms over %.0f requests at a batch of %.0f (law of its group: "
                + "%.1f ms)", observed, pendingRequests, r, predicted);
        dropPooled();
    }

    /**
     * True while the speed factor was last set by a canary, not by traffic. Such a factor never makes the engine slow:
     * a canary lifts an engine against its own factor, and its one client-timed answer read against peers judged on
     * traffic is not evidence that it is slower than they are (an engine of a group without traffic whose canary read
     * 1.6 times its peers' was held slow for good, getting canaries that kept it so).
     */
    private boolean speedFromCanary;

    /** The last interval's own reading of the engine's pace against its group's law ({@link #reading}); NaN: none. */
    private double lastReading = Double.NaN;

    /**
     * True when the engine's last interval may teach its group's laws: neither its speed factor nor the interval's own
     * reading is at the end of the factor's range ({@link #SLOWEST}). Beyond it the engine is slower than any factor
     * says (a crawling engine core, or the first interval after one, whose gaps span the crawl), and its interval,
     * divided by a factor that lags it, would teach the laws a pace no healthy engine has: a crawl of one engine priced
     * its three healthy peers at a hundredth of their capacity for minutes.
     */
    boolean teachesLaws() {
        return speed < SLOWEST && !(lastReading >= SLOWEST);
    }

    /**
     * Drops the intervals pooled for a judgement of speed: once judged, and when what they were predicted against is a
     * law forgotten (its group changed pace), since set against the law that replaces it they would read the old pace as
     * this engine's (a flapping engine judged 0.38 against its group's new law on a pool predicted by the slow one, and
     * planned at 2.7 times its capacity).
     */
    void dropPooled() {
        pendingObserved = 0;
        pendingLaw = 0;
        pendingWork = 0;
        pendingGaps = 0;
        pendingRequests = 0;
    }

    /** Requests one judgement of speed needs: a mean over fewer is one request's luck. */
    static final int MIN_REQUESTS_JUDGED = 10;
    private double pendingObserved;
    private double pendingLaw;
    private double pendingWork;
    private double pendingGaps;
    private double pendingRequests;

    /** A new ratio of observed to predicted time between tokens: taken at once when far off, averaged in when near. */
    private void adjustSpeed(double ratio, ControlOptions o) {
        if (Double.isNaN(ratio)) {
            return; // sums beyond any number (an exporter's nonsense) say nothing about the engine's pace
        }
        double lnf = Math.log(speed);
        double lnr = Math.log(ratio);
        speed = Math.abs(lnr - lnf) > Math.log(o.slowFactor()) ? ratio : Math.exp(lnf + SPEED_GAIN * (lnr - lnf));
    }

    /**
     * True when the speed factor has not been judged for {@link #SPEED_STALE_NANOS}: the engine has had too little
     * traffic to show its pace (the plan gives it none, priced slow or far), so canaries show it instead. Without them
     * an engine priced out of the plan by a pace it had once would keep that price after it is fast again, whether or
     * not the factor makes it "slow" against its group.
     */
    boolean speedStale(long now) {
        return judgedNanos != Long.MIN_VALUE && now - judgedNanos > SPEED_STALE_NANOS;
    }

    /** How long a speed judgement holds without another. A minute: about ten scrapes of a busy engine's evidence. */
    static final long SPEED_STALE_NANOS = 60_000_000_000L;
    private long judgedNanos = Long.MIN_VALUE;

    private void judgedAt(long now, double running, double pi, double slots, double tbt, double law, double work) {
        judgedNanos = now;
        judgedRunning = running;
        judgedPi = pi;
        judgedSlots = slots;
        judgedTbt = tbt;
        judgedLaw = law;
        judgedWork = work;
    }

    /**
     * How many times slower than its group's law an engine is whose steps took {@code tbt} where the law predicts
     * {@code law} ms, {@code work} being the law's work per step there ({@link Batching#stepWork}): the larger of
     * {@code tbt / law} (the engine's steps that many times the law's) and {@code tbt / work} (the engine doing every
     * part of a step, prefill included, that many times slower, as {@link Batching#slower} prices it). The two agree
     * where the steps carry little prefill. Where they carry much, the law's prediction rises steeply toward the
     * prefill load that would saturate it, and the first reading falls toward zero: an engine read as many times faster
     * than its group is planned to serve that many times its load. The larger reading is the cautious one: a factor
     * too large costs a little latency on the traffic moved, one too small fills the engine until it queues.
     */
    static double reading(double tbt, double law, double work) {
        return Math.max(tbt / law, tbt / work);
    }

    /**
     * Re-expresses the speed factor against the group's law as it is now. The factor is a ratio to the law, so when
     * the law moves between two judgements of this engine (other engines' intervals refit it) the same factor would
     * say something else: it is scaled by the law's change at the load where the engine was last judged, which keeps
     * what was observed (its pace there) and compares it with the law of now. Without this an engine that gets no
     * traffic keeps a factor of an old law; when most of a group's engines are such, their stale factors make the
     * group's median, and the one engine still judged, set against that median, feeds the law a sample scaled by the
     * median at every interval: the law drifts without end (a healthy engine priced 18× faster than it is).
     */
    void rebase(Batching law) {
        if (!(judgedWork > 0)) {
            return;
        }
        double batchSeen = Batching.tokenBatch(judgedRunning, Batching.places(judgedSlots));
        double lawNow = law.stepTime(batchSeen, judgedPi);
        double workNow = law.stepWork(batchSeen, judgedPi, judgedTbt);
        if (lawNow > 0 && Double.isFinite(lawNow) && workNow > 0 && Double.isFinite(workNow)) {
            speed = rebased(speed, reading(judgedTbt, judgedLaw, judgedWork), reading(judgedTbt, lawNow, workNow));
            judgedLaw = lawNow;
            judgedWork = workNow;
        }
    }

    /**
     * {@code speed} re-expressed when the reading it was judged on moves from {@code then} to {@code now}: scaled by the
     * change of the readings as the factor holds them, both within [1/{@link #SLOWEST}, {@link #SLOWEST}]. The factor
     * never left that range, so a reading beyond it must not scale it: an engine read 40 times its group's law, held
     * at 20, is 10 times a law that doubles, not 5.
     */
    static double rebased(double speed, double then, double now) {
        double r = speed * withinRange(now) / withinRange(then);
        return Double.isNaN(r) ? speed : withinRange(r);
    }

    /**
     * What divides this engine's intervals before its group's laws learn from them: its speed relative to its group
     * ({@code speed / groupMedian}) where it is judged slow, or would be on this interval, or clearly faster than its
     * group, so that the laws learn the group and not this engine's fault; 1 otherwise, so that they learn the level
     * the group's engines run at. Dividing by the speed itself would feed the laws their own predictions (the speed is
     * the ratio of what was observed to the law), and a prior that is wrong would stay so however much evidence came.
     *
     * <p>Where the factor does not say the engine is slow but the interval's own reading does ({@link #slowReading}),
     * the reading divides it.
     */
    double lawFactor(double groupMedian, ControlOptions o) {
        double rel = speed / groupMedian;
        if (slow || rel >= o.slowFactor() || rel < 1 / 1.5) {
            return rel;
        }
        return slowReading(groupMedian, o) ? lastReading / groupMedian : 1;
    }

    /**
     * True when the last interval's own reading puts the engine {@link ControlOptions#slowFactor()} or more slower
     * than its group: what a judgement would take at once ({@link #adjustSpeed}), where the judgement waits for
     * {@link #MIN_REQUESTS_JUDGED} requests to end. An engine that slows down with long answers finishes a few
     * requests a scrape, so its factor lags its token gaps by several intervals, each many times slower than the rest
     * of its group's. Taught as observed, they hold most of the data's sum of squares and so refute the prior, whose
     * weight then falls; and the step law is fitted in its linear form, in which an interval's residual is
     * (1 − β·π) times its error in TBT: a law with β·π about 1 at the intervals' prefill loads makes every residual
     * small whatever it predicts, and such outliers can make it the best fit (every step prefill, α = γ = 0), or one
     * whose slope is many times the truth. One such interval priced an engine's healthy peers at a third of their
     * capacity, and their laws' steps of nothing read them 20× slow and restarted their group. Slower only: a law
     * taught too fast prices its engines high, which their queues show; one taught too slow prices them low, which
     * nothing refutes while the plan keeps them below it.
     */
    private boolean slowReading(double groupMedian, ControlOptions o) {
        return lastReading / groupMedian >= o.slowFactor();
    }

    /** The speed factor the model applies: 1 unless the engine is slow (or clearly faster) than its group. */
    double appliedSpeed(double groupMedian) {
        double rel = speed / groupMedian;
        return slow || rel < 1 / 1.5 ? speed : groupMedian;
    }

    /**
     * Updates the condition from the evidence at {@code now}; returns true when it changed.
     *
     * @param peerErrorRate the error rate of the other engines serving the same models, NaN without any
     * @param groupMedian   the median speed factor of the engine's group
     * @param started       true once the loop has seen one round of scrapes (before it, engines keep their
     *                      configured condition)
     */
    boolean update(long now, ControlOptions o, double peerErrorRate, double groupMedian, boolean started) {
        decayOutcomes(now);
        Condition before = condition;
        // slow: relative to its group, so that a group that is slow as a whole is priced by its law, not "penalized"
        double rel = speed / groupMedian;
        if (!slow && rel >= o.slowFactor() && !speedFromCanary) {
            slow = true;
            batch.paceChanged();
        } else if (slow && rel < o.recoveredFactor()) {
            slow = false;
            batch.paceChanged();
        }
        long alive = Math.max(lastSuccessAt, lastCanaryOkAt);
        // missed as many scrapes as a down engine does, or failed as many attempts since the first miss
        boolean missedEnough = misses > 0 && (misses >= o.missedScrapes() || failuresSinceMiss >= FAILURES_FOR_FAST_DOWN);
        boolean down = everScraped && alive < firstMissAt && missedEnough;
        // stalled: holding requests without a sign of work for STALL_NANOS, and nothing seen to answer meanwhile (an
        // answer says the engine works and its metrics are what stand still); back when a canary is answered in full,
        // not on a gateway's success, which may be the last tokens of a request begun long before
        if (stalledSince != Long.MIN_VALUE && lastCanaryOkAt >= stalledSince) {
            stalledSince = Long.MIN_VALUE;
            stallLeftover = stalledHeld;
        } else if (stalledSince == Long.MIN_VALUE && stillIntervals >= 2 && lastScrapeAt - stillSince >= stallNanos()
                && alive < stillSince) {
            stalledSince = stillSince;
            stalledForSeconds = (lastScrapeAt - stillSince) / 1e9;
            stalledHeld = stillHeld;
        }
        boolean stalled = !down && stalledSince != Long.MIN_VALUE;
        if (down || stalled) {
            // its attempts fail because it is down or stalled: that is not evidence of failing once it works again
            failing = false;
            clearOutcomes();
        }
        // failing: too many attempts fail, and more than its peers'; judged on minAttempts recent attempts, or on fewer
        // that failed in a row
        boolean judged = attempts >= o.minAttempts() || failedInARow >= FAILED_IN_A_ROW && attempts > 0;
        double rate = judged ? errors() / attempts : 0;
        if (!down && !failing && judged && rate >= o.errorRateLimit()
                && (Double.isNaN(peerErrorRate) || rate >= 2 * peerErrorRate)) {
            failing = true;
            canaryOk = 0;
            if (!inFaultSpell(now)) {
                attemptsSinceFailing = 0;
                errorsSinceFailing = 0;
            }
            failingWhy = String.format(Locale.ROOT, "%.0f%% of %.0f recent attempts failed%s (limit %.0f%%; peers %s)",
                    100 * rate, attempts, failedInARow >= FAILED_IN_A_ROW ? ", the last " + failedInARow + " in a row" : "",
                    100 * o.errorRateLimit(),
                    Double.isNaN(peerErrorRate) ? "none" : String.format(Locale.ROOT, "%.0f%%", 100 * peerErrorRate));
        } else if (failing && canaryOk >= canariesToRecover(o.errorRateLimit())) {
            failing = false;
            clearOutcomes();
        }
        if (failing) {
            lastFailingAt = now;
        }
        if (down) {
            condition = Condition.DOWN;
            conditionWhy = misses + " scrapes missed (" + scrapeError + ")"
                    + (failuresSinceMiss > 0 ? " and " + failuresSinceMiss + " attempts failed since" : "")
                    + "; back when a scrape or a canary answers";
        } else if (stalled) {
            condition = Condition.STALLED;
            conditionWhy = String.format(Locale.ROOT, "held %.0f requests and showed no sign of work for %.0f s (no token "
                    + "generated, no prompt prefilled, no request finished, its KV cache unchanged); back when a canary "
                    + "is answered", stillHeld, stalledForSeconds);
        } else if (failing) {
            condition = Condition.FAILING;
            conditionWhy = failingWhy + "; lifted after " + canariesToRecover(o.errorRateLimit())
                    + " canaries in a row succeed (" + canaryOk + " so far)";
        } else if (!everScraped && alive == Long.MIN_VALUE) {
            if (canaryFailed >= 2) {
                condition = Condition.DOWN;
                conditionWhy = "never answered: " + canaryWhy;
            } else if (joinedLater || started && missedEnough) {
                // an engine of the topology is taken out as one that answered before would be: one or two missed
                // scrapes at start are a slow scrape (a control plane restarting beside a busy fleet), not a dead engine
                condition = Condition.UNPROVEN;
                conditionWhy = (misses > 0 ? "its metrics do not answer (" + scrapeError + ")" : "new")
                        + "; no traffic until a canary or a gateway sees it answer";
            } else {
                condition = Condition.HEALTHY;
                conditionWhy = "as configured (no evidence yet)";
            }
        } else if (slow) {
            condition = Condition.SLOW;
            conditionWhy = String.format(Locale.ROOT, "decodes %.1f× slower than its group (%s); recovers below %.1f×",
                    rel, speedWhy, o.recoveredFactor());
        } else {
            condition = Condition.HEALTHY;
            conditionWhy = everScraped ? "answering" : "answering (judged from gateways and canaries: no metrics)";
        }
        return condition != before;
    }

    long lastScrapeAt() {
        return lastScrapeAt;
    }
}
