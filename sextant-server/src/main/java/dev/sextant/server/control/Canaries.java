package dev.sextant.server.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sextant.control.Canary;
import dev.sextant.control.CanaryResult;
import dev.sextant.request.Ticker;
import dev.sextant.server.auth.BearerToken;
import dev.sextant.server.internal.BoundedBody;
import dev.sextant.server.internal.Http;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.HashSet;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Sends the control loop's {@link Canary} requests and reports how each went. A canary is a short streamed
 * completion, {@code POST <endpoint>/v1/completions} with {@code {"model", "prompt": "ping", "max_tokens", "stream":
 * true}}: the legacy completions endpoint because every OpenAI-compatible engine serves it for every model (vLLM,
 * SGLang and TGI answer it whether or not the model has a chat template, which chat completions need).
 *
 * <p>Measured on the control plane's {@link Ticker}: TTFT from the request handed to the HTTP client to the first
 * event that carries text (the emulator's and vLLM's first event is empty), and TBT the mean gap between the text
 * events after it. The time includes the network between the control plane and the engine, and a new connection's
 * set-up when the client has none pooled. A canary succeeds when the engine answers 200 and its event stream ends
 * with {@code data: [DONE]}; a status, a connection failure, a stream cut short or no complete answer within the
 * timeout is a failure with its reason.
 *
 * <p>Never on the policy thread: requests go out on the HTTP client's own threads, at most {@code maxInFlight} at a
 * time; the others wait in a queue that holds at most one canary per engine (an engine whose canary is queued or in
 * flight gets no second one), so that a fleet of unreachable engines cannot pile canaries up.
 */
final class Canaries implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(Canaries.class.getName());
    /** The most of a canary's answer read: its few tokens' events are a few kilobytes. */
    static final long MAX_ANSWER_BYTES = 1 << 20;

    private record Job(Canary canary, URI uri) {
    }

    private final HttpClient client;
    private final Ticker ticker;
    private final Duration timeout;
    private final int maxInFlight;
    private final BearerToken engineToken;
    private final Consumer<CanaryResult> results;
    private final Counter ok;
    private final Counter failed;
    private final Counter timedOut;
    private final ArrayDeque<Job> queue = new ArrayDeque<>();
    /** Engines with a canary queued or in flight. */
    private final Set<String> pending = new HashSet<>();
    private int inFlight;
    private volatile boolean closed;

    /**
     * @param client      the HTTP client (TLS as for scrapes)
     * @param ticker      the control loop's ticker: a result's time and the measurements
     * @param timeout     the longest a canary may take, request to {@code [DONE]}, &gt; 0
     * @param maxInFlight canaries in flight at most, ≥ 1
     * @param engineToken sent as {@code Authorization: Bearer …} with every canary (engines behind an API key), or
     *                    null for none
     * @param results     where each result goes (called on an HTTP client thread)
     * @param registry    where {@code sextant_control_canaries_total{outcome}} is counted
     */
    Canaries(HttpClient client, Ticker ticker, Duration timeout, int maxInFlight, BearerToken engineToken,
             Consumer<CanaryResult> results, MeterRegistry registry) {
        if (maxInFlight < 1) {
            throw new IllegalArgumentException("max_in_flight: " + maxInFlight + " (expected: >= 1)");
        }
        Http.positive("timeout", timeout);
        this.client = client;
        this.ticker = ticker;
        this.timeout = timeout;
        this.maxInFlight = maxInFlight;
        this.engineToken = engineToken;
        this.results = results;
        this.ok = counter(registry, "ok");
        this.failed = counter(registry, "failed");
        this.timedOut = counter(registry, "timeout");
    }

    private static Counter counter(MeterRegistry registry, String outcome) {
        return Counter.builder("sextant.control.canaries").tag("outcome", outcome)
                .description("canary requests the control loop asked for, by how they ended: ok (a complete stream), "
                        + "failed (a status, a connection failure or a stream cut short), timeout")
                .register(registry);
    }

    /** Sends {@code canary} to the engine at {@code endpoint} (its base URL), soon; never blocks. */
    void send(Canary canary, String endpoint) {
        URI uri;
        try {
            uri = URI.create(endpoint.replaceAll("/+$", "") + "/v1/completions");
        } catch (IllegalArgumentException e) {
            report(canary, CanaryResult.failed(canary.engine(), ticker.nanos(), "bad endpoint: " + e.getMessage()));
            return;
        }
        synchronized (this) {
            if (closed || !pending.add(canary.engine())) {
                return; // one at a time per engine: the loop asks again after its canary interval
            }
            queue.addLast(new Job(canary, uri));
        }
        startWhatFits();
    }

    /** Canaries waiting for a place (tests). */
    synchronized int queued() {
        return queue.size();
    }

    private void startWhatFits() {
        while (true) {
            Job job;
            synchronized (this) {
                if (closed || inFlight >= maxInFlight || queue.isEmpty()) {
                    return;
                }
                job = queue.pollFirst();
                inFlight++;
            }
            start(job);
        }
    }

    private void start(Job job) {
        Canary c = job.canary();
        ObjectNode body = Http.JSON.createObjectNode().put("model", c.model()).put("prompt", "ping")
                .put("max_tokens", c.maxTokens()).put("stream", true);
        HttpRequest.Builder b = HttpRequest.newBuilder(job.uri()).timeout(timeout)
                .header("content-type", "application/json").header("accept", "text/event-stream")
                .POST(HttpRequest.BodyPublishers.ofString(body.toString()));
        if (engineToken != null) { // read now: a token file rotated since the start is sent as it is today
            b.header("authorization", "Bearer " + engineToken.current());
        }
        HttpRequest request = b.build();
        Events events = new Events();
        long start = ticker.nanos();
        CompletableFuture<HttpResponse<Void>> call;
        try {
            // a canary asks for a few tokens: an answer beyond MAX_ANSWER_BYTES (an engine sending a line that never
            // ends, which the line reader would hold whole) is not read further
            call = client.sendAsync(request, info -> BoundedBody.limited(info.statusCode() == 200
                    ? HttpResponse.BodySubscribers.fromLineSubscriber(events)
                    : HttpResponse.BodySubscribers.discarding(), MAX_ANSWER_BYTES));
        } catch (RuntimeException e) {
            finish(job, CanaryResult.failed(c.engine(), ticker.nanos(), describe(e)));
            return;
        }
        // the request's own timeout ends at the response head; this one bounds the stream as well (on a future of
        // its own, so that cancelling the call on a timeout still reaches the exchange)
        CompletableFuture<HttpResponse<Void>> bounded = new CompletableFuture<>();
        call.whenComplete((r, err) -> {
            if (err != null) {
                bounded.completeExceptionally(err);
            } else {
                bounded.complete(r);
            }
        });
        bounded.orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS).whenComplete((r, err) -> {
            CanaryResult result;
            if (err != null) {
                events.cancel();
                call.cancel(true);
                result = CanaryResult.failed(c.engine(), ticker.nanos(), describe(err));
            } else {
                result = events.result(c.engine(), ticker.nanos(), start, r.statusCode());
            }
            finish(job, result);
        });
    }

    private void finish(Job job, CanaryResult result) {
        synchronized (this) {
            inFlight--;
            pending.remove(job.canary().engine());
        }
        report(job.canary(), result);
        startWhatFits();
    }

    private void report(Canary c, CanaryResult result) {
        if (result.ok()) {
            ok.increment();
        } else if (result.failure().startsWith("no complete answer")) {
            timedOut.increment();
        } else {
            failed.increment();
        }
        if (closed) {
            return;
        }
        LOG.fine(() -> "canary of " + c.engine() + " (" + c.why() + "): " + (result.ok()
                ? String.format(Locale.ROOT, "ok, TTFT %.1f ms, TBT %.1f ms", result.ttftMs(), result.tbtMs())
                : "failed: " + result.failure()));
        try {
            results.accept(result);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "canary result of " + c.engine() + " not taken", e);
        }
    }

    private String describe(Throwable err) {
        Throwable t = err instanceof CompletionException && err.getCause() != null ? err.getCause() : err;
        if (t instanceof TimeoutException || t instanceof HttpTimeoutException) {
            return "no complete answer within " + timeout.toMillis() + " ms";
        }
        String m = t.getMessage();
        return t.getClass().getSimpleName() + (m == null || m.isBlank() ? "" : ": " + m);
    }

    /** Stops sending; canaries in flight end without reaching the loop. */
    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            queue.clear();
        }
    }

    /** The event stream of one canary, line by line as it arrives. */
    private final class Events implements Flow.Subscriber<String> {
        private volatile Flow.Subscription subscription;
        private volatile boolean cancelled;
        private long first = Long.MIN_VALUE;
        private long last;
        private int tokens;
        private boolean done;

        @Override
        public void onSubscribe(Flow.Subscription s) {
            subscription = s;
            if (cancelled) {
                s.cancel();
            } else {
                s.request(Long.MAX_VALUE);
            }
        }

        @Override
        public synchronized void onNext(String line) {
            if (!line.startsWith("data:")) {
                return;
            }
            String data = line.substring(5).strip();
            if (data.equals("[DONE]")) {
                done = true;
            } else if (!data.isEmpty() && carriesText(data)) {
                long now = ticker.nanos();
                if (tokens == 0) {
                    first = now;
                }
                last = now;
                tokens++;
            }
        }

        @Override
        public void onError(Throwable throwable) {
            // the response future fails with it
        }

        @Override
        public void onComplete() {
        }

        void cancel() {
            cancelled = true;
            Flow.Subscription s = subscription;
            if (s != null) {
                s.cancel();
            }
        }

        synchronized CanaryResult result(String engine, long at, long start, int status) {
            if (status != 200) {
                return CanaryResult.failed(engine, at, "HTTP " + status);
            }
            if (!done) {
                return CanaryResult.failed(engine, at, "the event stream ended without data: [DONE] after " + tokens
                        + " tokens");
            }
            if (tokens == 0) {
                return CanaryResult.failed(engine, at, "the event stream carried no token");
            }
            double ttftMs = (first - start) / 1e6;
            double tbtMs = tokens >= 2 ? (last - first) / 1e6 / (tokens - 1) : Double.NaN;
            return CanaryResult.ok(engine, at, ttftMs, tbtMs);
        }
    }

    /** True when an event's first choice carries text: {@code text} (completions) or {@code delta.content} (chat). */
    private static boolean carriesText(String data) {
        try {
            JsonNode choice = Http.JSON.readTree(data).path("choices").path(0);
            String text = choice.has("text") ? choice.path("text").asText("") : choice.path("delta").path("content")
                    .asText("");
            return !text.isEmpty();
        } catch (java.io.IOException | RuntimeException e) {
            return false;
        }
    }
}
