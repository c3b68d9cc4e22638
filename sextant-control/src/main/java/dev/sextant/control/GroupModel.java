package dev.sextant.control;

import dev.sextant.topology.Engine;
import dev.sextant.topology.LatencyProfile;

/**
 * What the evidence says about one group of identical engines (same engine cluster, models, configured capacity
 * and profile): the laws of {@link Batching} fitted to every member's scrape intervals, the workload they serve
 * and how many requests their batch holds. Identical engines share hardware and configuration, so pooling them
 * gives each law many more samples than one engine would; an engine that differs from its peers is caught by its
 * own speed factor ({@link EngineTracker}), not by the group's laws.
 *
 * <p>The configured capacity and profile are the prior, turned into the same parameters (see {@link #prior()}) and
 * entered as pseudo-observations worth {@link ControlOptions#priorWeight()} intervals that are never forgotten,
 * while real intervals are forgotten with {@link ControlOptions#lawHalfLife()}: with no evidence the model is the
 * configuration, with much it is the evidence.
 */
final class GroupModel {
    final String id;
    private final Engine config;
    private final int configuredOutputTokens;
    private final ControlOptions options;
    /** TBT ≈ α + γ·R + β·π·TBT, the step law (α + γ·R) / (1 − β·π) made linear in its parameters. */
    private final LeastSquares step = new LeastSquares(3);
    /** TTFT without queue ≈ base + perToken·P + perStep·TBT. */
    private final LeastSquares first = new LeastSquares(3);
    private long decayedAt;
    private boolean started;

    /** Requests finished, forgotten with the laws only: the group's traffic against other groups'. */
    private double completions;
    // the workload: what the engines are sent, forgotten with the laws and by the requests that come
    private double running;
    private double runningWeight;
    private double generated;
    private double generatedWeight;
    private double uncached;
    private double cached;
    private double promptWeight;

    private double largestPrefill;
    private final OutputLengths outputLengths = new OutputLengths();

    // totals, for explanations
    private long intervals;
    private long saturatedIntervals;
    private double totalCompletions;
    private long firstNanos;
    private long lastNanos;

    GroupModel(String id, Engine config, int configuredOutputTokens, ControlOptions options) {
        this.id = id;
        this.config = config;
        this.configuredOutputTokens = Math.max(1, configuredOutputTokens);
        this.options = options;
        this.priorWeight = options.priorWeight();
        this.rated = rating(config, this.configuredOutputTokens);
    }

    /** The rating the model starts from and the TBT there ({@link #rating}), from the configuration alone. */
    private final Rating rated;

    private record Rating(double rps, double tbtMs) {
    }

    /** The group's key: engines with equal keys are identical as configured. */
    static String key(Engine e) {
        return e.cluster() + "|" + String.join(",", new java.util.TreeSet<>(e.models())) + "|" + e.capacityRps() + "|"
                + e.profile() + (e.maxNumSeqs() > 0 ? "|" + e.maxNumSeqs() : "");
    }

    Engine config() {
        return config;
    }

    private double tau() {
        return options.lawHalfLife().toNanos() / Math.log(2);
    }

    /** Forgets evidence up to {@code now}. */
    void decayTo(long now) {
        if (!started) {
            decayedAt = now;
            started = true;
            return;
        }
        if (now <= decayedAt) {
            return;
        }
        double f = Math.exp(-(now - decayedAt) / tau());
        decayedAt = now;
        step.decay(f);
        first.decay(f);
        kvTokens *= f;
        kvWeight *= f;
        largestPrefill *= f;
        completions *= f;
        forgetWorkload(f);
    }

    /** Forgets the workload's evidence by the factor {@code w} in (0, 1]. */
    private void forgetWorkload(double w) {
        running *= w;
        runningWeight *= w;
        generated *= w;
        generatedWeight *= w;
        uncached *= w;
        cached *= w;
        promptWeight *= w;
        memberSeconds *= w;
        memberCompletions *= w;
        outputLengths.decay(w);
    }

    /**
     * Forgets the laws' evidence, not the workload's: called when the group's engines changed pace together, so that
     * what the laws learned describes engines that are no longer there. The laws are the configuration again until
     * new intervals come.
     */
    void forgetLaws(long now, double median) {
        step.decay(0);
        first.decay(0);
        priorWeight = options.priorWeight();
        restartedNanos = now;
        restartedMedian = median;
    }

    // when the laws last started again (forgetLaws), and the median speed factor that made them; MIN_VALUE: never
    private long restartedNanos = Long.MIN_VALUE;
    private double restartedMedian;

    // whether the median of the members' speed factors is beyond the slow factor of 1 (see paceChanged)
    private boolean paceMoved;

    /**
     * True once when the median of the members' speed factors moves beyond {@link ControlOptions#slowFactor()} of the
     * law, either way: most of the group runs at another pace than its law learned. Again only after the median has
     * come back within {@link ControlOptions#recoveredFactor()}, as the law learns the new pace.
     */
    boolean paceChanged(double median, ControlOptions o) {
        double off = Math.abs(Math.log(median));
        if (!paceMoved && off > Math.log(o.slowFactor())) {
            paceMoved = true;
            return true;
        }
        if (paceMoved && off < Math.log(o.recoveredFactor())) {
            paceMoved = false;
        }
        return false;
    }

    /** Mean uncached prompt tokens per request, from the evidence (0 without any). */
    double promptTokens() {
        return promptWeight > 0 ? Math.min(DefaultControlLoop.MAX_TOKENS, uncached / promptWeight) : 0;
    }

    /** KV-cache capacities in tokens read off intervals (running × tokens per request ÷ KV fraction), decayed. */
    private double kvTokens;
    private double kvWeight;
    /** Interval seconds and completions of the members, decayed: a member's mean load. */
    private double memberSeconds;
    private double memberCompletions;

    /** The KV capacity, in tokens, the members' latest scrapes state (NaN where none does). */
    private double statedKvTokens = Double.NaN;

    /**
     * A member's scrape states its KV cache's capacity ({@code vllm:cache_config_info}, {@code
     * sglang:max_total_num_tokens}): the engine's own figure, so it replaces the reading of {@link #kvCapacityTokens}.
     * Members of a group are alike; the latest statement stands.
     */
    void kvStated(double tokens) {
        if (tokens > 0) {
            statedKvTokens = tokens;
        }
    }

    /**
     * Tokens a member's KV cache holds (NaN without evidence): as its engines state it, or else as its intervals show
     * it: the sequences running at a scrape hold its KV fraction, each about a request's prompt and output (vLLM
     * reserves blocks as a sequence grows, so this reads the capacity a little high where outputs are long against
     * prompts).
     */
    double kvCapacityTokens() {
        if (statedKvTokens > 0) {
            return statedKvTokens;
        }
        return kvWeight > 0 ? kvTokens / kvWeight : Double.NaN;
    }

    /** A member's mean load recently, req/s (0 without evidence). */
    double memberLoad() {
        return memberSeconds > 0 ? memberCompletions / memberSeconds : 0;
    }

    /** Requests counted towards {@link ReuseDistribution} before the prefix cache is modelled from it. */
    static final double MIN_REUSE_COUNT = 100;

    /**
     * The least share of the reuse times below a context's stay in the cache at the present load for the cache to be
     * modelled. What a cache without limit would serve is read as the present hits over that share, so the share's
     * relative error is R's: the approximation was checked on the simulator's engine down to an eighth kept (24k-token
     * prompts, {@code PrefixCacheTest}: R read within 15% from three quarters kept to an eighth). Below a tenth the
     * cache keeps next to nothing of its conversations, the few hits say little of the rest, and the uncached prompt
     * stays as observed.
     */
    static final double MIN_KEPT_SHARE = 0.1;

    /**
     * The prefix cache of a member whose fitted law is {@code fit}, for conversations whose requests come the times
     * {@code reuse} apart ({@link CacheReuse}); null where there is not evidence enough (too few reuse times, no KV
     * capacity, no load, no cache hits) or where the cache keeps less than {@link #MIN_KEPT_SHARE} of the
     * conversations until their next request.
     *
     * <p>With the characteristic time T of Che's approximation the cache serves {@code reusable · G(T)}; the present
     * hits give {@code reusable = cached / G(T)}. Where that would exceed the whole prompt (a cache of a few large
     * contexts keeps them longer than the approximation's mean says), the reusable share is the whole prompt and T is
     * scaled so that the model serves the present hits at the present load.
     */
    CacheReuse cacheReuse(Batching fit, ReuseDistribution reuse) {
        double cachedNow = cachedTokens();
        CacheReuse none = unpriced(fit, reuse);
        if (none == null || !(cachedNow > 0)) {
            return null;
        }
        double prompt = none.prompt();
        double kept = none.keptSeconds(memberLoad());
        double share = reuse.cdf(kept);
        if (!(share >= MIN_KEPT_SHARE) || !(prompt > cachedNow)) {
            return null;
        }
        if (cachedNow / share <= prompt) {
            return new CacheReuse(prompt, cachedNow / share, none.kvTokens(), none.context(), none.busyPerRps(),
                    none.slots(), reuse, 1);
        }
        // the whole prompt reusable, and G(s·T) = cachedNow / prompt for the scale s
        double scaled = reuse.quantile(cachedNow / prompt);
        if (!Double.isFinite(scaled)) {
            return null;
        }
        return new CacheReuse(prompt, prompt, none.kvTokens(), none.context(), none.busyPerRps(), none.slots(), reuse,
                scaled / kept);
    }

    /**
     * How long a member's cache keeps a conversation's context at each load, for the gateways (docs/request-path.md §4,
     * "Spacing new conversations"): {@code priced}, the model the engine is priced with, where there is one; else Che's
     * time alone ({@link #unpriced}), which needs only the reuse times, the KV capacity and the batch, not the hits (a
     * cache that keeps next to nothing of its conversations has too few hits to price, and is where a conversation's
     * context is gone soonest); null without those.
     */
    CacheReuse keeping(CacheReuse priced, Batching fit, ReuseDistribution reuse) {
        return priced != null ? priced : unpriced(fit, reuse);
    }

    /**
     * The cache of a member whose fitted law is {@code fit} with Che's time alone and nothing reusable: what the
     * keeping time needs, before the hits are read; null with too few reuse times, no KV capacity above a context, no
     * load, or no finite residence.
     */
    private CacheReuse unpriced(Batching fit, ReuseDistribution reuse) {
        double kv = kvCapacityTokens();
        double x0 = memberLoad();
        double prompt = promptTokens() + cachedTokens();
        double context = prompt + outputTokens();
        if (reuse == null || reuse.requests() < MIN_REUSE_COUNT || !(kv > context) || !(x0 > 0)) {
            return null;
        }
        double busyPerRps = fit.residence(x0) / 1000;
        if (!Double.isFinite(busyPerRps)) {
            return null;
        }
        return new CacheReuse(prompt, 0, kv, context, busyPerRps, Math.max(1, fit.slots()), reuse, 1);
    }

    /** Mean sequences in a member's batch, recently (0 without evidence). */
    double meanBatch() {
        return runningWeight > 0 ? running / runningWeight : 0;
    }

    /** Mean cached prompt tokens per request (0 without evidence). */
    double cachedTokens() {
        return promptWeight > 0 ? cached / promptWeight : 0;
    }

    /** Mean output tokens per request: the evidence, with the model's configured count as the prior. */
    double outputTokens() {
        double c0 = options.priorWeight();
        return Math.max(1, (generated + configuredOutputTokens * c0) / (generatedWeight + c0));
    }

    /**
     * For a model's estimate: the group's mean output tokens per request weighted by its requests finished recently
     * (forgotten with the laws' half-life only, so that groups weigh as their traffic does), and that weight.
     */
    double[] outputEvidence() {
        if (!(generatedWeight > 0)) {
            return new double[] {0, 0};
        }
        return new double[] {generated / generatedWeight * completions, completions};
    }

    /** The requests per second finished, recently (for weighting groups against each other). */
    double completionsWeight() {
        return completions;
    }

    /** How much the evidence weighs against the prior, in [0, 1), as of the last {@link #fitted}. */
    double evidence() {
        return step.weight() / (step.weight() + priorWeight);
    }

    /**
     * The F statistic beyond which the data refute the prior: about the 1% point of F(3, n) for the n of a few
     * minutes of intervals (3.8). A prior the data reject at that level is wrong, not merely uncertain…
     */
    static final double REFUTED = 4;
    /**
     * … provided its predictions on the data are off by more than this fraction (root-mean-square, beyond the
     * data's own fit): a prior that close is right enough, whatever a test on nearly noise-free data says, and
     * keeps its full weight, for it is what holds the fit where the data do not reach (the loads not seen yet).
     */
    static final double TOLERATED = 0.05;

    /** The prior's weight at the last {@link #fitted}: {@link ControlOptions#priorWeight()}, less where refuted. */
    private double priorWeight;

    /**
     * The prior's weight given how the data refute it ({@code conflict}: the F statistic and the relative error of
     * {@link LeastSquares#conflict}): the configured weight while the data agree with it; when they refute it, that
     * weight divided by how many times the statistic passes {@link #REFUTED} or by the square of how many times its
     * error passes {@link #TOLERATED}, whichever divides less. A ridge of fixed weight would otherwise keep pulling a
     * fit toward a rating that is wrong by 2× however much evidence says so: with W intervals of data, by c0/(c0 + W)
     * of the error, which for the capacity of an engine rated twice too high is still +25% after ten minutes.
     */
    private double priorWeight(double[] conflict) {
        double c0 = options.priorWeight();
        double f = conflict[0];
        double e = conflict[1];
        if (!(f > REFUTED) || !(e > TOLERATED)) {
            return c0;
        }
        return c0 * Math.max(REFUTED / f, (TOLERATED / e) * (TOLERATED / e));
    }

    /**
     * The rating the model starts from and its TBT ({@link #ratedRps()}, {@link #tbtAtRating()}): the configured
     * capacity C and the configured profile's TBT at full load, or, where the engine's stated batch limit N
     * ({@link Engine#maxNumSeqs()}) cannot finish C, the most it can finish and the TBT there.
     *
     * <p>Read the way the prior reads the profile ({@link #prior}): the idle TTFT less one step is a request's prefill,
     * pf ms of the engine's time, so at x req/s prefill takes a share x·pf/1000 of every step and TBT = step/(1 − x·pf/1000);
     * the TBT at capacity includes that share at C. A request holds its place for D = TTFT₀ + (n − 1)·TBT, so the batch
     * the configured capacity implies holds N_c = C·D/1000 (Little). The step of one sequence is the idle TBT, that of
     * N_c is the TBT at capacity without C's prefill share, and a batch of N steps on the line through the two. N places
     * finish at most the x where x·D(x)/1000 = N, found by bisection (x·D(x) increases with x); where N ≥ N_c, or no
     * limit is stated, the rating is C.
     */
    private static Rating rating(Engine config, int outputTokens) {
        LatencyProfile prof = config.profile();
        double c = config.capacityRps();
        double tbt0 = Math.max(0, prof.tbtMs(0));
        double tbtFull = Math.max(tbt0, prof.tbtMs(1.0));
        double ttft0 = prof.ttftMs(0);
        double nc = c * (ttft0 + (outputTokens - 1) * tbtFull) / 1000;
        int n = config.maxNumSeqs();
        if (n <= 0 || n >= nc || nc <= 1) {
            return new Rating(c, tbtFull);
        }
        double pf = Math.max(0, ttft0 - tbt0);
        double stepAtC = Math.max(tbt0, tbtFull * Math.max(0, 1 - c * pf / 1000));
        double step = tbt0 + (n - 1) / (nc - 1) * (stepAtC - tbt0);
        double lo = 0;
        double hi = pf > 0 ? Math.min(c, 1000 / pf) : c;
        for (int i = 0; i < 60; i++) {
            double x = (lo + hi) / 2;
            double d = ttft0 + (outputTokens - 1) * step / (1 - x * pf / 1000);
            if (x * d / 1000 < n) {
                lo = x;
            } else {
                hi = x;
            }
        }
        return new Rating(lo, step / (1 - lo * pf / 1000));
    }

    /**
     * The rating the model starts from ({@link #rating}): the configured capacity, or what the stated batch limit
     * finishes where that is lower. A rating beyond what the batch can hold (a benchmark of shorter answers, a figure
     * for another GPU) shows nothing until load fills the batch and requests queue; the batch limit is a flag the
     * engine was started with, and says so from the first step (docs/control-loop.md, "The batch limit in the
     * topology"). The prior then saturates at this rating with a batch of N.
     */
    double ratedRps() {
        return rated.rps();
    }

    /** The TBT at {@link #ratedRps()}: the configured profile's at full load, or that of the stated batch there. */
    private double tbtAtRating() {
        return rated.tbtMs();
    }

    /** How long a request holds its place at the rating: the idle TTFT, then the output tokens less one at its TBT. */
    private double residenceMs() {
        return config.profile().ttftMs(0) + (configuredOutputTokens - 1) * tbtAtRating();
    }

    /** Why the rating is below the configured capacity, or "" when it is not. */
    String ratedWhy() {
        return ratedRps() < config.capacityRps() ? String.format(java.util.Locale.ROOT,
                "; rated %.1f req/s, not the configured %.1f: %d sequences at once (max_num_seqs), each held about %.0f ms"
                        + " in a full batch, finish no more", ratedRps(), config.capacityRps(), config.maxNumSeqs(),
                residenceMs()) : "";
    }

    /** The batch the configured capacity and profile imply, for the observed prompts. */
    double configuredSlots() {
        return prior(promptTokens()).slots;
    }

    /** The configured capacity and profile as the parameters of {@link Batching}, for the observed prompts. */
    Batching prior() {
        Prior p = prior(promptTokens());
        return new Batching(p.alpha, p.gamma, p.beta, p.base, p.perToken, p.perStep, p.slots, configuredOutputTokens,
                promptTokens());
    }

    private record Prior(double alpha, double gamma, double beta, double base, double perToken, double perStep,
                         double slots, double decodingAtCapacity) {
    }

    /**
     * The configuration in the model's terms. From the configured profile: idle TBT (α), TBT at full load, idle
     * TTFT. The idle TTFT is read as one step plus the prefill of the observed mean prompt P, which gives the prefill
     * cost per token b and its share of the engine's time β = b/1000 per token per second. With n the model's
     * configured output tokens and C the rating ({@link #ratedRps()}: the configured capacity, or what the stated batch
     * limit finishes, TBT_full then that batch's), a request holds its place for D = TTFT + (n − 1)·TBT_full at
     * capacity, so the batch holds N = C·D/1000 (Little), and γ is chosen so that the step law gives TBT_full at C,
     * which makes the prior's saturation C itself.
     */
    private Prior prior(double prompt) {
        LatencyProfile prof = config.profile();
        double c0 = ratedRps();
        int n = configuredOutputTokens;
        double tbt0 = Math.max(0, prof.tbtMs(0));
        double tbtFull = tbtAtRating();
        double ttft0 = prof.ttftMs(0);
        double residence = residenceMs();
        double slots = Math.max(1, c0 * residence / 1000);
        double base;
        double perToken;
        double perStep;
        // a prompt of under a token after the cache is no prompt to price per token: 1e-300 of one once made the cost
        // of a token infinite
        if (prompt >= 1 && ttft0 > tbt0) {
            base = 0;
            perToken = (ttft0 - tbt0) / prompt;
            perStep = 1;
        } else {
            base = ttft0;
            perToken = 0;
            perStep = 0;
        }
        double beta = perToken / 1000;
        // a lone sequence: α + γ = TBT_idle; at C: (α + γ·tokenBatch(decoding at C)) / (1 − β·C·P) = TBT_full
        double decodingAtCapacity = c0 * (n - 1) * tbtFull / 1000;
        double gamma = 0;
        double full = Batching.tokenBatch(decodingAtCapacity, Batching.places(slots));
        if (n > 1 && tbtFull > tbt0 && full > 1) {
            gamma = Math.min(tbt0, Math.max(0, (tbtFull * (1 - beta * c0 * prompt) - tbt0) / (full - 1)));
        }
        return new Prior(tbt0 - gamma, gamma, beta, base, perToken, perStep, slots, decodingAtCapacity);
    }

    /**
     * One interval of one member, whose speed factor is {@code speed} (1 = as its group) and whose batch holds at most
     * {@code slots} sequences.
     */
    void sample(Interval i, double speed, double slots) {
        decayTo(i.atNanos());
        if (intervals == 0) {
            firstNanos = i.atNanos() - Math.round(i.seconds() * 1e9); // from the start of the first interval
        }
        lastNanos = i.atNanos();
        intervals++;
        totalCompletions += i.completions();
        double r = i.running();
        double pi = i.prefillRate();
        largestPrefill = Math.max(largestPrefill, pi);
        if (i.tbtCount() >= options.minTokenGaps() && !Double.isNaN(i.tbtMs())) {
            // the batch as the interval's token gaps say it was, not the gauge at its two ends (Interval.decoding)
            double y = i.tbtMs() / speed;
            // and the batch its tokens saw, which is larger than the mean one (Batching.tokenBatch)
            double seen = Batching.tokenBatch(i.decoding(), Batching.places(slots));
            step.add(new double[] {1, seen, pi * y}, y, 1);
        }
        double ttft0 = i.firstTokenWithoutQueue();
        if (i.ttftCount() >= 3 && !Double.isNaN(ttft0) && !Double.isNaN(i.tbtMs())) {
            double perRequest = Double.isNaN(i.prompt()) ? 0
                    : Math.max(0, i.prompt() - (Double.isNaN(i.cached()) ? 0 : i.cached())) / i.ttftCount();
            first.add(new double[] {1, perRequest, i.tbtMs() / speed}, ttft0 / speed, 1);
        }
        // the workload is about the latest workloadRequests requests, however fast they come
        forgetWorkload(Math.exp(-Math.max(0, i.completions()) / options.workloadRequests()));
        outputLengths.add(i.outputLengths());
        completions += i.completions();
        if (!Double.isNaN(r)) {
            running += r;
            runningWeight += 1;
        }
        if (!Double.isNaN(i.generated()) && i.completions() > 0) {
            generated += i.generated();
            generatedWeight += i.completions();
        }
        memberSeconds += i.seconds();
        memberCompletions += i.completions();
        double kv = i.kvUsage();
        if (kv >= 0.02 && i.runningEnd() >= 1 && !Double.isNaN(i.prompt()) && i.ttftCount() > 0
                && !Double.isNaN(i.generated()) && i.completions() > 0) {
            kvTokens += i.runningEnd() * (i.prompt() / i.ttftCount() + i.generated() / i.completions()) / kv;
            kvWeight += 1;
        }
        if (!Double.isNaN(i.prompt()) && i.ttftCount() > 0) {
            double c = Double.isNaN(i.cached()) ? 0 : Math.min(i.cached(), i.prompt());
            uncached += i.prompt() - c;
            cached += c;
            promptWeight += i.ttftCount();
        }
    }

    /** The prefill load (uncached prompt tokens per second) of the busiest recent interval. */
    double largestPrefill() {
        return largestPrefill;
    }

    /** The fitted model at {@code now}. */
    Batching fitted(long now) {
        decayTo(now);
        double prompt = promptTokens();
        Prior p = prior(prompt);
        double decodingAtCapacity = Math.max(1, p.decodingAtCapacity);
        double tbtFull = Math.max(p.alpha, tbtAtRating());
        double piRef = ratedRps() * prompt;
        double[] stepPrior = {p.alpha, p.gamma, p.beta};
        double[] firstPrior = {p.base, p.perToken, p.perStep};
        double stepWeight = priorWeight(step.conflict(stepPrior));
        double firstWeight = priorWeight(first.conflict(firstPrior));
        priorWeight = Math.min(stepWeight, firstWeight);
        step.prior(stepPrior, stepWeight, new double[] {1, decodingAtCapacity / 2, piRef * tbtFull / 2});
        double[] s = step.solve(new double[] {p.alpha, p.gamma, p.beta});
        first.prior(firstPrior, firstWeight, new double[] {1, Math.max(1, prompt), Math.max(1e-3, p.alpha + p.gamma)});
        double[] f = first.solve(new double[] {p.base, p.perToken, p.perStep});
        // a fit the intervals cannot make (no time at all, or coefficients beyond any number: an exporter's
        // nonsense that got through) is no fit, and the prior stands
        if (!(s[0] + s[1] + f[0] + f[1] + f[2] > 0) || !Double.isFinite(s[0] + s[1] + s[2] + f[0] + f[1] + f[2])) {
            s = new double[] {p.alpha, p.gamma, p.beta};
            f = new double[] {p.base, p.perToken, p.perStep};
        }
        return new Batching(s[0], s[1], s[2], f[0], f[1], f[2], p.slots, outputTokens(), prompt,
                outputLengths.cv2());
    }

    /**
     * The mean time between tokens the fitted law predicts for a batch of {@code running} on average, of at most
     * {@code slots}, at prefill load {@code pi}.
     */
    double lawTbt(long now, double running, double pi, double slots) {
        return fitted(now).stepTime(Batching.tokenBatch(running, Batching.places(slots)), pi);
    }

    /** How variable the group's output lengths are estimated to be, and from what. */
    String outputLengthsWhy() {
        return outputLengths.why();
    }

    /** Intervals sampled so far, over how long, and requests finished: the evidence behind the group's laws. */
    String evidenceWhy() {
        if (intervals == 0) {
            return "no evidence yet";
        }
        String why = String.format(java.util.Locale.ROOT, "%.0f requests over %s (%d intervals of its engines)",
                totalCompletions, Durations.human(lastNanos - firstNanos), intervals);
        return restartedNanos == Long.MIN_VALUE ? why : why + String.format(java.util.Locale.ROOT,
                "; its laws started again %s before the last of them, when most of its engines took %.1f× the step time "
                + "they had learned", Durations.human(Math.max(0, lastNanos - restartedNanos)), restartedMedian);
    }

    long intervals() {
        return intervals;
    }
}
