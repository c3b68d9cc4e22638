package dev.sextant.signal;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;

/**
 * What the signal path reads from one engine's {@code /metrics}: load, KV-cache pressure, latency histograms
 * and completed requests, under vLLM's or SGLang's names.
 *
 * <p>Names read, first present wins:
 * <table>
 * <caption>metric names</caption>
 * <tr><th>field</th><th>vLLM</th><th>SGLang</th></tr>
 * <tr><td>running</td><td>{@code vllm:num_requests_running}</td><td>{@code sglang:num_running_reqs}</td></tr>
 * <tr><td>waiting</td><td>{@code vllm:num_requests_waiting}</td><td>{@code sglang:num_queue_reqs}</td></tr>
 * <tr><td>kvCacheUsage</td><td>{@code vllm:kv_cache_usage_perc}, {@code vllm:gpu_cache_usage_perc}</td>
 *     <td>{@code sglang:token_usage}</td></tr>
 * <tr><td>ttft</td><td>{@code vllm:time_to_first_token_seconds}</td>
 *     <td>{@code sglang:time_to_first_token_seconds}</td></tr>
 * <tr><td>tbt</td><td>{@code vllm:inter_token_latency_seconds}, {@code vllm:time_per_output_token_seconds}</td>
 *     <td>{@code sglang:inter_token_latency_seconds}, {@code sglang:time_per_output_token_seconds}</td></tr>
 * <tr><td>successCount</td><td>{@code vllm:request_success_total} without {@code finished_reason="abort"}</td>
 *     <td>{@code sglang:num_requests_total}, else {@code sglang:e2e_request_latency_seconds_count}</td></tr>
 * <tr><td>promptTokens</td><td>{@code vllm:prompt_tokens_total}</td><td>{@code sglang:prompt_tokens_total}</td></tr>
 * <tr><td>generationTokens</td><td>{@code vllm:generation_tokens_total}</td>
 *     <td>{@code sglang:generation_tokens_total}</td></tr>
 * <tr><td>prefixCacheQueries</td><td>{@code vllm:prefix_cache_queries_total}</td><td>—</td></tr>
 * <tr><td>prefixCacheHits</td><td>{@code vllm:prefix_cache_hits_total}</td><td>—</td></tr>
 * <tr><td>cacheHitRate</td><td>—</td><td>{@code sglang:cache_hit_rate}</td></tr>
 * <tr><td>queueTime</td><td>{@code vllm:request_queue_time_seconds}</td><td>{@code sglang:queue_time_seconds}</td></tr>
 * <tr><td>maxRunning</td><td>—</td><td>{@code sglang:max_running_requests}</td></tr>
 * <tr><td>outputLengths</td><td>{@code vllm:request_generation_tokens}</td><td>—</td></tr>
 * <tr><td>kvCapacityTokens</td><td>{@code vllm:cache_config_info}: its labels {@code num_gpu_blocks} ×
 *     {@code block_size}</td><td>{@code sglang:max_total_num_tokens}</td></tr>
 * </table>
 * Several series of one metric (data-parallel engines, several models) are summed; the KV-cache usage is
 * their mean, and histogram buckets are summed per bound (bounds not present in every series are dropped).
 * A metric the scrape lacks is {@code NaN} (a gauge or counter) or {@link Histogram#EMPTY}.
 *
 * @param flavor           whose names the scrape used
 * @param running          requests in the running batch, ≥ 0
 * @param waiting          requests queued for the batch, ≥ 0
 * @param kvCacheUsage     KV-cache blocks in use, fraction in [0, 1]
 * @param ttft             time to first token, seconds
 * @param tbt              time between output tokens, seconds
 * @param successCount     requests finished successfully since the engine started (a counter)
 * @param promptTokens     prompt tokens prefilled since start (a counter)
 * @param generationTokens output tokens generated since start (a counter)
 * @param prefixCacheQueries prompt tokens looked up in the prefix cache since start (a counter)
 * @param prefixCacheHits  prompt tokens found in the prefix cache since start (a counter), ≤ queries
 * @param cacheHitRate     fraction of prompt tokens served from the prefix cache, recently (a gauge, in [0, 1])
 * @param queueTime        time requests waited for a place in the batch, seconds
 * @param maxRunning       the most requests the engine runs in one batch (its configured limit, a gauge)
 * @param outputLengths    output tokens per finished request (a histogram in tokens, not seconds)
 * @param kvCapacityTokens tokens the engine's KV cache holds, as its configuration says (a gauge, &gt; 0)
 */
public record EngineMetrics(Flavor flavor, double running, double waiting, double kvCacheUsage, Histogram ttft,
                            Histogram tbt, double successCount, double promptTokens, double generationTokens,
                            double prefixCacheQueries, double prefixCacheHits, double cacheHitRate,
                            Histogram queueTime, double maxRunning, Histogram outputLengths,
                            double kvCapacityTokens) {

    /** Which engine's metric names a scrape carries. */
    public enum Flavor {
        /** {@code vllm:} names. */
        VLLM,
        /** {@code sglang:} names. */
        SGLANG,
        /** neither: every field is absent. */
        UNKNOWN
    }

    /**
     * A value outside its field's domain (a gauge or counter negative, not finite or beyond {@link #MAX_GAUGE} or
     * {@link #MAX_COUNTER}, a fraction outside [0, 1], more prefix-cache hits than queries, a histogram whose count or
     * sum is negative, not finite or beyond {@link #MAX_COUNTER}) is taken as absent, as if the engine did not export
     * it: an engine's broken or hostile exporter must not poison its group's laws or stop the fleet's solve (hostile
     * values once made the loop's step throw, and kept it throwing while that engine answered so).
     */
    public EngineMetrics {
        if (flavor == null || ttft == null || tbt == null || queueTime == null || outputLengths == null) {
            throw new IllegalArgumentException("flavor, ttft, tbt, queue_time, output_lengths: missing (expected: "
                    + "non-null)");
        }
        running = gauge(running);
        waiting = gauge(waiting);
        kvCacheUsage = fraction(kvCacheUsage);
        successCount = atLeastZero(successCount);
        promptTokens = atLeastZero(promptTokens);
        generationTokens = atLeastZero(generationTokens);
        prefixCacheQueries = atLeastZero(prefixCacheQueries);
        prefixCacheHits = atLeastZero(prefixCacheHits);
        if (prefixCacheHits > prefixCacheQueries) {
            prefixCacheQueries = Double.NaN;
            prefixCacheHits = Double.NaN;
        }
        cacheHitRate = fraction(cacheHitRate);
        maxRunning = gauge(maxRunning);
        kvCapacityTokens = kvCapacityTokens > 0 ? gauge(kvCapacityTokens) : Double.NaN;
        ttft = ttft.sane();
        tbt = tbt.sane();
        queueTime = queueTime.sane();
        outputLengths = outputLengths.sane();
    }

    /**
     * The largest gauge taken (requests running, waiting, the batch limit): far beyond any engine, and low enough
     * that products of the estimates made from it stay finite.
     */
    public static final double MAX_GAUGE = 1e9;
    /**
     * The largest counter or histogram count and sum taken: a million tokens a second for thirty years, and low
     * enough that products of the estimates made from it stay finite.
     */
    public static final double MAX_COUNTER = 1e15;

    /** {@code v} if in [0, {@link #MAX_COUNTER}], else NaN (absent). */
    private static double atLeastZero(double v) {
        return v >= 0 && v <= MAX_COUNTER ? v : Double.NaN;
    }

    /** {@code v} if in [0, {@link #MAX_GAUGE}], else NaN (absent). */
    private static double gauge(double v) {
        return v >= 0 && v <= MAX_GAUGE ? v : Double.NaN;
    }

    /**
     * {@code v} if in [0, 1], up to 1% above 1 taken as 1 (rounding in an exporter's arithmetic), else NaN (absent).
     */
    private static double fraction(double v) {
        return v >= 0 && v <= 1 ? v : v > 1 && v <= 1.01 ? 1 : Double.NaN;
    }

    /** Metrics without the KV cache's capacity. */
    public EngineMetrics(Flavor flavor, double running, double waiting, double kvCacheUsage, Histogram ttft,
                         Histogram tbt, double successCount, double promptTokens, double generationTokens,
                         double prefixCacheQueries, double prefixCacheHits, double cacheHitRate, Histogram queueTime,
                         double maxRunning, Histogram outputLengths) {
        this(flavor, running, waiting, kvCacheUsage, ttft, tbt, successCount, promptTokens, generationTokens,
                prefixCacheQueries, prefixCacheHits, cacheHitRate, queueTime, maxRunning, outputLengths, Double.NaN);
    }

    /** Metrics without the output-length histogram. */
    public EngineMetrics(Flavor flavor, double running, double waiting, double kvCacheUsage, Histogram ttft,
                         Histogram tbt, double successCount, double promptTokens, double generationTokens,
                         double prefixCacheQueries, double prefixCacheHits, double cacheHitRate, Histogram queueTime,
                         double maxRunning) {
        this(flavor, running, waiting, kvCacheUsage, ttft, tbt, successCount, promptTokens, generationTokens,
                prefixCacheQueries, prefixCacheHits, cacheHitRate, queueTime, maxRunning, Histogram.EMPTY, Double.NaN);
    }

    /**
     * Metrics without the prefix-cache, queue-time and batch-limit fields (engines that export none of them).
     */
    public EngineMetrics(Flavor flavor, double running, double waiting, double kvCacheUsage, Histogram ttft,
                         Histogram tbt, double successCount, double promptTokens, double generationTokens) {
        this(flavor, running, waiting, kvCacheUsage, ttft, tbt, successCount, promptTokens, generationTokens,
                Double.NaN, Double.NaN, Double.NaN, Histogram.EMPTY, Double.NaN);
    }

    /** The metrics of all series in {@code scrape}. Never throws on a parsed scrape. */
    public static EngineMetrics from(Scrape scrape) {
        return from(scrape, null);
    }

    /**
     * The metrics of the series whose {@code model_name} label is {@code modelName}.
     *
     * @param modelName a served model's name, or {@code null} for every series
     */
    public static EngineMetrics from(Scrape scrape, String modelName) {
        Predicate<Sample> keep = modelName == null ? s -> true : s -> modelName.equals(s.label("model_name"));
        Flavor flavor = flavorOf(scrape);
        return switch (flavor) {
            case VLLM -> new EngineMetrics(flavor,
                    sum(scrape, keep, "vllm:num_requests_running"),
                    sum(scrape, keep, "vllm:num_requests_waiting"),
                    mean(scrape, keep, "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
                    histogram(scrape, keep, "vllm:time_to_first_token_seconds"),
                    histogram(scrape, keep, "vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
                    sum(scrape, keep.and(s -> !"abort".equals(s.label("finished_reason"))), "vllm:request_success_total"),
                    sum(scrape, keep, "vllm:prompt_tokens_total"),
                    sum(scrape, keep, "vllm:generation_tokens_total"),
                    sum(scrape, keep, "vllm:prefix_cache_queries_total"),
                    sum(scrape, keep, "vllm:prefix_cache_hits_total"),
                    Double.NaN,
                    histogram(scrape, keep, "vllm:request_queue_time_seconds"),
                    Double.NaN,
                    histogram(scrape, keep, "vllm:request_generation_tokens"),
                    vllmKvCapacity(scrape, modelName));
            case SGLANG -> new EngineMetrics(flavor,
                    sum(scrape, keep, "sglang:num_running_reqs"),
                    sum(scrape, keep, "sglang:num_queue_reqs"),
                    mean(scrape, keep, "sglang:token_usage"),
                    histogram(scrape, keep, "sglang:time_to_first_token_seconds"),
                    histogram(scrape, keep, "sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"),
                    sum(scrape, keep, "sglang:num_requests_total", "sglang:e2e_request_latency_seconds_count"),
                    sum(scrape, keep, "sglang:prompt_tokens_total"),
                    sum(scrape, keep, "sglang:generation_tokens_total"),
                    Double.NaN,
                    Double.NaN,
                    mean(scrape, keep, "sglang:cache_hit_rate"),
                    histogram(scrape, keep, "sglang:queue_time_seconds"),
                    sum(scrape, keep, "sglang:max_running_requests"),
                    Histogram.EMPTY,
                    sum(scrape, keep, "sglang:max_total_num_tokens"));
            case UNKNOWN -> new EngineMetrics(flavor, Double.NaN, Double.NaN, Double.NaN, Histogram.EMPTY,
                    Histogram.EMPTY, Double.NaN, Double.NaN, Double.NaN, Double.NaN, Double.NaN, Double.NaN,
                    Histogram.EMPTY, Double.NaN);
        };
    }

    /**
     * vLLM's KV capacity in tokens: its {@code cache_config_info} series (an info gauge whose labels are the cache's
     * configuration) carry {@code num_gpu_blocks} and {@code block_size}; their product per series, summed over the
     * series (data-parallel engines). vLLM labels the series with no model, so a series without {@code model_name}
     * counts for every model; one whose labels are not positive numbers (before the cache is profiled vLLM writes
     * {@code None}) does not count. NaN when none does.
     */
    private static double vllmKvCapacity(Scrape scrape, String modelName) {
        double total = 0;
        boolean any = false;
        for (Sample s : scrape.samples("vllm:cache_config_info")) {
            String model = s.label("model_name");
            if (modelName != null && model != null && !modelName.equals(model)) {
                continue;
            }
            double blocks = positive(s.label("num_gpu_blocks"));
            double size = positive(s.label("block_size"));
            if (blocks > 0 && size > 0) {
                total += blocks * size;
                any = true;
            }
        }
        return any ? total : Double.NaN;
    }

    /** {@code text} as a finite number &gt; 0, else NaN. */
    private static double positive(String text) {
        if (text == null) {
            return Double.NaN;
        }
        try {
            double v = PrometheusText.parseValue(text.trim());
            return v > 0 && Double.isFinite(v) ? v : Double.NaN;
        } catch (NumberFormatException e) {
            return Double.NaN;
        }
    }

    private static Flavor flavorOf(Scrape scrape) {
        boolean sglang = false;
        for (String name : scrape.families().keySet()) {
            if (name.startsWith("vllm:")) {
                return Flavor.VLLM;
            }
            sglang |= name.startsWith("sglang:");
        }
        return sglang ? Flavor.SGLANG : Flavor.UNKNOWN;
    }

    private static List<Sample> first(Scrape scrape, Predicate<Sample> keep, String... names) {
        for (String name : names) {
            List<Sample> samples = scrape.samples(name).stream().filter(keep).toList();
            if (!samples.isEmpty()) {
                return samples;
            }
        }
        return List.of();
    }

    private static double sum(Scrape scrape, Predicate<Sample> keep, String... names) {
        List<Sample> samples = first(scrape, keep, names);
        return samples.isEmpty() ? Double.NaN : samples.stream().mapToDouble(Sample::value).sum();
    }

    private static double mean(Scrape scrape, Predicate<Sample> keep, String... names) {
        List<Sample> samples = first(scrape, keep, names);
        return samples.isEmpty() ? Double.NaN : samples.stream().mapToDouble(Sample::value).average().orElse(Double.NaN);
    }

    private static Histogram histogram(Scrape scrape, Predicate<Sample> keep, String... names) {
        for (String name : names) {
            List<Sample> buckets = scrape.samples(name + "_bucket").stream().filter(keep).toList();
            List<Sample> counts = scrape.samples(name + "_count").stream().filter(keep).toList();
            if (buckets.isEmpty() && counts.isEmpty()) {
                continue;
            }
            // series key: the labels without "le"
            Map<String, Map<Double, Double>> bySeries = new TreeMap<>();
            for (Sample b : buckets) {
                double bound;
                try {
                    bound = PrometheusText.parseValue(String.valueOf(b.label("le")));
                } catch (NumberFormatException e) {
                    continue;
                }
                if (Double.isNaN(bound)) {
                    continue;
                }
                Map<String, String> series = new TreeMap<>(b.labels());
                series.remove("le");
                bySeries.computeIfAbsent(series.toString(), k -> new TreeMap<>()).merge(bound, b.value(), Double::sum);
            }
            TreeMap<Double, Double> merged = null;
            for (Map<Double, Double> series : bySeries.values()) {
                if (merged == null) {
                    merged = new TreeMap<>(series);
                } else {
                    merged.keySet().retainAll(series.keySet());
                    merged.replaceAll((bound, c) -> c + series.get(bound));
                }
            }
            List<Histogram.Bucket> out = new ArrayList<>();
            if (merged != null) {
                merged.forEach((bound, c) -> out.add(new Histogram.Bucket(bound, c)));
            }
            double count = counts.stream().mapToDouble(Sample::value).sum();
            double sum = scrape.samples(name + "_sum").stream().filter(keep).mapToDouble(Sample::value).sum();
            return new Histogram(out, count, sum);
        }
        return Histogram.EMPTY;
    }
}
