package dev.sextant.signal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class EngineMetricsTest {

    @Test
    void from_vllmFixture_readsCurrentNames() {
        EngineMetrics m = EngineMetrics.from(PrometheusText.parse(Fixtures.read("vllm-metrics.txt")));

        assertThat(m.flavor()).isEqualTo(EngineMetrics.Flavor.VLLM);
        assertThat(m.running()).isEqualTo(37.0);
        assertThat(m.waiting()).isEqualTo(4.0);
        assertThat(m.kvCacheUsage()).isEqualTo(0.6421875);
        assertThat(m.successCount()).as("stop + length, not abort").isEqualTo(40211.0 + 3120.0);
        assertThat(m.promptTokens()).isEqualTo(48211334.0);
        assertThat(m.generationTokens()).isEqualTo(9523411.0);
        assertThat(m.ttft().count()).isEqualTo(42369.0);
        assertThat(m.ttft().sum()).isEqualTo(18923.41);
        assertThat(m.ttft().buckets()).hasSize(23);
        assertThat(m.ttft().buckets().get(3)).isEqualTo(new Histogram.Bucket(0.02, 3.0));
        assertThat(m.ttft().buckets().get(22)).isEqualTo(new Histogram.Bucket(Double.POSITIVE_INFINITY, 42369.0));
        assertThat(m.tbt().count()).isEqualTo(9509415.0);
        assertThat(m.tbt().sum()).isEqualTo(421102.7);
        assertThat(m.tbt().buckets()).hasSize(20);
        assertThat(m.tbt().buckets().get(0)).isEqualTo(new Histogram.Bucket(0.01, 110322.0));
        assertThat(m.prefixCacheQueries()).isEqualTo(48211334.0);
        assertThat(m.prefixCacheHits()).isEqualTo(30911552.0);
        assertThat(m.cacheHitRate()).as("vLLM exports counters, not SGLang's gauge").isNaN();
        assertThat(m.queueTime()).as("the fixture has no queue-time histogram").isEqualTo(Histogram.EMPTY);
        assertThat(m.maxRunning()).isNaN();
    }

    /**
     * What an exporter cannot mean is absent, as if not exported: gauges and counters negative, not finite or beyond
     * any engine, a fraction outside [0, 1] (1% over taken as 1), more cache hits than queries, histograms whose count
     * or sum cannot be (a count not whole among them), and buckets that fall, exceed the count or are not whole (the
     * histogram's count and sum kept).
     */
    @Test
    void from_valuesNoEngineCanHave_areAbsent() {
        String hostile = """
                vllm:num_requests_running{model_name="m"} -3
                vllm:num_requests_waiting{model_name="m"} 2e9
                vllm:kv_cache_usage_perc{model_name="m"} 1.005
                vllm:request_success_total{model_name="m",finished_reason="stop"} +Inf
                vllm:prompt_tokens_total{model_name="m"} NaN
                vllm:generation_tokens_total{model_name="m"} 1e16
                vllm:prefix_cache_queries_total{model_name="m"} 10
                vllm:prefix_cache_hits_total{model_name="m"} 11
                vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 5
                vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 4
                vllm:time_to_first_token_seconds_count{model_name="m"} 4
                vllm:time_to_first_token_seconds_sum{model_name="m"} 0.2
                vllm:inter_token_latency_seconds_bucket{le="+Inf",model_name="m"} 9
                vllm:inter_token_latency_seconds_count{model_name="m"} 9
                vllm:inter_token_latency_seconds_sum{model_name="m"} -1
                """;

        EngineMetrics m = EngineMetrics.from(PrometheusText.parse(hostile));

        assertThat(m.running()).isNaN();
        assertThat(m.waiting()).isNaN();
        assertThat(m.kvCacheUsage()).isEqualTo(1.0);
        assertThat(m.successCount()).isNaN();
        assertThat(m.promptTokens()).isNaN();
        assertThat(m.generationTokens()).isNaN();
        assertThat(m.prefixCacheQueries()).isNaN();
        assertThat(m.prefixCacheHits()).isNaN();
        assertThat(m.ttft()).isEqualTo(new Histogram(java.util.List.of(), 4, 0.2));
        assertThat(m.tbt()).isEqualTo(Histogram.EMPTY);
        assertThat(EngineMetrics.from(PrometheusText.parse("vllm:kv_cache_usage_perc 1.5\n")).kvCacheUsage()).isNaN();
        assertThat(EngineMetrics.from(PrometheusText.parse("vllm:num_requests_running 37\n")).running()).isEqualTo(37);
        String fractions = """
                vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 1e-300
                vllm:time_to_first_token_seconds_count{model_name="m"} 1e-300
                vllm:time_to_first_token_seconds_sum{model_name="m"} 0.2
                vllm:inter_token_latency_seconds_bucket{le="0.1",model_name="m"} 2.5
                vllm:inter_token_latency_seconds_bucket{le="+Inf",model_name="m"} 9
                vllm:inter_token_latency_seconds_count{model_name="m"} 9
                vllm:inter_token_latency_seconds_sum{model_name="m"} 0.4
                """;
        EngineMetrics f = EngineMetrics.from(PrometheusText.parse(fractions));
        assertThat(f.ttft()).isEqualTo(Histogram.EMPTY);
        assertThat(f.tbt()).isEqualTo(new Histogram(java.util.List.of(), 9, 0.4));
    }

    @Test
    void from_vllmOutputLengths_readInTokens_absentElsewhere() {
        String vllm = """
                # TYPE vllm:request_generation_tokens histogram
                vllm:request_generation_tokens_bucket{le="100.0",model_name="m"} 3
                vllm:request_generation_tokens_bucket{le="200.0",model_name="m"} 7
                vllm:request_generation_tokens_bucket{le="+Inf",model_name="m"} 8
                vllm:request_generation_tokens_count{model_name="m"} 8
                vllm:request_generation_tokens_sum{model_name="m"} 1200
                """;

        EngineMetrics v = EngineMetrics.from(PrometheusText.parse(vllm));
        EngineMetrics g = EngineMetrics.from(PrometheusText.parse("sglang:num_running_reqs 3\n"));

        assertThat(v.outputLengths().mean()).isEqualTo(150.0, within(1e-12));
        assertThat(v.outputLengths().buckets()).containsExactly(new Histogram.Bucket(100, 3),
                new Histogram.Bucket(200, 7), new Histogram.Bucket(Double.POSITIVE_INFINITY, 8));
        assertThat(g.outputLengths()).isEqualTo(Histogram.EMPTY);
    }

    @Test
    void from_queueTimeAndBatchLimit_readUnderBothNames() {
        String vllm = """
                # TYPE vllm:request_queue_time_seconds histogram
                vllm:request_queue_time_seconds_bucket{le="0.1",model_name="m"} 3
                vllm:request_queue_time_seconds_bucket{le="+Inf",model_name="m"} 4
                vllm:request_queue_time_seconds_count{model_name="m"} 4
                vllm:request_queue_time_seconds_sum{model_name="m"} 0.6
                """;
        String sglang = """
                sglang:num_running_reqs{model_name="m"} 3
                sglang:max_running_requests{model_name="m"} 48
                # TYPE sglang:queue_time_seconds histogram
                sglang:queue_time_seconds_bucket{le="+Inf",model_name="m"} 2
                sglang:queue_time_seconds_count{model_name="m"} 2
                sglang:queue_time_seconds_sum{model_name="m"} 0.5
                """;

        EngineMetrics v = EngineMetrics.from(PrometheusText.parse(vllm));
        EngineMetrics g = EngineMetrics.from(PrometheusText.parse(sglang));

        assertThat(v.queueTime().mean()).isEqualTo(0.15, within(1e-12));
        assertThat(g.queueTime().mean()).isEqualTo(0.25, within(1e-12));
        assertThat(g.maxRunning()).isEqualTo(48.0);
    }

    /**
     * The KV cache's capacity, as the engine's configuration states it: vLLM's info gauge carries it in its labels (no
     * model's name; one series per data-parallel engine, summed), SGLang's a gauge. Labels that are not positive
     * numbers (vLLM writes None before the cache is profiled) state nothing.
     */
    @Test
    void from_kvCapacity_readFromVllmsCacheConfigAndSglangsMaxTokens() {
        String vllm = """
                # TYPE vllm:cache_config_info gauge
                vllm:cache_config_info{block_size="16",cache_dtype="auto",engine="0",num_gpu_blocks="27000"} 1.0
                vllm:cache_config_info{block_size="16",cache_dtype="auto",engine="1",num_gpu_blocks="25000"} 1.0
                vllm:num_requests_running{engine="0",model_name="a"} 3
                """;
        String unprofiled = """
                vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="None"} 1.0
                vllm:cache_config_info{block_size="-16",engine="1",num_gpu_blocks="100"} 1.0
                vllm:num_requests_running{engine="0",model_name="a"} 3
                """;
        String sglang = """
                sglang:num_running_reqs{model_name="m"} 3
                sglang:max_total_num_tokens{model_name="m"} 161721.0
                """;

        assertThat(EngineMetrics.from(PrometheusText.parse(vllm)).kvCapacityTokens()).isEqualTo(16.0 * 52_000);
        assertThat(EngineMetrics.from(PrometheusText.parse(vllm), "a").kvCapacityTokens()).isEqualTo(16.0 * 52_000);
        assertThat(EngineMetrics.from(PrometheusText.parse(unprofiled)).kvCapacityTokens()).isNaN();
        assertThat(EngineMetrics.from(PrometheusText.parse(sglang)).kvCapacityTokens()).isEqualTo(161_721.0);
        assertThat(EngineMetrics.from(PrometheusText.parse(sglang), "other").kvCapacityTokens()).isNaN();
        assertThat(EngineMetrics.from(PrometheusText.parse("vllm:num_requests_running 1\n")).kvCapacityTokens())
                .isNaN();
    }

    @Test
    void from_olderVllmNames_fallsBackToGpuCacheAndTimePerOutputToken() {
        String text = """
                # TYPE vllm:gpu_cache_usage_perc gauge
                vllm:gpu_cache_usage_perc{model_name="m"} 0.25
                # TYPE vllm:time_per_output_token_seconds histogram
                vllm:time_per_output_token_seconds_bucket{le="0.05",model_name="m"} 3
                vllm:time_per_output_token_seconds_bucket{le="+Inf",model_name="m"} 4
                vllm:time_per_output_token_seconds_count{model_name="m"} 4
                vllm:time_per_output_token_seconds_sum{model_name="m"} 0.2
                """;
        EngineMetrics m = EngineMetrics.from(PrometheusText.parse(text));

        assertThat(m.kvCacheUsage()).isEqualTo(0.25);
        assertThat(m.tbt().count()).isEqualTo(4.0);
        assertThat(m.tbt().mean()).isEqualTo(0.05, within(1e-12));
        assertThat(m.running()).isNaN();
        assertThat(m.ttft()).isEqualTo(Histogram.EMPTY);
    }

    @Test
    void from_sglangFixture_readsSglangNames() {
        EngineMetrics m = EngineMetrics.from(PrometheusText.parse(Fixtures.read("sglang-metrics.txt")));

        assertThat(m.flavor()).isEqualTo(EngineMetrics.Flavor.SGLANG);
        assertThat(m.running()).isEqualTo(52.0);
        assertThat(m.waiting()).isEqualTo(9.0);
        assertThat(m.kvCacheUsage()).isEqualTo(0.71);
        assertThat(m.successCount()).as("e2e histogram count").isEqualTo(45245.0);
        assertThat(m.promptTokens()).isEqualTo(8128902.0);
        assertThat(m.generationTokens()).isEqualTo(7557572.0);
        assertThat(m.ttft().count()).isEqualTo(42369.0);
        assertThat(m.ttft().sum()).isEqualTo(18923.41);
        assertThat(m.ttft().buckets()).hasSize(23);
        assertThat(m.tbt().count()).isEqualTo(9509415.0);
        assertThat(m.tbt().buckets()).hasSize(20);
        assertThat(m.cacheHitRate()).isEqualTo(0.482);
        assertThat(m.prefixCacheHits()).isNaN();
    }

    @Test
    void from_twoDataParallelEngines_sumsSeriesAndAveragesKvUsage() {
        String text = """
                vllm:num_requests_running{engine="0",model_name="a"} 3
                vllm:num_requests_running{engine="1",model_name="a"} 5
                vllm:num_requests_running{engine="0",model_name="b"} 100
                vllm:kv_cache_usage_perc{engine="0",model_name="a"} 0.2
                vllm:kv_cache_usage_perc{engine="1",model_name="a"} 0.4
                # TYPE vllm:time_to_first_token_seconds histogram
                vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="a"} 1
                vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="a"} 2
                vllm:time_to_first_token_seconds_bucket{engine="1",le="0.1",model_name="a"} 3
                vllm:time_to_first_token_seconds_bucket{engine="1",le="0.5",model_name="a"} 3
                vllm:time_to_first_token_seconds_bucket{engine="1",le="+Inf",model_name="a"} 4
                vllm:time_to_first_token_seconds_count{engine="0",model_name="a"} 2
                vllm:time_to_first_token_seconds_count{engine="1",model_name="a"} 4
                vllm:time_to_first_token_seconds_sum{engine="0",model_name="a"} 1
                vllm:time_to_first_token_seconds_sum{engine="1",model_name="a"} 2
                """;
        Scrape scrape = PrometheusText.parse(text);

        assertThat(EngineMetrics.from(scrape).running()).isEqualTo(108.0);
        EngineMetrics a = EngineMetrics.from(scrape, "a");
        assertThat(a.running()).isEqualTo(8.0);
        assertThat(a.kvCacheUsage()).isEqualTo(0.3, within(1e-12));
        assertThat(a.ttft()).isEqualTo(new Histogram(java.util.List.of(
                new Histogram.Bucket(0.1, 4), new Histogram.Bucket(Double.POSITIVE_INFINITY, 6)), 6, 3));
    }

    @Test
    void from_noKnownNames_isUnknownAndAbsent() {
        EngineMetrics m = EngineMetrics.from(PrometheusText.parse("up 1\n"));

        assertThat(m.flavor()).isEqualTo(EngineMetrics.Flavor.UNKNOWN);
        assertThat(m.running()).isNaN();
        assertThat(m.successCount()).isNaN();
    }

    @Test
    void quantile_interpolatesInsideTheBucket() {
        Histogram h = new Histogram(java.util.List.of(new Histogram.Bucket(0.1, 10), new Histogram.Bucket(0.2, 30),
                new Histogram.Bucket(Double.POSITIVE_INFINITY, 40)), 40, 5);

        assertThat(h.quantile(0.5)).isEqualTo(0.15, within(1e-12));
        assertThat(h.quantile(0.125)).isEqualTo(0.05, within(1e-12));
        assertThat(h.quantile(0.99)).isEqualTo(0.2);
        assertThat(Histogram.EMPTY.quantile(0.5)).isNaN();
    }
}
