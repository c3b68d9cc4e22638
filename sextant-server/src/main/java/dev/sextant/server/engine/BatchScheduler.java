package dev.sextant.server.engine;

import io.netty.util.concurrent.EventExecutor;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The continuous-batching latency model (see {@link EngineConfig}), run as a chain of timers on one event
 * executor: no thread per request, no lock, all state confined to that executor.
 *
 * <p>A step starts by admitting waiting sequences while the batch has room and prefilling them; it lasts
 * {@code (a + c · batch + p · prefillTokens) · slowdown} ms; at its end every running sequence that can write
 * gets one token. The next step starts at once while work remains. Waiting sequences are admitted in arrival order,
 * or with priority scheduling lowest {@code priority} first, ties by arrival (vLLM's {@code priority} policy), each
 * only while its prompt fits in the KV cache the running sequences leave (their prompts and the tokens they generated
 * so far), as vLLM admits a request only when it can allocate its prompt's blocks; the first that does not fit waits,
 * and those behind it with it. A lone request is admitted whatever its size. Without vLLM's preemption: a running
 * sequence keeps its place as it grows, so the cache can be over-full for a while (its usage gauge then reads 1).
 */
final class BatchScheduler {
    private static final Logger LOG = Logger.getLogger(BatchScheduler.class.getName());
    private final EngineConfig config;
    private final EventExecutor executor;
    private final LongSupplier nanoTime;
    private final Supplier<Faults> faults;
    private final EngineMeters meters;
    private final PrefixCache prefixCache;
    private final ArrayDeque<Sequence> waiting = new ArrayDeque<>();
    private final List<Sequence> running = new ArrayList<>();
    private final List<Sequence> admittedThisStep = new ArrayList<>();
    private final AtomicLong generatedTokens = new AtomicLong();
    private final AtomicLong pausedTokens = new AtomicLong();
    private volatile int runningCount;
    private volatile int waitingCount;
    private volatile long kvTokens;
    private boolean stepping;
    private boolean progressed = true;
    private double stepMs;
    private double stepSlowdown;
    /** The timer that ends the step in progress, null between steps. */
    private ScheduledFuture<?> stepEnd;
    /** When the step in progress started: its metrics are the wall-clock time it took, as vLLM measures them. */
    private long stepStartNanos;

    BatchScheduler(EngineConfig config, EventExecutor executor, LongSupplier nanoTime, Supplier<Faults> faults,
                   String model) {
        this.config = config;
        this.executor = executor;
        this.nanoTime = nanoTime;
        this.faults = faults;
        this.prefixCache = new PrefixCache(config.prefixCacheEntries());
        this.meters = new EngineMeters(model, () -> runningCount, () -> waitingCount,
                () -> Math.min(1.0, (double) kvTokens / config.kvCacheTokens()), config.kvCacheTokens());
    }

    EngineMeters meters() {
        return meters;
    }

    /** Output tokens produced since start, over all requests. Any thread. */
    long generatedTokens() {
        return generatedTokens.get();
    }

    /** Tokens not produced at a step because their client could not take them (back-pressure). Any thread. */
    long pausedTokens() {
        return pausedTokens.get();
    }

    /** Queues a sequence. Any thread. */
    void submit(Sequence sequence) {
        executor.execute(() -> {
            enqueue(sequence);
            waitingCount = waiting.size();
            if (!stepping) {
                startStep();
            }
        });
    }

    /** Puts {@code s} behind every waiting sequence that is admitted before it. Scheduler thread. */
    private void enqueue(Sequence s) {
        if (!config.priorityScheduling() || waiting.isEmpty() || waiting.peekLast().priority <= s.priority) {
            waiting.addLast(s);
            return;
        }
        ArrayDeque<Sequence> later = new ArrayDeque<>();
        while (!waiting.isEmpty() && waiting.peekLast().priority > s.priority) {
            later.addFirst(waiting.pollLast());
        }
        waiting.addLast(s);
        waiting.addAll(later);
    }

    /** Drops a sequence whose client went away. Any thread. */
    void cancel(Sequence sequence) {
        executor.execute(() -> {
            if (!sequence.done && !sequence.cancelled) {
                sequence.cancelled = true;
                if (waiting.remove(sequence)) {
                    waitingCount = waiting.size();
                    sequence.done = true;
                    meters.finished("abort");
                } else {
                    stopPrefill(sequence);
                }
            }
        });
    }

    /**
     * Ends the step in progress early when {@code s}, gone, was being prefilled in it: the step loses the time of
     * {@code s}'s prefill, as a real engine stops prefilling an aborted request (vLLM prefills a long prompt in
     * chunks and aborts between them). Time already spent stays spent: the step ends no earlier than now.
     * Scheduler thread.
     */
    private void stopPrefill(Sequence s) {
        int tokens = s.promptTokens - s.cachedTokens;
        if (tokens <= 0 || stepEnd == null || !admittedThisStep.contains(s) || !stepEnd.cancel(false)) {
            return;
        }
        stepMs -= config.prefillMsPerToken() * tokens * stepSlowdown;
        for (Sequence admitted : admittedThisStep) {
            admitted.ttftMs = admitted.queuedMs + stepMs;
        }
        long left = stepStartNanos + Math.round(stepMs * 1e6) - nanoTime.getAsLong();
        stepEnd = executor.schedule(this::endStep, Math.max(1, left), TimeUnit.NANOSECONDS);
    }

    /** Starts the batch again after a stall ({@link Faults#stall()}) was lifted. Any thread. */
    void resume() {
        executor.execute(() -> {
            if (!stepping) {
                startStep();
            }
        });
    }

    private void startStep() {
        if (faults.get().stall()) {
            stepping = false; // the engine core stands still: its batch, queue and counters stay as they are
            return;
        }
        admittedThisStep.clear();
        int prefillTokens = 0;
        long kv = kvInUse();
        while (running.size() < config.maxSequences() && !waiting.isEmpty()) {
            Sequence s = waiting.peek();
            if (!s.cancelled && !running.isEmpty() && kv + s.promptTokens > config.kvCacheTokens()) {
                break; // its prompt does not fit in the KV cache left: it waits, and so does everyone behind it
            }
            waiting.poll();
            if (s.cancelled) {
                continue;
            }
            s.queuedMs = (nanoTime.getAsLong() - s.arrivalNanos) / 1e6;
            if (s.crashAfterTokens == 0) {
                s.done = true;
                meters.finished("abort");
                s.sink.crashed(s);
                continue;
            }
            s.cachedTokens = prefixCache.hit(s.conversationKey, s.promptTokens);
            meters.admitted(s.promptTokens, s.cachedTokens, s.queuedMs / 1e3);
            prefillTokens += s.promptTokens - s.cachedTokens;
            kv += s.promptTokens;
            running.add(s);
            admittedThisStep.add(s);
        }
        waitingCount = waiting.size();
        runningCount = running.size();
        kvTokens = kv;
        if (running.isEmpty()) {
            stepping = false;
            return;
        }
        double slowdown = faults.get().slowdown();
        stepSlowdown = slowdown;
        stepMs = (config.decodeBaseMs() + config.decodeMsPerSequence() * running.size()
                + config.prefillMsPerToken() * prefillTokens) * slowdown;
        for (Sequence s : admittedThisStep) {
            s.prefillMs = config.prefillMsPerToken() * (s.promptTokens - s.cachedTokens) * slowdown;
            s.ttftMs = s.queuedMs + stepMs;
        }
        stepping = true;
        stepStartNanos = nanoTime.getAsLong();
        // a step in which every sequence waited for its client is not repeated at once, even with a ~0 ms model
        long minDelayNanos = progressed || !admittedThisStep.isEmpty() ? 1 : 1_000_000;
        stepEnd = executor.schedule(this::endStep, Math.max(minDelayNanos, Math.round(stepMs * 1e6)),
                TimeUnit.NANOSECONDS);
    }

    private void endStep() {
        stepEnd = null;
        try {
            produceTokens();
        } catch (RuntimeException e) {
            // the chain of steps must survive: a lost step would stall every sequence for good
            LOG.log(Level.SEVERE, "engine " + config.engineId() + ": step failed", e);
        }
        startStep();
    }

    private void produceTokens() {
        // the step as the clock saw it: the model's time plus whatever the host added (a late timer, a busy CPU), which
        // a real engine's histograms include too; the timing a response reports stays the model's
        double tookMs = Math.max(stepMs, (nanoTime.getAsLong() - stepStartNanos) / 1e6);
        List<Sequence> finishedThisStep = null;
        progressed = false;
        for (Sequence s : running) {
            if (s.cancelled) {
                s.done = true;
                meters.finished("abort");
                finishedThisStep = add(finishedThisStep, s);
                continue;
            }
            boolean first = s.generated == 0;
            if (!first && !s.sink.writable()) {
                pausedTokens.incrementAndGet();
                continue; // back-pressure: this sequence waits for its client
            }
            int index = s.generated++;
            progressed = true;
            generatedTokens.incrementAndGet();
            if (first) {
                meters.firstToken((s.queuedMs + tookMs) / 1e3);
            } else {
                s.decodeMs += stepMs;
                meters.nextToken(tookMs / 1e3);
            }
            if (s.crashAfterTokens > 0 && s.generated >= s.crashAfterTokens && s.generated < s.maxTokens) {
                s.sink.token(s, index);
                s.done = true;
                meters.finished("abort");
                s.sink.crashed(s);
                finishedThisStep = add(finishedThisStep, s);
                continue;
            }
            s.sink.token(s, index);
            if (s.generated >= s.maxTokens) {
                s.done = true;
                String reason = s.maxTokensGiven ? "length" : "stop";
                prefixCache.store(s.conversationKey, s.promptTokens + s.generated);
                meters.finished(reason, s.generated);
                s.sink.finished(s, reason);
                finishedThisStep = add(finishedThisStep, s);
            }
        }
        if (finishedThisStep != null) {
            running.removeAll(finishedThisStep);
        }
    }

    /** The KV cache the running sequences hold, tokens: each its prompt and what it generated so far. */
    private long kvInUse() {
        long tokens = 0;
        for (Sequence s : running) {
            tokens += s.promptTokens + s.generated;
        }
        return tokens;
    }

    private static List<Sequence> add(List<Sequence> list, Sequence s) {
        List<Sequence> out = list == null ? new ArrayList<>() : list;
        out.add(s);
        return out;
    }
}
