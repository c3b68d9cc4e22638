package dev.sextant.server.engine;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.DoubleSupplier;

/**
 * The emulator's {@code /metrics}, under vLLM's names and bucket bounds so that a scraper written for vLLM
 * reads it unchanged. Micrometer's Prometheus registry keeps the colon of {@code vllm:}; summaries are used
 * instead of timers so the names carry no added unit suffix.
 */
final class EngineMeters {
    private static final double[] TTFT_BOUNDS = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
        1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
    private static final double[] ITL_BOUNDS = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
        2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};

    /** vLLM's bounds for tokens per request (its 1-2-5 series). */
    private static final double[] TOKEN_BOUNDS = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000,
        20_000, 50_000, 100_000};

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final Tags tags;
    private final DistributionSummary ttft;
    private final DistributionSummary itl;
    private final DistributionSummary queue;
    private final DistributionSummary outputLengths;
    private final Counter promptTokens;
    private final Counter generationTokens;
    private final Counter prefixQueries;
    private final Counter prefixHits;
    private final ConcurrentHashMap<String, Counter> success = new ConcurrentHashMap<>();

    EngineMeters(String model, DoubleSupplier running, DoubleSupplier waiting, DoubleSupplier kvUsage) {
        tags = Tags.of("engine", "0", "model_name", model);
        gauge("vllm:num_requests_running", "Number of requests in model execution batches.", running);
        gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", waiting);
        gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", kvUsage);
        ttft = DistributionSummary.builder("vllm:time_to_first_token_seconds")
                .description("Histogram of time to first token in seconds.")
                .tags(tags).serviceLevelObjectives(TTFT_BOUNDS).register(registry);
        queue = DistributionSummary.builder("vllm:request_queue_time_seconds")
                .description("Histogram of time spent in WAITING phase for request.")
                .tags(tags).serviceLevelObjectives(TTFT_BOUNDS).register(registry);
        itl = DistributionSummary.builder("vllm:inter_token_latency_seconds")
                .description("Histogram of inter-token latency in seconds.")
                .tags(tags).serviceLevelObjectives(ITL_BOUNDS).register(registry);
        outputLengths = DistributionSummary.builder("vllm:request_generation_tokens")
                .description("Number of generation tokens processed.")
                .tags(tags).serviceLevelObjectives(TOKEN_BOUNDS).register(registry);
        promptTokens = counter("vllm:prompt_tokens", "Number of prefill tokens processed.");
        generationTokens = counter("vllm:generation_tokens", "Number of generation tokens processed.");
        prefixQueries = counter("vllm:prefix_cache_queries",
                "Prefix cache queries, in terms of number of queried tokens.");
        prefixHits = counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.");
        for (String reason : new String[] {"stop", "length", "abort"}) {
            success(reason);
        }
    }

    private void gauge(String name, String help, DoubleSupplier value) {
        Gauge.builder(name, value::getAsDouble).description(help).tags(tags).strongReference(true).register(registry);
    }

    private Counter counter(String name, String help) {
        return Counter.builder(name).description(help).tags(tags).register(registry);
    }

    private Counter success(String reason) {
        return success.computeIfAbsent(reason, r -> Counter.builder("vllm:request_success")
                .description("Count of successfully processed requests.")
                .tags(tags).tag("finished_reason", r).register(registry));
    }

    void admitted(int prompt, int cached, double queuedSeconds) {
        queue.record(queuedSeconds);
        promptTokens.increment(prompt);
        prefixQueries.increment(prompt);
        prefixHits.increment(cached);
    }

    void firstToken(double ttftSeconds) {
        ttft.record(ttftSeconds);
        generationTokens.increment();
    }

    void nextToken(double gapSeconds) {
        itl.record(gapSeconds);
        generationTokens.increment();
    }

    void finished(String reason) {
        success(reason).increment();
    }

    /** A request finished whole after {@code tokens} output tokens; aborted ones count only in the success counter. */
    void finished(String reason, int tokens) {
        finished(reason);
        outputLengths.record(tokens);
    }

    /** The exposition in the Prometheus text format 0.0.4. */
    String scrape() {
        return registry.scrape();
    }
}
