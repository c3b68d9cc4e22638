package dev.sextant.server.gateway;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiFunction;

/**
 * Closed-loop clients of a gateway: each of {@code workers} threads sends a request, waits for its answer and sends
 * the next, until it has sent its share or {@link #close}. The load follows the answers' latency (workers / latency requests per second), so a
 * test sets a load by its number of workers, without a clock. Counts answers by status and by the engine that served
 * them ({@code x-sextant-engine}).
 */
final class ClosedLoop implements AutoCloseable {
    /**
     * HTTP/1.1, a connection per worker, as the OpenAI SDKs' clients (the JDK client's default would upgrade to one
     * HTTP/2 connection for every worker and carry them all on one of the gateway's event loops).
     */
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    /** Sees each answer: worker index, that worker's request count, HTTP status, the engine that served it or null. */
    interface Observer {
        void answered(int worker, long n, int status, String engine);
    }

    /** What to send: worker index and that worker's request count → the chat request's body. */
    private final BiFunction<Integer, Long, String> body;
    private final URI uri;
    private final long perWorker;
    private final Observer observer;
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final List<Thread> threads = new ArrayList<>();
    final Map<Integer, LongAdder> byStatus = new ConcurrentHashMap<>();
    final Map<String, LongAdder> byEngine = new ConcurrentHashMap<>();
    /** Requests that got no HTTP answer at all (an exception in the client). */
    final LongAdder unanswered = new LongAdder();

    /** Workers that run until {@link #close}. */
    ClosedLoop(String name, int port, int workers, BiFunction<Integer, Long, String> body) {
        this(name, port, workers, Long.MAX_VALUE, body, (w, n, status, engine) -> { });
    }

    /** Workers that send {@code perWorker} requests each (or fewer, when closed first). */
    ClosedLoop(String name, int port, int workers, long perWorker, BiFunction<Integer, Long, String> body,
               Observer observer) {
        this.perWorker = perWorker;
        this.observer = observer;
        this.uri = URI.create("http://127.0.0.1:" + port + "/v1/chat/completions");
        this.body = body;
        for (int w = 0; w < workers; w++) {
            int worker = w;
            Thread t = new Thread(() -> loop(worker), name + "-" + w);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
    }

    private void loop(int worker) {
        for (long n = 0; n < perWorker && running.get(); n++) {
            try {
                HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(20))
                        .header("content-type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body.apply(worker, n))).build(),
                        HttpResponse.BodyHandlers.ofString());
                byStatus.computeIfAbsent(r.statusCode(), s -> new LongAdder()).increment();
                String engine = r.headers().firstValue("x-sextant-engine").orElse(null);
                if (engine != null) {
                    byEngine.computeIfAbsent(engine, x -> new LongAdder()).increment();
                }
                observer.answered(worker, n, r.statusCode(), engine);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (Exception e) {
                unanswered.increment();
            }
        }
    }


    /** Answers served by {@code engine} so far. */
    long servedBy(String engine) {
        LongAdder a = byEngine.get(engine);
        return a == null ? 0 : a.sum();
    }

    /** Answers of any status so far. */
    long answered() {
        return byStatus.values().stream().mapToLong(LongAdder::sum).sum();
    }

    /** Answers with {@code status} so far. */
    long answered(int status) {
        LongAdder a = byStatus.get(status);
        return a == null ? 0 : a.sum();
    }

    /** Waits until every worker has sent its share (or was closed); false if {@code timeout} passed first. */
    boolean awaitDone(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Thread t : threads) {
            t.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
            if (t.isAlive()) {
                return false;
            }
        }
        return true;
    }

    /** Stops the workers and waits for their last answers. */
    @Override
    public void close() throws InterruptedException {
        running.set(false);
        for (Thread t : threads) {
            t.join(30_000);
        }
    }

    @Override
    public String toString() {
        return "status " + byStatus + ", engines " + byEngine + ", unanswered " + unanswered;
    }
}
