package dev.sextant.server.gateway;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiFunction;

/**
 * Closed-loop clients of a gateway: each of {@code workers} threads sends a request, waits for its answer and sends
 * the next, until {@link #close}. The load follows the answers' latency (workers / latency requests per second), so a
 * test sets a load by its number of workers, without a clock. Counts answers by status and by the engine that served
 * them ({@code x-sextant-engine}).
 */
final class ClosedLoop implements AutoCloseable {
    /** What to send: worker index and that worker's request count → the chat request's body. */
    private final BiFunction<Integer, Long, String> body;
    private final int port;
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final List<Thread> threads = new ArrayList<>();
    final Map<Integer, LongAdder> byStatus = new ConcurrentHashMap<>();
    final Map<String, LongAdder> byEngine = new ConcurrentHashMap<>();
    /** Requests that got no HTTP answer at all (an exception in the client). */
    final LongAdder unanswered = new LongAdder();

    ClosedLoop(String name, int port, int workers, BiFunction<Integer, Long, String> body) {
        this.port = port;
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
        for (long n = 0; running.get(); n++) {
            try {
                HttpResponse<String> r = Fleet.post(port, "/v1/chat/completions", body.apply(worker, n));
                byStatus.computeIfAbsent(r.statusCode(), s -> new LongAdder()).increment();
                r.headers().firstValue("x-sextant-engine")
                        .ifPresent(e -> byEngine.computeIfAbsent(e, x -> new LongAdder()).increment());
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

    /** Answers with {@code status} so far. */
    long answered(int status) {
        LongAdder a = byStatus.get(status);
        return a == null ? 0 : a.sum();
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
