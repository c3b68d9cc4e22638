package dev.sextant.server.gateway;

import dev.sextant.request.DataPlane;
import dev.sextant.request.DataPlaneStatus;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.util.concurrent.EventExecutor;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

/**
 * The gateway's Prometheus metrics ({@code sextant_gateway_*}): requests by class, engine and status; routing
 * decisions by reason; TTFT, TBT and end-to-end latency histograms; retries, failures not retried and why, sheds,
 * ejections, refused bodies; snapshot version, age and fallback mode; round-trip probes by outcome; the CPU time of
 * each event loop.
 */
final class GatewayMetrics {
    final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    final LongAdder oversized = new LongAdder();
    private final Counter retries;
    private final Counter requeues;
    // A function counter holds its state weakly: this field keeps the supplier (a lambda no one else holds) alive.
    private final java.util.function.LongSupplier refusedSnapshots;
    private final Counter ejections;
    private final java.util.Map<NotRetried, Counter> notRetried;

    GatewayMetrics(Supplier<DataPlane> plane, Supplier<Integer> inFlight, Supplier<Integer> http2Connections,
                   java.util.function.LongSupplier refusedSnapshots, Supplier<Integer> ownClasses) {
        this.refusedSnapshots = refusedSnapshots;
        io.micrometer.core.instrument.FunctionCounter.builder("sextant.gateway.snapshot.refusals", refusedSnapshots,
                        s -> s.getAsLong())
                .description("snapshots refused: older than the held one, or its version with other content")
                .register(registry);
        retries = Counter.builder("sextant.gateway.retries").description("retries on another engine or after back-off")
                .register(registry);
        requeues = Counter.builder("sextant.gateway.requeues")
                .description("retries after a connection to an engine could not be made (outside the retry budget)")
                .register(registry);
        ejections = Counter.builder("sextant.gateway.ejections").description("local outlier ejections of engines")
                .register(registry);
        java.util.EnumMap<NotRetried, Counter> whyNot = new java.util.EnumMap<>(NotRetried.class);
        for (NotRetried why : NotRetried.values()) {
            whyNot.put(why, Counter.builder("sextant.gateway.not.retried")
                    .description("failed attempts that were the request's last, by why they were not retried")
                    .tag("reason", why.label()).register(registry));
        }
        notRetried = whyNot;
        Gauge.builder("sextant.gateway.snapshot.version", () -> held(plane, s -> s.version()))
                .description("version of the snapshot held").register(registry);
        Gauge.builder("sextant.gateway.snapshot.age.seconds", () -> held(plane, s -> s.ageNanos() / 1e9))
                .description("time since the snapshot was swapped in or confirmed").register(registry);
        Gauge.builder("sextant.gateway.classes", ownClasses::get)
                .description("classes the held snapshot routes at this gateway's cluster (0: every model request refused)")
                .register(registry);
        Gauge.builder("sextant.gateway.fallback", () -> held(plane, s -> s.fallback() ? 1 : 0))
                .description("the mode: 1 while the fallback policy routes (snapshot too old), 0 while the snapshot's policy does").register(registry);
        Gauge.builder("sextant.gateway.in.flight", inFlight::get).description("requests being proxied").register(registry);
        Gauge.builder("sextant.gateway.http2.connections", http2Connections::get)
                .description("open HTTP/2 client connections").register(registry);
        Gauge.builder("sextant.gateway.ejected.engines", () -> held(plane, s -> s.ejectedEngines()))
                .description("engines ejected by outlier detection now").register(registry);
        Gauge.builder("sextant.gateway.retry.tokens", () -> held(plane, s -> s.retryTokens()))
                .description("retries the retry budget allows now").register(registry);
        FunctionCounter.builder("sextant.gateway.spills", plane, p -> p.get() == null ? 0 : p.get().status().spills())
                .description("requests sent away from their key's engine because it was over its expected load")
                .register(registry);
        FunctionCounter.builder("sextant.gateway.oversized.bodies", oversized, LongAdder::sum)
                .description("requests refused for a body over max_body_bytes (413)").register(registry);
        Map<String, Counter> byOutcome = new java.util.HashMap<>();
        for (String outcome : Prober.OUTCOMES) {
            byOutcome.put(outcome, Counter.builder("sextant.gateway.probes")
                    .description("round-trip probes of engines (GET /health) by how they ended").tag("outcome", outcome)
                    .register(registry));
        }
        probes = Map.copyOf(byOutcome);
        for (String label : DecisionReasons.labels()) { // all at 0 from the start: a rate has a series to start from
            decisionsByLabel.put(label, decisionCounter(label));
        }
        overhead = Timer.builder("sextant.gateway.overhead")
                .description("time the gateway itself adds to an answered request: from the request read to its"
                        + " write to the engine, plus from the answer's last part read from the engine to its write to"
                        + " the client")
                .serviceLevelObjectives(OVERHEAD_BUCKETS).register(registry);
    }

    /** {@code value} of the data plane's status, or null (NaN in the scrape) before the gateway's first snapshot. */
    private static Number held(Supplier<DataPlane> plane, java.util.function.Function<DataPlaneStatus, Number> value) {
        DataPlane p = plane.get();
        return p == null ? null : value.apply(p.status());
    }

    /** Fine buckets below a few ms: the proxy's own share of a request is a fraction of a millisecond. */
    private static final Duration[] OVERHEAD_BUCKETS = {Duration.ofNanos(50_000), Duration.ofNanos(100_000),
        Duration.ofNanos(200_000), Duration.ofNanos(300_000), Duration.ofNanos(500_000), Duration.ofNanos(750_000),
        Duration.ofMillis(1), Duration.ofMillis(2), Duration.ofMillis(3), Duration.ofMillis(5), Duration.ofMillis(10),
        Duration.ofMillis(25), Duration.ofMillis(100), Duration.ofSeconds(1)};

    private final Timer overhead;
    private final Map<String, Counter> probes;

    /** A round-trip probe ended so (one of {@link Prober#OUTCOMES}). */
    void probe(String outcome) {
        probes.get(outcome).increment();
    }

    void overhead(long nanos) {
        overhead.record(nanos, TimeUnit.NANOSECONDS);
    }

    private record RequestKey(String classId, String engine, int status) {
    }

    // meters looked up once per label set: a Micrometer builder per request costs more than the proxying
    private final Map<RequestKey, Counter> requests = new ConcurrentHashMap<>();
    private final Map<String, Counter> sheds = new ConcurrentHashMap<>();
    private final Map<String, Timer> ttft = new ConcurrentHashMap<>();
    private final Map<String, Timer> classTtft = new ConcurrentHashMap<>();
    private final Map<String, Timer> tbt = new ConcurrentHashMap<>();
    private final Map<String, Timer> latency = new ConcurrentHashMap<>();

    void request(String classId, String engine, int status) {
        requests.computeIfAbsent(new RequestKey(classId == null ? "none" : classId, engine == null ? "none" : engine,
                status), k -> Counter.builder("sextant.gateway.requests").description("requests by class, engine and status")
                .tag("class", k.classId()).tag("engine", k.engine()).tag("status", Integer.toString(k.status()))
                .register(registry)).increment();
    }

    // a decision's counter by its whole reason (a few dozen strings), so that counting one costs a lookup, not a
    // substring; by its label when a reason is first seen
    private final Map<String, Counter> decisions = new ConcurrentHashMap<>();
    private final Map<String, Counter> decisionsByLabel = new ConcurrentHashMap<>();

    /** The data plane made a decision (a first attempt, a retry or a refusal) for this reason. */
    void decision(String reason) {
        decisions.computeIfAbsent(reason, r -> decisionsByLabel.computeIfAbsent(DecisionReasons.label(r),
                this::decisionCounter)).increment();
    }

    private Counter decisionCounter(String label) {
        return Counter.builder("sextant.gateway.decisions")
                .description("routing decisions by why (x-sextant-reason up to its first comma)").tag("reason", label)
                .register(registry);
    }

    void shed(String classId) {
        shedCounter(classId == null ? "none" : classId).increment();
    }

    /**
     * Registers the shed counter of each class a snapshot routes here, at 0 until its first shed: a shed rate (and an
     * alert on it) has a series from the start, as the decisions' have. A class the next snapshots drop keeps its
     * counter, as a class that shed before does: the label's values are bounded by the topology's classes.
     */
    void routes(java.util.Collection<String> classIds) {
        classIds.forEach(this::shedCounter);
    }

    private Counter shedCounter(String classId) {
        return sheds.computeIfAbsent(classId, c -> Counter.builder("sextant.gateway.sheds")
                .description("requests refused by admission or the engine limit").tag("class", c).register(registry));
    }

    // per tenant: the tenants file bounds the label's values (and "(unknown)" for requests without a valid key)
    private final Map<String, Counter> tenantRequests = new ConcurrentHashMap<>();
    private final Map<String, Counter> tenantAdmitted = new ConcurrentHashMap<>();
    private final Map<String, Counter> tenantTokens = new ConcurrentHashMap<>();
    private final Map<String, Counter> tenantRefusals = new ConcurrentHashMap<>();
    private final Map<String, Timer> tenantTtft = new ConcurrentHashMap<>();

    /** The tenants file's reloads and refused reloads; nothing for an open gateway. */
    void tenants(dev.sextant.server.tenants.TenantsWatch watch) {
        if (watch == null) {
            return;
        }
        FunctionCounter.builder("sextant.gateway.tenants.reloads", watch, dev.sextant.server.tenants.TenantsWatch::reloads)
                .description("changes of the tenants file taken").register(registry);
        FunctionCounter.builder("sextant.gateway.tenants.reload.failures", watch,
                        dev.sextant.server.tenants.TenantsWatch::failures)
                .description("changes of the tenants file refused (invalid or unreadable); the tenants before stay")
                .register(registry);
    }

    /** A model request of {@code tenant} ({@link Tenancy#UNKNOWN} without a valid key). */
    void tenantRequest(String tenant) {
        tenantRequests.computeIfAbsent(tenant, t -> Counter.builder("sextant.gateway.tenant.requests")
                .description("model requests by tenant").tag("tenant", t).register(registry)).increment();
    }

    /** A request of {@code tenant} admitted and routed, counting {@code tokens} against its tokens per minute. */
    void tenantAdmitted(String tenant, long tokens) {
        tenantAdmitted.computeIfAbsent(tenant, t -> Counter.builder("sextant.gateway.tenant.admitted")
                .description("requests admitted and routed, by tenant").tag("tenant", t).register(registry)).increment();
        tenantTokens.computeIfAbsent(tenant, t -> Counter.builder("sextant.gateway.tenant.tokens")
                .description("tokens admitted by tenant: prompt estimated from the body, plus the output asked for")
                .tag("tenant", t).register(registry)).increment(tokens);
    }

    /** A request of {@code tenant} refused before an engine, for {@code reason}. */
    void tenantRefused(String tenant, String reason) {
        tenantRefusals.computeIfAbsent(tenant + "\u0000" + reason, k -> Counter.builder("sextant.gateway.tenant.refusals")
                .description("requests refused by tenant and reason: a key, a right, a limit, or the data plane")
                .tag("tenant", tenant).tag("reason", reason).register(registry)).increment();
    }

    /** Time to first token of a request of {@code tenant}. */
    void tenantTtft(String tenant, long nanos) {
        tenantTtft.computeIfAbsent(tenant, t -> timer("sextant.gateway.tenant.ttft",
                "time to first content chunk, by tenant", "tenant", t)).record(nanos, TimeUnit.NANOSECONDS);
    }

    void retry() {
        retries.increment();
    }

    void requeue() {
        requeues.increment();
    }

    /** A failed attempt was the request's last, for {@code why}. */
    void notRetried(NotRetried why) {
        notRetried.get(why).increment();
    }

    void ejection() {
        ejections.increment();
    }

    void ttft(String engine, long nanos) {
        ttft.computeIfAbsent(engine == null ? "none" : engine,
                e -> timer("sextant.gateway.ttft", "time to first content chunk", e)).record(nanos, TimeUnit.NANOSECONDS);
    }

    /**
     * Time to first token of a request of class {@code classId}: what a class's objective is stated in (a priority's
     * TTFT under overload), which the engines' histograms mix. Bounded by the topology's classes.
     */
    void classTtft(String classId, long nanos) {
        classTtft.computeIfAbsent(classId == null ? "none" : classId, k -> timer("sextant.gateway.class.ttft",
                "time to first content chunk, by class", "class", k)).record(nanos, TimeUnit.NANOSECONDS);
    }

    void tbt(String engine, long nanos) {
        tbt.computeIfAbsent(engine == null ? "none" : engine,
                e -> timer("sextant.gateway.tbt", "time between content chunks", e)).record(nanos, TimeUnit.NANOSECONDS);
    }

    void latency(String engine, long nanos) {
        latency.computeIfAbsent(engine == null ? "none" : engine,
                e -> timer("sextant.gateway.latency", "end-to-end request latency", e)).record(nanos, TimeUnit.NANOSECONDS);
    }

    private Timer timer(String name, String description, String engine) {
        return timer(name, description, "engine", engine == null ? "none" : engine);
    }

    private Timer timer(String name, String description, String tag, String value) {
        return Timer.builder(name).description(description).tag(tag, value)
                .publishPercentileHistogram().minimumExpectedValue(Duration.ofMillis(1))
                .maximumExpectedValue(Duration.ofSeconds(60)).register(registry);
    }

    // function counters hold their state weakly: these keep each loop's reader alive
    private final List<LoopCpu> loops = new ArrayList<>();

    /**
     * One counter per event loop, {@code sextant_gateway_event_loop_cpu_seconds_total{loop}}: the CPU time its thread
     * has used. Its rate is the share of a core the loop is busy, HAProxy's {@code Idle_pct} the other way round;
     * requests that arrive together wait on a loop for each other, and a loop near 1 adds that wait to the tail.
     * Not registered where the JVM cannot read a thread's CPU time.
     */
    void eventLoops(Iterable<EventExecutor> group) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        if (!mx.isThreadCpuTimeSupported() || !mx.isThreadCpuTimeEnabled()) {
            return;
        }
        int i = 0;
        for (EventExecutor e : group) {
            // a loop's thread exists once it has run a task; this one also tells which thread it is
            long thread = e.submit(() -> Thread.currentThread().getId()).syncUninterruptibly().getNow();
            LoopCpu cpu = new LoopCpu(mx, thread);
            loops.add(cpu);
            FunctionCounter.builder("sextant.gateway.event.loop.cpu", cpu, LoopCpu::seconds).baseUnit("seconds")
                    .description("CPU time used by the event loop's thread; its rate is the share of a core the loop"
                            + " is busy")
                    .tag("loop", Integer.toString(i++)).register(registry);
        }
    }

    /** A thread's CPU time, never less than last read (the JVM answers -1 once the thread has ended). */
    private static final class LoopCpu {
        private final ThreadMXBean mx;
        private final long thread;
        private long last;

        LoopCpu(ThreadMXBean mx, long thread) {
            this.mx = mx;
            this.thread = thread;
        }

        synchronized double seconds() {
            last = Math.max(last, mx.getThreadCpuTime(thread));
            return last / 1e9;
        }
    }

    String scrape() {
        return registry.scrape();
    }
}
