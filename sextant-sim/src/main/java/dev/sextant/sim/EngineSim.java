package dev.sextant.sim;

import dev.sextant.topology.PriorityScheduling;
import java.util.ArrayDeque;
import java.util.ArrayList;

/**
 * A continuous-batching engine like vLLM: a waiting queue, at most {@code maxSeqs} running sequences,
 * a KV cache in tokens shared with an LRU prefix cache, and chunked prefill with a token budget per step.
 *
 * <p>One step: every running sequence whose prompt is prefilled decodes one token (one token of budget
 * each); the rest of the budget goes to prompt chunks, first to running sequences still prefilling, then
 * to requests admitted from the waiting queue in arrival order while a sequence slot and KV space for the
 * whole request (prompt + output) are free. An engine with priority scheduling (vLLM's
 * {@code --scheduling-policy priority}) keeps its waiting queue ordered by the requests' {@code priority} field
 * instead, ties by arrival; it does not preempt running sequences for a waiting one (vLLM preempts only when the KV
 * cache runs out, which admission here never lets happen). A request reuses the tokens its conversation left in this
 * engine's prefix cache (at least one prompt token is always computed). The step lasts
 * {@code (a + b·prefill tokens + c·decoding sequences) × slowdown} ms; the step that finishes a prompt
 * emits the first token, each later step one more.
 *
 * <p>Implementation note. While nothing prefills and nobody new can be admitted, steps repeat
 * identically until the first sequence finishes, so they are simulated as one event of k steps. An
 * arrival or fault during such a run cuts it at the end of the step in progress, so the result equals a
 * step-by-step simulation.
 */
final class EngineSim {
    /** What the engine tells the simulation. */
    interface Listener {
        void firstToken(EngineSim engine, SimRequest r, double atMs);

        void finished(EngineSim engine, SimRequest r, double atMs);

        /**
         * The attempt failed at the engine: refused connection ({@code connect}: the engine is down) or
         * a crash / a request too large for the KV cache.
         */
        void failed(EngineSim engine, SimRequest r, double atMs, boolean connect);

        /** The client gave up waiting at {@code atMs} before the engine admitted it. */
        void timedOut(EngineSim engine, SimRequest r, double atMs);
    }

    final int index;
    final String id;
    final EngineParams params;
    private final EventLoop loop;
    private final Listener listener;
    private final double clientTimeoutMs;
    private final PriorityScheduling scheduling;

    private final ArrayDeque<SimRequest> waiting = new ArrayDeque<>();
    private final ArrayList<SimRequest> running = new ArrayList<>();
    private final ArrayList<SimRequest> keep = new ArrayList<>();
    final PrefixCache cache = new PrefixCache();
    private long reserved;
    private boolean up = true;
    private double slowdown = 1;
    /** Fraction of arriving requests answered at once with an error (a gray failure); 0 when healthy. */
    private double errorFraction;
    /** Time an engine takes to answer a request it fails, ms. */
    static final double ERROR_MS = 5;
    private long errorDraws;

    private boolean stepping;
    private boolean startPending;
    private boolean macro;
    private double stepStart;
    private double stepDur;
    private int stepK;
    private long generation;

    /** What its /metrics would show, cumulative. */
    final EngineExport export = new EngineExport();

    // counters, read by the simulation
    double busyMs;
    /** Running sequences × ms, summed over steps: over an interval, divided by its length, the mean batch size. */
    double sequenceMs;
    long steps;
    long promptTokens;
    long savedTokens;

    EngineSim(int index, String id, EngineParams params, EventLoop loop, Listener listener, double clientTimeoutMs) {
        this(index, id, params, PriorityScheduling.NONE, loop, listener, clientTimeoutMs);
    }

    EngineSim(int index, String id, EngineParams params, PriorityScheduling scheduling, EventLoop loop,
              Listener listener, double clientTimeoutMs) {
        this.scheduling = scheduling;
        this.index = index;
        this.id = id;
        this.params = params;
        this.loop = loop;
        this.listener = listener;
        this.clientTimeoutMs = clientTimeoutMs;
    }

    boolean isUp() {
        return up;
    }

    int runningCount() {
        return running.size();
    }

    int waitingCount() {
        return waiting.size();
    }

    /**
     * The engine's metrics as a scrape now would read them: with the tokens of the steps of a run of identical decode
     * steps that have ended by now, as a step-by-step engine would have counted them.
     */
    dev.sextant.signal.EngineMetrics metrics() {
        return export.metrics(running.size(), waiting.size(), kvUsage(), stepsEnded() * running.size(), stepDur);
    }

    /** Steps of the run of identical decode steps in progress that have ended by now; 0 outside such a run. */
    private long stepsEnded() {
        return stepping && macro ? Math.min(stepK - 1, (long) Math.floor((loop.now() - stepStart) / stepDur)) : 0;
    }

    /** Fraction of the KV cache held by running sequences, as vLLM's {@code kv_cache_usage_perc}. */
    double kvUsage() {
        return (double) reserved / params.kvCacheTokens();
    }

    /** A request reaches the engine now. */
    void arrive(SimRequest r) {
        if (!up) {
            listener.failed(this, r, loop.now(), true);
            return;
        }
        if (errorFraction > 0 && Hashing.unit(errorDraws++, index) < errorFraction) {
            loop.after(ERROR_MS, () -> listener.failed(this, r, loop.now(), false));
            return;
        }
        r.engineArrivalMs = loop.now();
        enqueue(r);
        if (!stepping) {
            if (!startPending) {
                // start at the end of this instant, so requests arriving together share the first step
                startPending = true;
                loop.at(loop.now(), () -> {
                    startPending = false;
                    if (up && !stepping) {
                        startStep();
                    }
                });
            }
        } else if (macro) {
            cutMacro();
        }
    }

    /**
     * Puts {@code r} in the waiting queue: last, or with priority scheduling behind every request that comes before it
     * and ahead of the rest (a request without a priority counts as 0, as in vLLM).
     */
    private void enqueue(SimRequest r) {
        if (scheduling == PriorityScheduling.NONE || waiting.isEmpty() || !sooner(r, waiting.peekLast())) {
            waiting.addLast(r);
            return;
        }
        ArrayDeque<SimRequest> later = new ArrayDeque<>();
        while (!waiting.isEmpty() && sooner(r, waiting.peekLast())) {
            later.addFirst(waiting.pollLast());
        }
        waiting.addLast(r);
        waiting.addAll(later);
    }

    /** True when this engine admits {@code a} before {@code b}, which came earlier. */
    private boolean sooner(SimRequest a, SimRequest b) {
        int pa = a.enginePriority == SimRequest.NO_PRIORITY ? 0 : a.enginePriority;
        int pb = b.enginePriority == SimRequest.NO_PRIORITY ? 0 : b.enginePriority;
        return scheduling == PriorityScheduling.LOWER_FIRST ? pa < pb : pa > pb;
    }

    /**
     * The prompt tokens of {@code c}'s next turn this engine has cached: what the conversation left here (taken: the
     * running sequence owns it now), else its shared system prompt when another conversation left that here.
     */
    private int cached(Conversation c) {
        int own = cache.take(c.id);
        return own > 0 || c.systemPrompt < 0 ? own : cache.peek(sharedKey(c.systemPrompt));
    }

    /** The cache key of shared system prompt {@code i}: apart from every conversation id, which is ≥ 0. */
    private static long sharedKey(int i) {
        return Long.MIN_VALUE + i;
    }

    /** The engine crashes now: every request on it fails, its cache is lost. */
    void crash() {
        if (!up) {
            return;
        }
        double now = loop.now();
        export.tokens(stepsEnded() * running.size(), stepDur);
        if (stepping) {
            busyMs += now - stepStart;
            sequenceMs += running.size() * (now - stepStart);
        }
        up = false;
        stepping = false;
        generation++;
        ArrayList<SimRequest> lost = new ArrayList<>(running);
        lost.addAll(waiting);
        running.clear();
        waiting.clear();
        reserved = 0;
        cache.clear();
        for (SimRequest r : lost) {
            listener.failed(this, r, now, false);
        }
    }

    /** The engine is back, empty. */
    void recover() {
        up = true;
    }

    /** From now on a fraction {@code f} in [0, 1] of arriving requests is answered with an error. */
    void setErrorFraction(double f) {
        errorFraction = f;
    }

    /** Step times are multiplied by {@code factor} (≥ 1 slows down) from the next step on. */
    void setSlowdown(double factor) {
        slowdown = factor;
        if (stepping && macro) {
            cutMacro();
        }
    }

    private void cutMacro() {
        int done = (int) Math.floor((loop.now() - stepStart) / stepDur);
        int k = done + 1;
        if (k < stepK) {
            stepK = k;
            schedule();
        }
    }

    private void schedule() {
        long g = ++generation;
        loop.at(stepStart + stepK * stepDur, () -> {
            if (g == generation) {
                endStep();
            }
        });
    }

    private void startStep() {
        EngineParams p = params;
        int budget = p.chunkTokens();
        int decoding = 0;
        long prefill = 0;
        for (int i = 0; i < running.size(); i++) {
            if (running.get(i).prefillRemaining == 0) {
                decoding++;
            }
        }
        budget = Math.max(0, budget - decoding);
        for (int i = 0; i < running.size(); i++) {
            SimRequest r = running.get(i);
            if (r.prefillRemaining > 0) {
                int c = Math.min(r.prefillRemaining, budget);
                r.chunk = c;
                budget -= c;
                prefill += c;
            }
        }
        double now = loop.now();
        while (budget > 0 && !waiting.isEmpty() && running.size() < p.maxSeqs()) {
            SimRequest r = waiting.peekFirst();
            if (now - r.arrivalMs > clientTimeoutMs) {
                waiting.pollFirst();
                listener.timedOut(this, r, r.arrivalMs + clientTimeoutMs);
                continue;
            }
            long need = (long) r.promptTokens + r.outputTokens;
            if (reserved + need > p.kvCacheTokens()) {
                if (running.isEmpty()) {
                    waiting.pollFirst();
                    listener.failed(this, r, now, false);
                    continue;
                }
                break;
            }
            waiting.pollFirst();
            int cached = r.conversation == null ? 0 : Math.min(cached(r.conversation), r.promptTokens - 1);
            r.cachedTokens = cached;
            r.prefillRemaining = r.promptTokens - cached;
            r.outputRemaining = r.outputTokens;
            r.kvReserved = need;
            reserved += need;
            cache.shrinkTo(p.kvCacheTokens() - reserved);
            promptTokens += r.promptTokens;
            savedTokens += cached;
            export.admitted(now - r.engineArrivalMs, r.promptTokens, cached);
            running.add(r);
            int c = Math.min(r.prefillRemaining, budget);
            r.chunk = c;
            budget -= c;
            prefill += c;
        }
        if (running.isEmpty()) {
            stepping = false;
            return;
        }
        stepping = true;
        stepStart = now;
        if (prefill == 0) {
            int k = Integer.MAX_VALUE;
            for (int i = 0; i < running.size(); i++) {
                k = Math.min(k, running.get(i).outputRemaining);
            }
            macro = true;
            stepK = k;
            stepDur = (p.stepMs() + p.decodeMsPerSeq() * decoding) * slowdown;
        } else {
            macro = false;
            stepK = 1;
            stepDur = (p.stepMs() + p.prefillMsPerToken() * prefill + p.decodeMsPerSeq() * decoding) * slowdown;
        }
        schedule();
    }

    private void endStep() {
        double now = loop.now();
        int k = stepK;
        busyMs += k * stepDur;
        sequenceMs += running.size() * k * stepDur;
        steps += k;
        keep.clear();
        int gapBucket = export.gapBucket(stepDur);
        for (int i = 0; i < running.size(); i++) {
            SimRequest r = running.get(i);
            if (r.prefillRemaining > 0) {
                if (r.chunk > 0) {
                    r.prefillRemaining -= r.chunk;
                    r.chunk = 0;
                    if (r.prefillRemaining == 0) {
                        r.outputRemaining--;
                        export.firstToken(now - r.engineArrivalMs);
                        listener.firstToken(this, r, now);
                    }
                }
            } else {
                r.outputRemaining -= k;
                export.tokens(gapBucket, k, stepDur);
            }
            if (r.prefillRemaining == 0 && r.outputRemaining <= 0) {
                reserved -= r.kvReserved;
                if (r.conversation != null) {
                    cache.put(r.conversation.id, r.promptTokens + r.outputTokens, params.kvCacheTokens() - reserved);
                    if (r.conversation.systemPrompt >= 0) { // kept apart too: other conversations start with it
                        cache.put(sharedKey(r.conversation.systemPrompt), r.conversation.systemTokens,
                                params.kvCacheTokens() - reserved);
                    }
                }
                export.finished(r.outputTokens);
                listener.finished(this, r, now);
            } else {
                keep.add(r);
            }
        }
        running.clear();
        running.addAll(keep);
        startStep();
    }
}
