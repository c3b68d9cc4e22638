package dev.sextant.server.warmup;

import dev.sextant.config.TopologyLoader;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.server.gateway.Gateway;
import dev.sextant.server.gateway.GatewayConfig;
import dev.sextant.server.gateway.SnapshotSource;
import dev.sextant.snapshot.Snapshot;
import java.io.IOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A gateway's warm-up before it serves: the JIT compiler works for a new JVM's first minutes of traffic, and while it
 * does, requests wait behind it (docs/servers.md, "Warm-up"). This runs traffic first through a throwaway gateway of
 * the same settings in the same JVM, in front of a stand-in engine of its own ({@link StandInEngine}, which answers at
 * once), both on loopback ephemeral ports: the code compiled for them is the code the real gateway then runs. Nothing
 * of it reaches the real gateway's metrics, reports or engines, and the real gateway binds its port only after, so a
 * readiness check on it fails until the warm-up is over (in Kubernetes, no traffic reaches the pod meanwhile).
 *
 * <p>The load is closed-loop: a fixed number of clients, each sending its next request when its last is answered,
 * in turn a non-streaming chat completion, a streaming one, a completion and a chat completion with a
 * {@code prompt_cache_key} and a {@code user}; over HTTP/1.1, without TLS whatever the real gateway's listener has.
 */
public final class WarmUp {
    /** Clients sending at once: enough to keep the event loops busy, few enough that each is answered quickly. */
    static final int CLIENTS = 16;
    /** Failed requests after which the warm-up stops early: the gateway would not serve well either, and says why. */
    static final int MAX_FAILURES = 1000;
    /** Longest wait, after the load, for the compiler to finish what the load gave it. */
    static final Duration MAX_DRAIN = Duration.ofSeconds(60);
    private static final Duration DRAIN_POLL = Duration.ofMillis(250);
    /** Longest wait for one warm-up request's answer. */
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(10);
    private static final String CLUSTER = "warm-up";
    private static final String MODEL = "warm-up";

    /**
     * What the warm-up did.
     *
     * @param requests   requests answered (any status)
     * @param failures   requests that did not end in a 200 (a well gateway has none; they are logged, not fatal)
     * @param took       wall time, the two servers' start and stop included
     * @param compilerMs the JIT compilers' time during it, ms (-1 when the JVM does not say)
     * @param firstFailure what the first failed request got (a status and the start of its body, or the error), or
     *                     null
     * @param drain        how long, after the load, the compiler took to finish the methods it had queued (waited
     *                     for, within the warm-up's length and {@link #MAX_DRAIN})
     */
    public record Result(long requests, long failures, Duration took, long compilerMs, String firstFailure,
                         Duration drain) {
    }

    private WarmUp() {
    }

    /**
     * Runs the warm-up: the load for {@code length}, then closes what it started and waits (at most as long again, and
     * at most {@link #MAX_DRAIN}) until the JIT compiler has gone quiet, spending under a tenth of a thread.
     *
     * @param real    the settings of the gateway that will serve (its limits, timeouts, data plane options, HTTP/2
     *                and busy-polling settings are copied; its address, control plane, TLS, tokens and access log are
     *                not)
     * @param threads its event loop threads
     * @param length  how long, &gt; 0
     */
    public static Result run(GatewayConfig real, int threads, Duration length)
            throws IOException, InterruptedException {
        if (length == null || length.isNegative() || length.isZero()) {
            throw new IllegalArgumentException("warm_up: " + length + " (expected: > 0)");
        }
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        boolean timed = jit != null && jit.isCompilationTimeMonitoringSupported();
        long jitBefore = timed ? jit.getTotalCompilationTime() : 0;
        long start = System.nanoTime();
        Load load;
        try (StandInEngine engine = StandInEngine.start();
             Gateway gw = Gateway.start(settings(real), SnapshotSource.fixed(snapshot(engine.port())), threads)) {
            // the length is the load's: starting the two servers is not counted in it
            load = new Load(URI.create("http://127.0.0.1:" + gw.port()), System.nanoTime() + length.toNanos());
            load.run();
        }
        // the load leaves the compiler a queue of methods to compile: let it finish them before the first real request
        long drainStart = System.nanoTime();
        if (timed) {
            long deadline = drainStart + Math.min(length.toNanos(), MAX_DRAIN.toNanos());
            long last = jit.getTotalCompilationTime();
            while (System.nanoTime() < deadline) {
                Thread.sleep(DRAIN_POLL.toMillis());
                long now = jit.getTotalCompilationTime();
                if (now - last < DRAIN_POLL.toMillis() / 10) { // under a tenth of one compiler thread's time
                    break;
                }
                last = now;
            }
        }
        long end = System.nanoTime();
        return new Result(load.requests.get(), load.failures.get(), Duration.ofNanos(end - start),
                timed ? jit.getTotalCompilationTime() - jitBefore : -1, load.firstFailure.get(),
                Duration.ofNanos(end - drainStart));
    }

    /** The throwaway gateway's settings: the real one's request handling, on loopback, reporting to no one. */
    static GatewayConfig settings(GatewayConfig real) {
        return GatewayConfig.defaults(CLUSTER).withAccessLog(false).withMaxBodyBytes(real.maxBodyBytes())
                .withTimeouts(real.connectTimeout(), real.firstTokenTimeout(), real.idleTimeout(), real.totalTimeout())
                .withEngineKeepAlive(real.engineKeepAlive())
                .withOptions(real.options()).withClientLimits(real.clientLimits())
                .withHttp2(real.http2(), real.maxConcurrentStreams()).withBusyPoll(real.busyPoll());
    }

    /** A snapshot routing gateway cluster {@code warm-up}'s one class, of model {@code warm-up}, to the one engine. */
    static Snapshot snapshot(int enginePort) {
        String yaml = "gateway_clusters: [{id: " + CLUSTER + ", region: r}]\n"
                + "engine_clusters: [{id: c, region: r}]\n"
                + "network_rtt_ms: {" + CLUSTER + ": {c: 1}}\n"
                + "models: [{id: " + MODEL + ", output_tokens: 4}]\n"
                + "engines:\n"
                + "  - {id: e, cluster: c, endpoint: 'http://127.0.0.1:" + enginePort + "', models: [" + MODEL + "],"
                + " capacity_rps: 100000, profile: {ttft_ms: 1, tbt_ms: 1}}\n"
                + "classes: [{id: chat, model: " + MODEL + "}]\n"
                + "demand_rps: {" + CLUSTER + ": {chat: 1000}}\n";
        try {
            return Policies.optimal().solve(TopologyLoader.load(yaml, "warm-up.yaml"), SolveOptions.defaults());
        } catch (Exception e) {
            throw new IllegalStateException("warm-up: its own topology did not solve: " + e.getMessage(), e);
        }
    }

    /** The closed-loop clients, until the deadline. */
    private static final class Load {
        private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(2)).build();
        private final URI base;
        private final long deadline;
        final AtomicLong requests = new AtomicLong();
        final AtomicLong failures = new AtomicLong();
        private final AtomicLong sequence = new AtomicLong();
        final AtomicReference<String> firstFailure = new AtomicReference<>();

        Load(URI base, long deadlineNanos) {
            this.base = base;
            this.deadline = deadlineNanos;
        }

        void run() throws InterruptedException {
            CountDownLatch done = new CountDownLatch(CLIENTS);
            for (int i = 0; i < CLIENTS; i++) {
                send(done, true);
            }
            // each request ends within its timeout, so this is a guard, never the rule: a warm-up does not hang a start
            done.await(Math.max(0, deadline - System.nanoTime()) + REQUEST_TIMEOUT.toNanos() * 2, TimeUnit.NANOSECONDS);
        }

        /**
         * One client's next request, or its end at the deadline; each answer sends the next. A client's first request
         * is sent whatever the time, so that every kind of request is warmed however slow the machine was to start.
         */
        private void send(CountDownLatch done, boolean first) {
            if (!first && (System.nanoTime() >= deadline || failures.get() >= MAX_FAILURES)) {
                done.countDown();
                return;
            }
            try {
                http.sendAsync(request(sequence.getAndIncrement()), HttpResponse.BodyHandlers.ofString())
                        .whenCompleteAsync((r, e) -> { // never on the sending thread: no recursion
                            requests.incrementAndGet();
                            if (e != null || r.statusCode() != 200) {
                                failed(e != null ? String.valueOf(e) : r.statusCode() + " "
                                        + r.body().substring(0, Math.min(200, r.body().length())));
                            }
                            send(done, false);
                        });
            } catch (RuntimeException e) { // the client refused to send: this client stops
                failed(String.valueOf(e));
                done.countDown();
            }
        }

        private void failed(String what) {
            failures.incrementAndGet();
            firstFailure.compareAndSet(null, what);
        }

        private HttpRequest request(long n) {
            String words = "warm up " + n % 97 + " the request path of a gateway";
            String path = "/v1/chat/completions";
            String body = switch ((int) (n % 4)) {
                case 0 -> "{\"model\":\"" + MODEL + "\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\","
                        + "\"content\":\"" + words + "\"}]}";
                case 1 -> "{\"model\":\"" + MODEL + "\",\"stream\":true,\"max_tokens\":4,\"messages\":[{\"role\":"
                        + "\"user\",\"content\":\"" + words + "\"}]}";
                case 2 -> {
                    path = "/v1/completions";
                    yield "{\"model\":\"" + MODEL + "\",\"max_tokens\":2,\"prompt\":\"" + words + "\"}";
                }
                default -> "{\"model\":\"" + MODEL + "\",\"max_tokens\":2,\"prompt_cache_key\":\"c" + n % 31
                        + "\",\"user\":\"u" + n % 7 + "\",\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
                        + "{\"role\":\"user\",\"content\":\"" + words + "\"}]}";
            };
            return HttpRequest.newBuilder(base.resolve(path)).timeout(REQUEST_TIMEOUT)
                    .header("content-type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build();
        }
    }
}
