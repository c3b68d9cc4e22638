package dev.sextant.control;

import dev.sextant.topology.LatencyProfile;
import dev.sextant.topology.MeasuredProfile;
import java.util.ArrayList;
import java.util.List;

/**
 * A continuous-batching engine (vLLM, SGLang, TensorRT-LLM, TGI) serving a workload: what its latency is at a load
 * of x requests per second, and the load at which its queue grows without bound.
 *
 * <p>Implementation note. Four laws, each a fact of how these engines work, with the parameters the estimator
 * fits:
 * <ol>
 * <li><b>Step time.</b> Every running sequence gets one token per step; a step lasts
 *     {@code TBT = α + γ·R + δ·π} ms with R the sequences decoding and π the uncached prompt tokens per second
 *     being prefilled beside them (chunked prefill shares the steps).</li>
 * <li><b>Little's law on decoding.</b> A request decodes for (n − 1) steps, so at load x the batch holds
 *     {@code R = x·(n − 1)·TBT / 1000} decoding sequences. With π = x·P (P uncached prompt tokens per request)
 *     this closes to {@code TBT(x) = (α + δ·x·P) / (1 − γ·x·(n − 1)/1000)}: increasing and convex, unbounded at
 *     the compute limit {@code 1000 / (γ·(n − 1))}.</li>
 * <li><b>Prefill.</b> The first token comes after the prompt is prefilled:
 *     {@code TTFT₀ = base + perToken·P + perStep·TBT} ms, not counting the wait for a place in the batch.</li>
 * <li><b>Batch slots.</b> At most N requests hold a place in the batch (the engine's sequence limit or what its
 *     KV cache holds); each holds it for {@code D = TTFT₀ + (n − 1)·TBT} ms, so x·D/1000 slots are busy on
 *     average. Arrivals that find all N busy wait: an M/M/N queue, whose mean wait is Erlang's C formula times
 *     {@code D / (N − x·D/1000)} (Kleinrock, <i>Queueing Systems</i> vol. 1, §3.5).</li>
 * </ol>
 * The saturation load μ is where x·D(x)/1000 = N: beyond it the queue grows without bound. It is what the
 * optimizer calls the engine's capacity (its profiles are functions of ρ = x / capacity and diverge at ρ = 1).
 * TTFT(x) = TTFT₀(x) + wait(x) and TBT(x) are both increasing and convex in x (the mean wait of M/M/N is convex
 * in the arrival rate), which keeps the optimizer's problem convex; {@link #profile()} samples them and lets
 * {@link MeasuredProfile} enforce both properties on the samples.
 *
 * @param alpha        step time of an idle engine, ms, ≥ 0
 * @param gamma        step time added per decoding sequence, ms, ≥ 0
 * @param delta        step time added per uncached prompt token per second, ms·s, ≥ 0
 * @param base         first-token time not explained by the prompt or the step, ms, ≥ 0
 * @param perToken     prefill time per uncached prompt token, ms, ≥ 0
 * @param perStep      steps until the first token (ms of TTFT per ms of step), ≥ 0
 * @param slots        the most requests in the batch at once, N ≥ 1
 * @param outputTokens mean output tokens per request, n ≥ 1
 * @param promptTokens mean uncached prompt tokens per request, P ≥ 0
 */
record Batching(double alpha, double gamma, double delta, double base, double perToken, double perStep,
                double slots, double outputTokens, double promptTokens) {

    /** Utilizations (load / saturation) at which {@link #profile()} samples the curves. */
    static final double[] SAMPLES = {0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.925, 0.95,
        0.97, 0.985};

    Batching {
        nonNegative("alpha", alpha);
        nonNegative("gamma", gamma);
        nonNegative("delta", delta);
        nonNegative("base", base);
        nonNegative("per_token", perToken);
        nonNegative("per_step", perStep);
        if (!(slots >= 1) || Double.isInfinite(slots)) {
            throw new IllegalArgumentException("slots: " + slots + " (expected: a finite number >= 1)");
        }
        if (!(outputTokens >= 1) || Double.isInfinite(outputTokens)) {
            throw new IllegalArgumentException("output_tokens: " + outputTokens + " (expected: a finite number >= 1)");
        }
        nonNegative("prompt_tokens", promptTokens);
        if (alpha + gamma + base + perToken + perStep <= 0) {
            throw new IllegalArgumentException("alpha, gamma, base, per_token, per_step: all 0 (expected: an engine "
                    + "that takes time)");
        }
    }

    private static void nonNegative(String field, double v) {
        if (!(v >= 0) || Double.isInfinite(v)) {
            throw new IllegalArgumentException(field + ": " + v + " (expected: a finite number >= 0)");
        }
    }

    /** The same engine {@code factor} times slower (every time scaled), for a slow engine of a group. */
    Batching slower(double factor) {
        return new Batching(alpha * factor, gamma * factor, delta * factor, base * factor, perToken * factor,
                perStep, slots, outputTokens, promptTokens);
    }

    /** The same engine with another batch limit. */
    Batching withSlots(double n) {
        return new Batching(alpha, gamma, delta, base, perToken, perStep, n, outputTokens, promptTokens);
    }

    /** The load beyond which decode steps grow without bound, req/s (infinite without per-sequence cost). */
    double computeLimit() {
        return gamma > 0 && outputTokens > 1 ? 1000 / (gamma * (outputTokens - 1)) : Double.POSITIVE_INFINITY;
    }

    /** Time between output tokens at load x req/s, ms; infinite at or beyond the compute limit. */
    double tbt(double x) {
        double d = 1 - gamma * x * (outputTokens - 1) / 1000;
        return d <= 0 ? Double.POSITIVE_INFINITY : (alpha + delta * x * promptTokens) / d;
    }

    /** Time to first token at load x without waiting for the batch, ms. */
    double firstTokenWithoutQueue(double x) {
        return base + perToken * promptTokens + perStep * tbt(x);
    }

    /** How long a request holds its place in the batch at load x, ms. */
    double residence(double x) {
        return firstTokenWithoutQueue(x) + (outputTokens - 1) * tbt(x);
    }

    /** Batch places busy on average at load x. */
    double busySlots(double x) {
        return x * residence(x) / 1000;
    }

    /** Whole batch places, the N of the M/M/N queue. */
    int servers() {
        return (int) Math.max(1, Math.floor(slots + 1e-9));
    }

    /**
     * The saturation load μ, req/s: where the busy places reach N (or the compute limit, whichever comes first).
     * Bisection on a monotone function: busy places grow with load.
     */
    double saturation() {
        int n = servers();
        double hi = Math.min(computeLimit(), 1e12);
        double lo = 0;
        if (Double.isInfinite(computeLimit())) {
            hi = 1;
            while (busySlots(hi) < n && hi < 1e12) {
                hi *= 2;
            }
        }
        for (int it = 0; it < 200 && hi - lo > 1e-12 * hi; it++) {
            double mid = 0.5 * (lo + hi);
            if (busySlots(mid) < n) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /** Mean wait for a place in the batch at load x, ms (M/M/N); infinite at or beyond saturation. */
    double wait(double x) {
        if (x <= 0) {
            return 0;
        }
        int n = servers();
        double a = busySlots(x);
        if (!(a < n)) {
            return Double.POSITIVE_INFINITY;
        }
        return erlangC(n, a) * residence(x) / (n - a);
    }

    /** Mean time to first token at load x, ms: the wait for the batch plus the prefill. */
    double ttft(double x) {
        return wait(x) + firstTokenWithoutQueue(x);
    }

    /**
     * Erlang's C formula: the probability that an arrival to an M/M/n queue with offered load a (&lt; n) waits. From
     * the Erlang B recursion B(0) = 1, B(k) = a·B(k−1) / (k + a·B(k−1)), which is stable for large n, and
     * C = B / (1 − (a/n)·(1 − B)).
     */
    static double erlangC(int n, double a) {
        double b = 1;
        for (int k = 1; k <= n; k++) {
            b = a * b / (k + a * b);
        }
        return b / (1 - (a / n) * (1 - b));
    }

    /** The latency profile over ρ = x / {@link #saturation()}, sampled at {@link #SAMPLES}. */
    MeasuredProfile profile() {
        double mu = saturation();
        List<MeasuredProfile.Point> points = new ArrayList<>(SAMPLES.length);
        for (double rho : SAMPLES) {
            double x = rho * mu;
            double ttft = ttft(x);
            double tbt = tbt(x);
            if (!Double.isFinite(ttft) || !Double.isFinite(tbt)) {
                break;
            }
            points.add(new MeasuredProfile.Point(rho, Math.max(1e-3, ttft), tbt));
        }
        return new MeasuredProfile(points);
    }
}
