package dev.sextant.control;

import dev.sextant.topology.LatencyProfile;
import dev.sextant.topology.MeasuredProfile;
import java.util.ArrayList;
import java.util.List;

/**
 * A continuous-batching engine (vLLM, SGLang, TensorRT-LLM, TGI) serving a workload: what its latency is at a load
 * of x requests per second, and the load at which its queue grows without bound.
 *
 * <p>Implementation note. Five laws, each a fact of how these engines work, with the parameters the estimator
 * fits:
 * <ol>
 * <li><b>Step time.</b> Every running sequence gets one token per step; a step costs {@code α + γ·R} ms of decode
 *     work for R decoding sequences, and prefill work shares the steps (chunked prefill): with π uncached prompt
 *     tokens per second prefilled, a fraction {@code β·π} of the engine's time goes to prefill, so a step lasts
 *     {@code TBT = (α + γ·R) / (1 − β·π)} ms.</li>
 * <li><b>Little's law on decoding.</b> A request decodes for (n − 1) steps, so at load x the batch holds
 *     {@code R = x·(n − 1)·TBT / 1000} decoding sequences on average. Engines report TBT per token, and a token is
 *     more likely made in a large batch: the mean TBT is a step's at the batch a token sees, E[R²]/E[R]
 *     ({@link #tokenBatch}: R + 1 for a Poisson batch well below its limit N, N at it), which the two close to
 *     {@code TBT(x) = (α + γ·tokenBatch(R(x))) / (1 − β·π)} with π = x·P (P uncached prompt tokens per request):
 *     increasing, from a lone sequence's step α + γ to a full batch's.</li>
 * <li><b>Prefill.</b> The first token comes after the prompt is prefilled:
 *     {@code TTFT₀ = base + perToken·P + perStep·TBT} ms, not counting any wait before it starts.</li>
 * <li><b>Batch slots.</b> At most N requests hold a place in the batch (the engine's sequence limit or what its
 *     KV cache holds); each holds it for {@code D = TTFT₀ + (n − 1)·TBT} ms, so x·D/1000 slots are busy on
 *     average. Arrivals that find all N busy wait, and while all N are busy every step is a full batch's, so a
 *     place is held for D_full (D at a batch of N less those prefilling): the M/M/N mean wait, Erlang's C formula
 *     times {@code D_full / (N − x·D_full/1000)} (Kleinrock, <i>Queueing Systems</i> vol. 1, §3.5), scaled by
 *     (1 + c²)/2 for residences of squared coefficient of variation c² (Allen and Cunneen's approximation of the
 *     M/G/N queue; c² = 1 is M/M/N). A residence varies as its decoding part, with the output length.</li>
 * <li><b>Prefill queue.</b> A prompt also waits for the prefill work of the prompts ahead of it: the M/M/1 wait
 *     {@code x·β·P / (1 − u) × (perToken·P)} of a server busy with prefill a share x·β·P of the time and slowed by
 *     the rest of its work; it matters when prompts are long (retrieval-augmented traffic). And it waits for the
 *     step in progress to end before it is admitted: half a step on average, where one is in progress (an engine
 *     whose batch is empty, with probability about e^(−x·D/1000), starts a step for the arrival at once).</li>
 * </ol>
 * P, the uncached prompt, is the observed mean at every load, or, with a model of the engine's prefix cache
 * ({@link CacheReuse}), what the cache leaves uncached at load x: the more requests an engine is given, the fewer of
 * their conversations' contexts its cache keeps until their next turn, and the more each prompt costs.
 * The saturation load μ is where x·D(x)/1000 = N, or prefill alone takes all the time: beyond it a queue grows
 * without bound. It is what the optimizer calls the engine's capacity (its profiles are functions of
 * ρ = x / capacity and diverge at ρ = 1). TTFT(x) = TTFT₀(x) + both waits, and TBT(x), are increasing in x, and
 * convex but where a curve bends towards a limit (TTFT from idle to half a step more at light load, TBT to the full
 * batch's step near saturation); {@link #profile()} samples them and lets {@link MeasuredProfile} enforce
 * monotonicity and convexity on the samples, which keeps the optimizer's problem convex.
 *
 * @param alpha        decode work of a step with no sequence, ms, ≥ 0
 * @param gamma        decode work added per decoding sequence, ms, ≥ 0
 * @param beta         share of the engine's time one uncached prompt token per second takes, s, ≥ 0
 * @param base         first-token time not explained by the prompt or the step, ms, ≥ 0
 * @param perToken     prefill time per uncached prompt token, ms, ≥ 0
 * @param perStep      steps until the first token (ms of TTFT per ms of step), ≥ 0
 * @param slots        the most requests in the batch at once, N ≥ 1
 * @param outputTokens mean output tokens per request, n ≥ 1
 * @param promptTokens mean uncached prompt tokens per request, P ≥ 0
 * @param outputCv2    squared coefficient of variation of the output lengths, ≥ 0: 0 for requests all alike, 1 for
 *                     exponential lengths
 * @param cache        the prefix cache's capacity for reuse at each load, or null: P at every load
 */
record Batching(double alpha, double gamma, double beta, double base, double perToken, double perStep,
                double slots, double outputTokens, double promptTokens, double outputCv2, CacheReuse cache) {

    /**
     * Output lengths as variable as exponential ones (c² = 1), what the M/M/N queue assumes: the reading where the
     * engine does not say how its requests' lengths vary.
     */
    static final double UNKNOWN_CV2 = 1;

    Batching(double alpha, double gamma, double beta, double base, double perToken, double perStep, double slots,
             double outputTokens, double promptTokens) {
        this(alpha, gamma, beta, base, perToken, perStep, slots, outputTokens, promptTokens, UNKNOWN_CV2);
    }

    /** Without a model of the prefix cache: the uncached prompt is {@code promptTokens} at every load. */
    Batching(double alpha, double gamma, double beta, double base, double perToken, double perStep, double slots,
             double outputTokens, double promptTokens, double outputCv2) {
        this(alpha, gamma, beta, base, perToken, perStep, slots, outputTokens, promptTokens, outputCv2, null);
    }

    /**
     * Uncached prompt tokens per request at load x: {@code promptTokens} without a model of the prefix cache, else
     * what the cache leaves at that load ({@link CacheReuse}).
     */
    double prompt(double x) {
        return cache == null ? promptTokens : cache.uncached(x);
    }

    /** The same engine with its prefix cache modelled by {@code c} (null: the uncached prompt fixed). */
    Batching withCache(CacheReuse c) {
        return new Batching(alpha, gamma, beta, base, perToken, perStep, slots, outputTokens, promptTokens, outputCv2,
                c);
    }

    /**
     * The most places a batch is taken to have, whatever an engine's gauges or its rating say: beyond any engine's
     * (vLLM's and SGLang's limits run to a few thousand sequences, a data-parallel group behind one endpoint to some
     * eight thousand), and what keeps the queue's arithmetic, linear in the places, bounded: an exporter that said a
     * billion requests were running once made one solve run for minutes.
     */
    static final int MAX_SLOTS = 16_384;

    /** Utilizations (load / saturation) at which {@link #profile()} samples the curves. */
    static final double[] SAMPLES = {0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.925, 0.95,
        0.97, 0.985};

    Batching {
        nonNegative("alpha", alpha);
        nonNegative("gamma", gamma);
        nonNegative("beta", beta);
        nonNegative("base", base);
        nonNegative("per_token", perToken);
        nonNegative("per_step", perStep);
        if (!(slots >= 1) || Double.isInfinite(slots)) {
            throw new IllegalArgumentException("slots: " + slots + " (expected: a finite number >= 1)");
        }
        slots = Math.min(slots, MAX_SLOTS);
        if (!(outputTokens >= 1) || Double.isInfinite(outputTokens)) {
            throw new IllegalArgumentException("output_tokens: " + outputTokens + " (expected: a finite number >= 1)");
        }
        nonNegative("prompt_tokens", promptTokens);
        nonNegative("output_cv2", outputCv2);
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
        return new Batching(alpha * factor, gamma * factor, beta * factor, base * factor, perToken * factor,
                perStep, slots, outputTokens, promptTokens, outputCv2, cache);
    }

    /** The same engine with another batch limit. */
    Batching withSlots(double n) {
        if (!(n >= 1)) {
            n = 1;
        }
        return new Batching(alpha, gamma, beta, base, perToken, perStep, n, outputTokens, promptTokens, outputCv2,
                cache);
    }

    /** Share of the engine's time per request per second of its per-token work at load x, about: u(x) = x · this. */
    private double workPerRequest(double x) {
        return beta * prompt(x) + gamma * (outputTokens - 1) / 1000;
    }

    /**
     * The load at which prefill alone takes all the engine's time, req/s (infinite without prefill work): decoding
     * cannot saturate an engine by itself, since its batch holds at most N and a step at most a full batch's time.
     */
    double computeLimit() {
        double w = beta * prompt(Double.POSITIVE_INFINITY);
        if (!(w > 0)) {
            return Double.POSITIVE_INFINITY;
        }
        if (cache == null) {
            return 1 / w;
        }
        // x·β·P(x) grows with x (P does); it is below 1 at 1/(β·P(∞)), the most P can be: bisect above that
        double lo = 1 / w;
        double hi = lo;
        while (hi * beta * prompt(hi) < 1 && hi < 1e12) {
            hi *= 2;
        }
        for (int it = 0; it < 100 && hi - lo > 1e-12 * hi; it++) {
            double mid = 0.5 * (lo + hi);
            if (mid * beta * prompt(mid) < 1) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        return hi;
    }

    /**
     * Mean time between output tokens at load x req/s, ms, as engines report it: per token, so each step counts once
     * for every sequence it advances. Law 2 closed with the batch a token sees ({@link #tokenBatch}), not the mean
     * batch: {@code TBT = (α + γ·tokenBatch(x·(n − 1)·TBT/1000)) / (1 − β·π)}, solved for TBT by regula falsi (the
     * right side grows with TBT and lies between a batch of one and a full batch). Infinite where prefill alone takes all
     * the engine's time.
     */
    double tbt(double x) {
        double d = 1 - beta * Math.max(0, x) * prompt(x);
        if (d <= 0) {
            return Double.POSITIVE_INFINITY;
        }
        int n = servers();
        double perTbt = Math.max(0, x) * (outputTokens - 1) / 1000; // mean decoding batch per ms of TBT (Little)
        double lo = (alpha + gamma) / d;
        double hi = (alpha + gamma * n) / d;
        if (hi - lo <= 1e-12 * hi) { // no decode work per sequence, or a batch of one
            return lo;
        }
        // g(T) = right side − T falls from ≥ 0 at lo to ≤ 0 at hi: regula falsi, Illinois variant (a few steps)
        double glo = (alpha + gamma * tokenBatch(perTbt * lo, n)) / d - lo;
        double ghi = (alpha + gamma * tokenBatch(perTbt * hi, n)) / d - hi;
        if (glo <= 0) {
            return lo;
        }
        if (ghi >= 0) {
            return hi;
        }
        int side = 0;
        double t = lo;
        for (int i = 0; i < 100 && hi - lo > 1e-10 * hi; i++) {
            t = (lo * ghi - hi * glo) / (ghi - glo);
            double g = (alpha + gamma * tokenBatch(perTbt * t, n)) / d - t;
            if (Math.abs(g) <= 1e-10 * t) {
                return t;
            }
            if (g > 0) {
                lo = t;
                glo = g;
                if (side == -1) {
                    ghi /= 2;
                }
                side = -1;
            } else if (g < 0) {
                hi = t;
                ghi = g;
                if (side == 1) {
                    glo /= 2;
                }
                side = 1;
            }
        }
        return t;
    }

    /**
     * The batch an output token sees on average, E[R²]/E[R], when the decoding batch R holds {@code mean} sequences
     * on average and at most {@code n}: a token is more likely made in a large batch, and a step's time grows with
     * its batch, so the mean time between tokens is that of this batch, not of the mean one. Below the limit the batch
     * is a Poisson count (sequences arrive at random and stay a while: M/G/∞), which gives mean + 1; at the limit
     * it is full and gives n. Between, the busy places of the M/M/n queue with offered load {@code mean}: P(k) ∝
     * mean^k/k! below n, and the rest at n; its moments come from Erlang's B formula at n, n − 1 and n − 2 (stable
     * for large n). 1 for an empty batch (the token's own sequence), n at or beyond it.
     */
    static double tokenBatch(double mean, int n) {
        if (!(mean > 0)) {
            return 1;
        }
        if (mean >= n) {
            return n;
        }
        if (mean + 1 + 12 * Math.sqrt(mean + 1) < n) {
            return mean + 1; // the limit is beyond any batch this mean makes (by 12 deviations): a Poisson batch
        }
        // Erlang B: b(0) = 1, b(k) = a·b(k−1) / (k + a·b(k−1)); keep b(n), b(n − 1), b(n − 2). The recursion forgets
        // where it starts (each step below k = a shrinks an error by k/a), so it starts 12 deviations below the mean,
        // at B(k, a) ≈ 1 − k/a, and costs O(√a) rather than O(n)
        int from = (int) Math.max(0, Math.min(n - 3, Math.floor(mean - 12 * Math.sqrt(mean) - 1)));
        double b = from == 0 ? 1 : 1 - from / mean;
        double b1 = Double.NaN;
        double b2 = Double.NaN;
        for (int k = from + 1; k <= n; k++) {
            b2 = b1;
            b1 = b;
            b = mean * b / (k + mean * b);
        }
        // sums S_m = Σ_{k ≤ m} a^k/k! relative to S_n: S_{m−1}/S_m = 1 − b(m)
        double s1 = 1 - b;
        double s2 = n >= 2 ? s1 * (1 - b1) : 0;
        double s3 = n >= 3 ? s2 * (1 - b2) : 0;
        double tail = b * n / (n - mean); // the states with every place busy (queue included), relative to S_n
        double z = s1 + tail;
        double second = (mean * s2 + mean * mean * s3 + (double) n * n * tail) / z;
        return Math.max(1, Math.min(n, second / mean));
    }

    /** The step law at a batch of {@code running} and a prefill load of {@code pi} tokens/s, ms. */
    double stepTime(double running, double pi) {
        double d = 1 - beta * pi;
        return d <= 0 ? Double.POSITIVE_INFINITY : (alpha + gamma * running) / d;
    }

    /**
     * What one step of an engine of this law takes at a batch of {@code running} and a prefill load of {@code pi}
     * tokens/s, when its steps are seen to take {@code tbt} ms: the decoding batch's time and the prefill work the
     * step carries (β·π of every millisecond of steps). An engine {@code s} times slower than the law ({@link #slower})
     * takes s times this work per step, so {@code tbt / stepWork} is its speed factor, at any prefill load: the ratio
     * of {@code tbt} to {@link #stepTime} is not, since a slower engine's prefill takes a larger share of each step.
     */
    double stepWork(double running, double pi, double tbt) {
        return alpha + gamma * running + beta * pi * tbt;
    }

    /** Time to first token at load x without waiting for the batch, ms. */
    double firstTokenWithoutQueue(double x) {
        return first(x, tbt(x));
    }

    /** Time to first token without the wait at load x, at a time between tokens of {@code tbt} ms. */
    private double first(double x, double tbt) {
        return base + perToken * prompt(x) + perStep * tbt;
    }

    /** How long a request holds its place in the batch at load x, ms. */
    double residence(double x) {
        return residenceAt(x, tbt(x));
    }

    /** {@link #residence(double)} at a time between tokens of {@code tbt} ms (the load's, computed once). */
    private double residenceAt(double x, double tbt) {
        return first(x, tbt) + (outputTokens - 1) * tbt;
    }

    /**
     * The same engine with the batch limit at which it saturates at {@code rps}: the places busy there. A measured
     * saturation throughput is the most direct evidence of where the queue starts, so it sets N (the laws stay).
     */
    Batching saturatingAt(double rps) {
        return withSlots(Math.max(1, busySlots(rps)));
    }

    /** Batch places busy on average at load x. */
    double busySlots(double x) {
        return busyAt(x, tbt(x));
    }

    /** {@link #busySlots(double)} with the load's time between tokens, {@code tbt}, computed once. */
    private double busyAt(double x, double tbt) {
        return x * residenceAt(x, tbt) / 1000;
    }

    /** Whole batch places, the N of the M/M/N queue. */
    int servers() {
        return places(slots);
    }

    /** The whole places of a batch limit of {@code slots} (estimated, so possibly fractional), at least one. */
    static int places(double slots) {
        return (int) Math.max(1, Math.floor(slots + 1e-9));
    }

    /**
     * The saturation load μ, req/s: where the busy places reach N or the compute limit, whichever comes first.
     * Bisection on a monotone function: busy places grow with load (and without bound at the compute limit).
     */
    double saturation() {
        int n = servers();
        double limit = computeLimit();
        double hi = Math.min(limit, 1e12);
        double lo = 0;
        if (Double.isInfinite(limit)) {
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

    /**
     * How long a request holds its place at load x while every place is taken, ms: the places not prefilling all
     * decode, so each step is the step of that batch. At the saturation load it equals {@link #residence}, since
     * there the mean batch is the full one.
     */
    double residenceAtFullBatch(double x) {
        return residenceAtFullBatch(x, tbt(x));
    }

    private double residenceAtFullBatch(double x, double tbt) {
        double first = first(x, tbt);
        double decoding = Math.max(0, servers() - x * first / 1000);
        return first + (outputTokens - 1) * stepTime(decoding, x * prompt(x));
    }

    /**
     * Mean wait before a request's prefill starts at load x, ms: for a place in the batch ({@link #placeWait}) and
     * for the prefill work ahead of it and the step in progress ({@link #waitWithoutFullBatch}); infinite at or beyond
     * saturation.
     */
    double wait(double x) {
        return wait(x, tbt(x));
    }

    /** {@link #wait(double)} with the load's time between tokens, {@code tbt}, computed once. */
    private double wait(double x, double tbt) {
        if (x <= 0) {
            return 0;
        }
        return placeWait(x, tbt) + waitWithoutFullBatch(x, tbt);
    }

    /**
     * The part of the wait at load x that is for a place in the batch, ms; infinite at or beyond saturation. The M/G/N
     * queue's in Allen and Cunneen's approximation: the M/M/N wait × (1 + c²)/2, with c² the residences' squared
     * coefficient of variation (the output lengths' × the decoding share of a residence, squared), and the places
     * held as long as a full batch holds them: a request waits only while every place is taken, and then every step
     * is a full batch's.
     */
    double placeWait(double x) {
        return placeWait(x, tbt(x));
    }

    private double placeWait(double x, double tbt) {
        if (x <= 0) {
            return 0;
        }
        int n = servers();
        double full = residenceAtFullBatch(x, tbt);
        double a = x * full / 1000;
        if (!(busyAt(x, tbt) < n) || !(a < n)) {
            return Double.POSITIVE_INFINITY;
        }
        double decoding = full - first(x, tbt);
        double cv2 = outputCv2 * (decoding / full) * (decoding / full); // a place is held for prefill + n − 1 steps
        return erlangC(n, a) * full / (n - a) * (1 + cv2) / 2;
    }

    /** The part of the wait at load x that a full batch does not cause: prefill work ahead, the step in progress, ms. */
    double waitWithoutFullBatch(double x) {
        return waitWithoutFullBatch(x, tbt(x));
    }

    private double waitWithoutFullBatch(double x, double tbt) {
        double u = x * workPerRequest(x);
        if (!(u < 1)) {
            return Double.POSITIVE_INFINITY;
        }
        // the step in progress: half a step, where a step is in progress; an engine with nothing in its batch starts
        // one for the arrival at once, and its batch is empty with probability about e^(−busy places)
        double p = prompt(x);
        return x * beta * p / (1 - u) * perToken * p
                + 0.5 * tbt * -Math.expm1(-busyAt(x, tbt));
    }

    /** Mean time to first token at load x, ms: the wait for the batch plus the prefill. */
    double ttft(double x) {
        return ttft(x, tbt(x));
    }

    private double ttft(double x, double tbt) {
        return wait(x, tbt) + first(x, tbt);
    }

    /**
     * The fewest servers n at which an M/M/n queue with offered load {@code a} and service time {@code serviceMs}
     * makes arrivals wait {@code waitMs} or less on average: what an observed wait says about how many places the
     * batch has (the wait falls as n grows). At most {@code cap}.
     */
    static int serversForWait(double a, double serviceMs, double waitMs, int cap) {
        cap = Math.min(cap, MAX_SLOTS);
        int n = Math.max(1, (int) Math.floor(a) + 1);
        if (n >= cap) {
            return n;
        }
        // one place at a time near the load, where the answer is for any engine; beyond, the wait falls with every
        // place added, so the fewest places that make it short enough are found by halving
        int linearEnd = Math.min(cap, n + SCAN);
        while (n < linearEnd && erlangC(n, a) * serviceMs / (n - a) > waitMs) {
            n++;
        }
        if (n < linearEnd || n >= cap) {
            return n;
        }
        int lo = n;
        int hi = cap;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (erlangC(mid, a) * serviceMs / (mid - a) > waitMs) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /** Places {@link #serversForWait} tries one by one above the load before it halves. */
    private static final int SCAN = 256;

    /**
     * Erlang's C formula: the probability that an arrival to an M/M/n queue with offered load a (&lt; n) waits. From
     * the Erlang B recursion B(0) = 1, B(k) = a·B(k−1) / (k + a·B(k−1)), which is stable for large n, and
     * C = B / (1 − (a/n)·(1 − B)).
     */
    static double erlangC(int n, double a) {
        double b = 1;
        for (int k = 1; k <= n && b > 0; k++) { // once B underflows to 0 it stays there
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
            double tbt = tbt(x);
            double ttft = ttft(x, tbt);
            if (!Double.isFinite(ttft) || !Double.isFinite(tbt)) {
                break;
            }
            points.add(new MeasuredProfile.Point(rho, Math.max(1e-3, ttft), tbt));
        }
        return new MeasuredProfile(points);
    }
}
