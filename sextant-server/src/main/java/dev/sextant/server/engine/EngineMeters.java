package dev.sextant.server.engine;

import dev.sextant.signal.VllmBuckets;
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
    /** {@code vllm:cache_config_info}, as vLLM writes it. */
    private final String cacheConfigInfo;

    EngineMeters(String model, DoubleSupplier running, DoubleSupplier waiting, DoubleSupplier kvUsage,
                 long kvCacheTokens) {
        tags = Tags.of("engine", "0", "model_name", model);
        // vLLM's info gauge of its cache configuration: value 1, the configuration in its labels and no model's name;
        // blocks of 16 tokens (vLLM's default) where they make the capacity exactly, else of one. Written by hand:
        // the Prometheus registry drops a gauge name's "_info" suffix, which is reserved for its own info metrics
        long block = kvCacheTokens % 16 == 0 ? 16 : 1;
        cacheConfigInfo = "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
                + "# TYPE vllm:cache_config_info gauge\n"
                + "vllm:cache_config_info{block_size=\"" + block + "\",engine=\"0\",num_gpu_blocks=\""
                + kvCacheTokens / block + "\"} 1.0\n";
        gauge("vllm:num_requests_running", "Number of requests in model execution batches.", running);
        gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", waiting);
        gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", kvUsage);
        ttft = DistributionSummary.builder("vllm:time_to_first_token_seconds")
                .description("Histogram of time to first token in seconds.")
                .tags(tags).serviceLevelObjectives(VllmBuckets.ttftSeconds()).register(registry);
        queue = DistributionSummary.builder("vllm:request_queue_time_seconds")
                .description("Histogram of time spent in WAITING phase for request.")
                .tags(tags).serviceLevelObjectives(VllmBuckets.ttftSeconds()).register(registry);
        itl = DistributionSummary.builder("vllm:inter_token_latency_seconds")
                .description("Histogram of inter-token latency in seconds.")
                .tags(tags).serviceLevelObjectives(VllmBuckets.interTokenSeconds()).register(registry);
        outputLengths = DistributionSummary.builder("vllm:request_generation_tokens")
                .description("Number of generation tokens processed.")
                .tags(tags).serviceLevelObjectives(VllmBuckets.tokens()).register(registry);
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
        return registry.scrape() + cacheConfigInfo;
    }
}
