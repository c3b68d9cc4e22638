package dev.sextant.control;

import java.time.Duration;

/**
 * How the control loop weighs evidence. Every default is a rule that holds for any fleet, not a number fitted to
 * one; {@code docs/control-loop.md} gives the reason for each.
 *
 * @param priorWeight        how many scrape intervals of evidence the configured profile and capacity of an engine
 *                           group count for, &gt; 0 (20)
 * @param lawHalfLife        how fast old evidence about an engine group's laws is forgotten, &gt; 0 (10 min)
 * @param workloadRequests   how many of a group's latest requests the evidence of what its engines are sent (output
 *                           and prompt tokens per request, the spread of output lengths, batch and load) is about, as
 *                           an exponential memory counted in requests, ≥ 1 (1,000)
 * @param slowFactor         an engine decoding this many times slower than its group's law at the same batch and
 *                           prefill load is slow, &gt; 1 (1.5)
 * @param recoveredFactor    a slow engine has recovered when it is back within this factor, in (1, slowFactor]
 *                           (1.2)
 * @param minTokenGaps       time-between-token samples one interval needs before it counts as evidence of an
 *                           engine's speed, ≥ 1 (30)
 * @param errorRateLimit     an engine whose gateways see this fraction of its attempts fail (and more than twice its
 *                           peers do) is failing, in (0, 1] (0.2)
 * @param minAttempts        attempts needed before an error rate counts, ≥ 1 (20)
 * @param missedScrapes      consecutive failed scrapes after which an engine that exports metrics is down, ≥ 1 (3)
 * @param demandWindow       the longest stretch of reports one demand estimate averages, &gt; 0 (60 s)
 * @param publishGain        a new snapshot is published when it lowers the expected latency per request by more
 *                           than this fraction, ≥ 0 (0.0025), …
 * @param publishGainMs      … and by more than this many ms, ≥ 0 (0.5 ms)
 * @param canaryInterval     how often an engine that must prove itself gets a canary request, &gt; 0 (5 s)
 * @param probeMargin        how far the estimate of an engine's batch may run ahead of the largest batch it was seen
 *                           to run without a queue, so that an engine rated too low can show its room, ≥ 0 (0.15)
 * @param observedDemand     true: demand from the gateways' reports, the topology's as the prior; false: the
 *                           topology's demand only
 * @param overloadTtftFactor while the allowed engines cannot carry the demand (the policy sheds), the engines it fills
 *                           are planned no fuller than where their estimated TTFT reaches this multiple of their idle
 *                           TTFT, so that lower priorities are refused instead of every priority queueing; never at
 *                           the cost of shedding more of the highest priority, &gt; 1, or infinite for no such bound (2)
 * @param keepInRegion       while nothing is shed, each gateway cluster's requests stay on the engines of its own
 *                           region unless sending some elsewhere lowers the expected latency per request by more than
 *                           the publication threshold ({@code publishGain}, {@code publishGainMs}) (true)
 * @param demandHold         a gateway cluster's demand is planned at the most its reports showed within this long
 *                           (the lower bound of each estimate), as far as the engines carry it without shedding, so
 *                           that demand which comes back within it is not followed down and up again, ≥ 0, 0 for no
 *                           hold (5 min, Kubernetes' default stabilization window for scaling down)
 */
public record ControlOptions(double priorWeight, Duration lawHalfLife, double workloadRequests, double slowFactor,
                             double recoveredFactor, int minTokenGaps, double errorRateLimit, int minAttempts,
                             int missedScrapes, Duration demandWindow, double publishGain, double publishGainMs,
                             Duration canaryInterval, double probeMargin, boolean observedDemand,
                             double overloadTtftFactor, boolean keepInRegion, Duration demandHold) {

    public ControlOptions {
        if (!(priorWeight > 0) || Double.isInfinite(priorWeight)) {
            throw new IllegalArgumentException("prior_weight: " + priorWeight + " (expected: a finite number > 0)");
        }
        positive("law_half_life", lawHalfLife);
        if (!(workloadRequests >= 1) || Double.isInfinite(workloadRequests)) {
            throw new IllegalArgumentException("workload_requests: " + workloadRequests
                    + " (expected: a finite number >= 1)");
        }
        positive("demand_window", demandWindow);
        positive("canary_interval", canaryInterval);
        if (demandHold == null || demandHold.isNegative()) {
            throw new IllegalArgumentException("demand_hold: " + demandHold + " (expected: >= 0)");
        }
        if (!(slowFactor > 1) || Double.isInfinite(slowFactor)) {
            throw new IllegalArgumentException("slow_factor: " + slowFactor + " (expected: a finite number > 1)");
        }
        if (!(recoveredFactor > 1 && recoveredFactor <= slowFactor)) {
            throw new IllegalArgumentException("recovered_factor: " + recoveredFactor + " (expected: in (1, "
                    + slowFactor + "])");
        }
        if (minTokenGaps < 1) {
            throw new IllegalArgumentException("min_token_gaps: " + minTokenGaps + " (expected: >= 1)");
        }
        if (!(errorRateLimit > 0 && errorRateLimit <= 1)) {
            throw new IllegalArgumentException("error_rate_limit: " + errorRateLimit + " (expected: in (0, 1])");
        }
        if (minAttempts < 1) {
            throw new IllegalArgumentException("min_attempts: " + minAttempts + " (expected: >= 1)");
        }
        if (missedScrapes < 1) {
            throw new IllegalArgumentException("missed_scrapes: " + missedScrapes + " (expected: >= 1)");
        }
        if (!(publishGain >= 0) || Double.isInfinite(publishGain)) {
            throw new IllegalArgumentException("publish_gain: " + publishGain + " (expected: a finite number >= 0)");
        }
        if (!(publishGainMs >= 0) || Double.isInfinite(publishGainMs)) {
            throw new IllegalArgumentException("publish_gain_ms: " + publishGainMs + " (expected: a finite number >= 0)");
        }
        if (!(probeMargin >= 0) || Double.isInfinite(probeMargin)) {
            throw new IllegalArgumentException("probe_margin: " + probeMargin + " (expected: a finite number >= 0)");
        }
        if (!(overloadTtftFactor > 1)) {
            throw new IllegalArgumentException("overload_ttft_factor: " + overloadTtftFactor
                    + " (expected: a number > 1, or infinite)");
        }
    }

    private static void positive(String field, Duration d) {
        if (d == null || d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(field + ": " + d + " (expected: > 0)");
        }
    }

    /** The defaults above. */
    public static ControlOptions defaults() {
        return new ControlOptions(20, Duration.ofMinutes(10), 1000, 1.5, 1.2, 30, 0.2, 20, 3, Duration.ofSeconds(60),
                0.0025, 0.5, Duration.ofSeconds(5), 0.15, true, 2, true,
                Duration.ofMinutes(5));
    }

    /** These options with another number of missed scrapes before an engine is down. */
    public ControlOptions withMissedScrapes(int n) {
        return new ControlOptions(priorWeight, lawHalfLife, workloadRequests, slowFactor, recoveredFactor, minTokenGaps,
                errorRateLimit, minAttempts, n, demandWindow, publishGain, publishGainMs, canaryInterval, probeMargin,
                observedDemand, overloadTtftFactor, keepInRegion, demandHold);
    }

    /** These options with another error rate limit. */
    public ControlOptions withErrorRateLimit(double limit) {
        return new ControlOptions(priorWeight, lawHalfLife, workloadRequests, slowFactor, recoveredFactor, minTokenGaps,
                limit, minAttempts, missedScrapes, demandWindow, publishGain, publishGainMs, canaryInterval,
                probeMargin, observedDemand, overloadTtftFactor, keepInRegion, demandHold);
    }

    /** These options with demand from the reports ({@code true}) or from the topology only. */
    public ControlOptions withObservedDemand(boolean observed) {
        return new ControlOptions(priorWeight, lawHalfLife, workloadRequests, slowFactor, recoveredFactor, minTokenGaps,
                errorRateLimit, minAttempts, missedScrapes, demandWindow, publishGain, publishGainMs, canaryInterval,
                probeMargin, observed, overloadTtftFactor, keepInRegion, demandHold);
    }

    /** These options with another publication threshold. */
    public ControlOptions withPublishGain(double relative, double ms) {
        return new ControlOptions(priorWeight, lawHalfLife, workloadRequests, slowFactor, recoveredFactor, minTokenGaps,
                errorRateLimit, minAttempts, missedScrapes, demandWindow, relative, ms, canaryInterval, probeMargin,
                observedDemand, overloadTtftFactor, keepInRegion, demandHold);
    }

    /** These options with another canary interval. */
    public ControlOptions withCanaryInterval(Duration interval) {
        return new ControlOptions(priorWeight, lawHalfLife, workloadRequests, slowFactor, recoveredFactor, minTokenGaps,
                errorRateLimit, minAttempts, missedScrapes, demandWindow, publishGain, publishGainMs, interval,
                probeMargin, observedDemand, overloadTtftFactor, keepInRegion, demandHold);
    }

    /** These options with another weight of the configuration as a prior, in intervals. */
    public ControlOptions withPriorWeight(double weight) {
        return new ControlOptions(weight, lawHalfLife, workloadRequests, slowFactor, recoveredFactor, minTokenGaps,
                errorRateLimit, minAttempts, missedScrapes, demandWindow, publishGain, publishGainMs, canaryInterval,
                probeMargin, observedDemand, overloadTtftFactor, keepInRegion, demandHold);
    }

    /** These options with another bound on how full the engines are planned while the policy sheds. */
    public ControlOptions withOverloadTtftFactor(double factor) {
        return new ControlOptions(priorWeight, lawHalfLife, workloadRequests, slowFactor, recoveredFactor, minTokenGaps,
                errorRateLimit, minAttempts, missedScrapes, demandWindow, publishGain, publishGainMs, canaryInterval,
                probeMargin, observedDemand, factor, keepInRegion, demandHold);
    }

    /** These options with the rule that keeps requests in their region on or off. */
    public ControlOptions withKeepInRegion(boolean keep) {
        return new ControlOptions(priorWeight, lawHalfLife, workloadRequests, slowFactor, recoveredFactor, minTokenGaps,
                errorRateLimit, minAttempts, missedScrapes, demandWindow, publishGain, publishGainMs, canaryInterval,
                probeMargin, observedDemand, overloadTtftFactor, keep, demandHold);
    }

    /** These options with another hold of a recent peak of demand ({@link Duration#ZERO}: none). */
    public ControlOptions withDemandHold(Duration hold) {
        return new ControlOptions(priorWeight, lawHalfLife, workloadRequests, slowFactor, recoveredFactor, minTokenGaps,
                errorRateLimit, minAttempts, missedScrapes, demandWindow, publishGain, publishGainMs, canaryInterval,
                probeMargin, observedDemand, overloadTtftFactor, keepInRegion, hold);
    }
}
