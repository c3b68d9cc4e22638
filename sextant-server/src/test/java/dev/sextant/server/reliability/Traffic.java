package dev.sextant.server.reliability;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.internal.Http;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntConsumer;

/**
 * A small concurrent client for the fault cases: sends chat completions to a gateway, streaming and not, a third of
 * them restricted to eu-west ({@code x-sextant-residency}), and files each answer in a {@link Tally}. Every request
 * has a hard deadline (the gateway's total timeout plus a margin): a request that has not ended by then counts as
 * lost, so a hang fails the case instead of stalling the build.
 */
final class Traffic implements AutoCloseable {
    private final int gatewayPort;
    private final Duration deadline;
    private final ExecutorService executor = Executors.newFixedThreadPool(2, r -> {
        Thread t = new Thread(r, "fault-client");
        t.setDaemon(true);
        return t;
    });
    private final HttpClient http;
    private int maxTokens = 6;

    /**
     * @param gatewayPort the gateway's port on loopback
     * @param deadline    the longest any request may take before it counts as lost (hung)
     */
    Traffic(int gatewayPort, Duration deadline) {
        this.gatewayPort = gatewayPort;
        this.deadline = deadline;
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).executor(executor)
                .connectTimeout(Duration.ofSeconds(5)).build();
    }

    /** Output tokens per request (default 6). */
    Traffic maxTokens(int tokens) {
        this.maxTokens = tokens;
        return this;
    }

    /** Whether request {@code i} streams: every other one. */
    static boolean streams(int i) {
        return i % 2 == 0;
    }

    /** Whether request {@code i} is restricted to eu-west: every third one. */
    static boolean euOnly(int i) {
        return i % 3 == 0;
    }

    /**
     * Sends {@code n} requests, at most {@code concurrency} at a time, and waits until each has ended or passed its
     * deadline. {@code before} runs before request i is sent (to switch a fault on mid-traffic).
     */
    void run(Tally tally, int n, int concurrency, IntConsumer before) throws InterruptedException {
        run(tally, n, concurrency, before, Traffic::euOnly);
    }

    /** As {@link #run(Tally, int, int, IntConsumer)}, with {@code euOnly} choosing the eu-west requests. */
    void run(Tally tally, int n, int concurrency, IntConsumer before, java.util.function.IntPredicate euOnly)
            throws InterruptedException {
        Semaphore slots = new Semaphore(concurrency);
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            before.accept(i);
            slots.acquire();
            String id = tally.sent(); // the tally's own count: a tally run more than once still gets new ids
            all.add(one(tally, i, id, streams(i), euOnly.test(i)).whenComplete((v, e) -> slots.release()));
        }
        try {
            CompletableFuture.allOf(all.toArray(new CompletableFuture[0]))
                    .get(deadline.toMillis() * 2 + 5000, TimeUnit.MILLISECONDS);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("the client itself failed: " + e, e); // one() never completes exceptionally
        }
    }

    private CompletableFuture<Void> one(Tally tally, int i, String requestId, boolean stream, boolean eu) {
        String body = "{\"model\":\"m\",\"stream\":" + stream + ",\"max_tokens\":" + maxTokens
                + ",\"prompt_cache_key\":\"" + tally.name + "-" + (i % 40) + "\""
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"hello " + i + "\"}]}";
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gatewayPort
                        + "/v1/chat/completions"))
                .timeout(deadline).header("content-type", "application/json")
                .header("x-request-id", requestId)
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (eu) {
            b.header("x-sextant-residency", "eu-west");
        }
        HttpRequest request = b.build();
        return send(request, true)
                .orTimeout(deadline.toMillis(), TimeUnit.MILLISECONDS)
                .handle((r, e) -> {
                    if (e != null) {
                        Throwable c = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
                        tally.lost("request " + i + (c instanceof TimeoutException
                                || c instanceof java.net.http.HttpTimeoutException ? " hung past " + deadline.toMillis()
                                + " ms" : " cut: " + c));
                    } else {
                        file(tally, i, stream, eu, r);
                    }
                    return null;
                });
    }

    /**
     * Sends once more when the client's pooled connection was one the gateway had just closed (it closes after
     * ending a stream with an error event): the JDK client can hand out such a connection before it has seen the
     * close and then fails with no bytes received, before the gateway read anything.
     */
    private CompletableFuture<HttpResponse<String>> send(HttpRequest request, boolean again) {
        return http.sendAsync(request, HttpResponse.BodyHandlers.ofString()).handle((r, e) -> {
            if (e == null) {
                return CompletableFuture.completedFuture(r);
            }
            Throwable c = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
            if (again && c instanceof IOException && String.valueOf(c.getMessage()).contains("received no bytes")) {
                return send(request, false);
            }
            return CompletableFuture.<HttpResponse<String>>failedFuture(c);
        }).thenCompose(f -> f);
    }

    private static void file(Tally tally, int i, boolean stream, boolean eu, HttpResponse<String> r) {
        int attempts = r.headers().firstValue("x-sextant-attempts").map(Integer::parseInt).orElse(0);
        String engine = r.headers().firstValue("x-sextant-engine").orElse(null);
        if (engine != null) {
            if (eu && !engine.startsWith("eu-")) {
                tally.outsideAllowedSet("request " + i + " (eu-west only) answered by " + engine);
            }
            if (engine.startsWith("x-")) {
                tally.outsideAllowedSet("request " + i + " (model m) answered by " + engine + ", which serves another model");
            }
            String answeredBy = r.headers().firstValue("x-engine-id").orElse(engine);
            if (!answeredBy.equals(engine)) {
                tally.outsideAllowedSet("request " + i + ": gateway says " + engine + ", the answer came from " + answeredBy);
            }
        }
        int status = r.statusCode();
        String ct = r.headers().firstValue("content-type").orElse("");
        try {
            if (status == 200 && ct.startsWith("text/event-stream")) {
                if (fileStream(tally, i, r.body(), attempts) && engine != null) {
                    tally.servedBy(engine);
                }
            } else if (status == 200) {
                JsonNode choice = Http.JSON.readTree(r.body()).path("choices").path(0);
                if (!stream && choice.path("finish_reason").isTextual()
                        && !choice.path("message").path("content").asText().isEmpty()) {
                    tally.completed(attempts);
                    if (engine != null) {
                        tally.servedBy(engine);
                    }
                } else {
                    tally.lost("request " + i + ": 200 without a whole completion: " + abbreviate(r.body()));
                }
            } else if (isError(Http.JSON.readTree(r.body()))) {
                tally.failed(Integer.toString(status), attempts,
                        Http.JSON.readTree(r.body()).path("error").path("message").asText());
            } else {
                tally.lost("request " + i + ": " + status + " without an OpenAI error body: " + abbreviate(r.body()));
            }
        } catch (IOException e) {
            tally.lost("request " + i + ": " + status + " with a body that is not JSON: " + abbreviate(r.body()));
        }
    }

    /** Files a 200 event stream; true when it was complete. */
    private static boolean fileStream(Tally tally, int i, String body, int attempts) throws IOException {
        List<String> data = new ArrayList<>();
        for (String line : body.split("\n")) {
            if (line.startsWith("data:")) {
                data.add(line.substring(5).strip());
            }
        }
        if (data.isEmpty()) {
            tally.lost("request " + i + ": an event stream without events");
            return false;
        }
        String last = data.get(data.size() - 1);
        boolean chunks = data.stream().anyMatch(d -> d.contains("chat.completion.chunk"));
        boolean errors = data.stream().anyMatch(d -> d.startsWith("{\"error\""));
        if (last.equals("[DONE]") && chunks && !errors) {
            tally.completed(attempts);
            return true;
        } else if (!last.equals("[DONE]") && isError(Http.JSON.readTree(last))) {
            tally.failed("200+sse-error", attempts, Http.JSON.readTree(last).path("error").path("message").asText());
        } else {
            tally.lost("request " + i + ": a stream ending with neither [DONE] nor an error event: …"
                    + abbreviate(body.substring(Math.max(0, body.length() - 200))));
        }
        return false;
    }

    private static boolean isError(JsonNode root) {
        JsonNode e = root.path("error");
        return e.isObject() && !e.path("message").asText().isEmpty() && !e.path("code").asText().isEmpty()
                && !e.path("type").asText().isEmpty();
    }

    private static String abbreviate(String s) {
        return s.length() > 300 ? s.substring(0, 300) + "…" : s;
    }

    /** One request, outside any tally: its status and body (for waiting on a recovery). */
    HttpResponse<String> probe(boolean eu) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gatewayPort
                        + "/v1/chat/completions"))
                .timeout(deadline).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"m\",\"max_tokens\":1,"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"probe\"}]}"));
        if (eu) {
            b.header("x-sextant-residency", "eu-west");
        }
        try {
            return send(b.build(), true).get(deadline.toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
        } catch (TimeoutException e) {
            throw new IOException("probe hung past " + deadline.toMillis() + " ms", e);
        }
    }

    @Override
    public void close() {
        executor.shutdownNow();
    }
}
