package dev.sextant.signal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class PrometheusTextTest {

    @Test
    void parse_vllmFixture_groupsEverySampleIntoItsDeclaredFamilyWithoutProblems() {
        Scrape scrape = PrometheusText.parse(Fixtures.read("vllm-metrics.txt"));

        assertThat(scrape.problems()).isEmpty();
        assertThat(scrape.families().keySet()).containsExactly(
                "python_gc_objects_collected_total", "process_resident_memory_bytes",
                "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                "vllm:gpu_cache_usage_perc", "vllm:num_preemptions_total", "vllm:prompt_tokens_total",
                "vllm:generation_tokens_total", "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
                "vllm:request_success_total", "vllm:time_to_first_token_seconds",
                "vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds",
                "vllm:e2e_request_latency_seconds", "vllm:cache_config_info");
        MetricFamily ttft = scrape.family("vllm:time_to_first_token_seconds");
        assertThat(ttft.type()).isEqualTo(MetricType.HISTOGRAM);
        assertThat(ttft.help()).isEqualTo("Histogram of time to first token in seconds.");
        assertThat(ttft.samples()).hasSize(23 + 3);
        MetricFamily preemptions = scrape.family("vllm:num_preemptions_total");
        assertThat(preemptions.type()).isEqualTo(MetricType.COUNTER);
        assertThat(preemptions.samples()).extracting(Sample::name)
                .containsExactly("vllm:num_preemptions_total", "vllm:num_preemptions_created");
        assertThat(scrape.family("vllm:cache_config_info").samples().get(0).labels())
                .containsEntry("num_gpu_blocks", "23040").containsEntry("enable_prefix_caching", "True").hasSize(7);
        assertThat(scrape.samples("process_resident_memory_bytes").get(0).value()).isEqualTo(3.215007744e9);
    }

    @Test
    void parse_sglangFixture_readsSumBeforeBucketsIntoTheHistogram() {
        Scrape scrape = PrometheusText.parse(Fixtures.read("sglang-metrics.txt"));

        assertThat(scrape.problems()).isEmpty();
        assertThat(scrape.families()).hasSize(11);
        assertThat(scrape.family("sglang:inter_token_latency_seconds").samples()).hasSize(20 + 2);
        assertThat(scrape.samples("sglang:token_usage").get(0).value()).isEqualTo(0.71);
    }

    @Test
    void parse_labelValuesWithEscapesCommasAndBraces_unescapes() {
        Scrape scrape = PrometheusText.parse(
                "m{a=\"x,y\",b=\"say \\\"hi\\\"\",c=\"back\\\\slash\",d=\"two\\nlines\",e=\"{}=#\",} 1\n");

        assertThat(scrape.problems()).isEmpty();
        assertThat(scrape.samples("m").get(0).labels()).isEqualTo(Map.of(
                "a", "x,y", "b", "say \"hi\"", "c", "back\\slash", "d", "two\nlines", "e", "{}=#"));
    }

    @Test
    void parse_helpAndTypeAfterTheirSamples_stillDeclareTheFamily() {
        Scrape scrape = PrometheusText.parse("""
                h_bucket{le="1"} 2
                h_bucket{le="+Inf"} 3
                h_sum 4.5
                h_count 3
                # HELP h  late help with \\\\ and \\n escapes
                # TYPE h histogram
                """);

        assertThat(scrape.problems()).isEmpty();
        assertThat(scrape.families()).containsOnlyKeys("h");
        assertThat(scrape.family("h").type()).isEqualTo(MetricType.HISTOGRAM);
        assertThat(scrape.family("h").help()).isEqualTo("late help with \\ and \n escapes");
        assertThat(scrape.family("h").samples()).hasSize(4);
    }

    @Test
    void parse_specialValuesTimestampsBlanksAndComments() {
        Scrape scrape = PrometheusText.parse("""

                # a comment
                #another comment
                \t
                a +Inf
                b -Inf 1700000000000
                c NaN -5
                d 1.5e-3\t  42
                e{}   .5
                f{x = "1" , y="2"} 7\r
                """);

        assertThat(scrape.problems()).isEmpty();
        assertThat(scrape.samples("a").get(0).value()).isEqualTo(Double.POSITIVE_INFINITY);
        assertThat(scrape.samples("b").get(0).value()).isEqualTo(Double.NEGATIVE_INFINITY);
        assertThat(scrape.samples("b").get(0).timestampMs()).isEqualTo(OptionalLong.of(1_700_000_000_000L));
        assertThat(scrape.samples("c").get(0).value()).isNaN();
        assertThat(scrape.samples("c").get(0).timestampMs()).isEqualTo(OptionalLong.of(-5));
        assertThat(scrape.samples("d").get(0).value()).isEqualTo(0.0015);
        assertThat(scrape.samples("d").get(0).timestampMs()).isEqualTo(OptionalLong.of(42));
        assertThat(scrape.samples("e").get(0).value()).isEqualTo(0.5);
        assertThat(scrape.samples("e").get(0).timestampMs()).isEmpty();
        assertThat(scrape.samples("f").get(0).labels()).isEqualTo(Map.of("x", "1", "y", "2"));
        assertThat(scrape.families().values()).allMatch(f -> f.type() == MetricType.UNTYPED);
    }

    static Stream<Arguments> malformedLines() {
        return Stream.of(
                Arguments.of("m", "missing value"),
                Arguments.of("m 1,0", "invalid value \"1,0\""),
                Arguments.of("m Infinity", "invalid value \"Infinity\""),
                Arguments.of("m 0x1p3", "invalid value \"0x1p3\""),
                Arguments.of("m 1d", "invalid value \"1d\""),
                Arguments.of("m 1 1.5", "invalid timestamp \"1.5\""),
                Arguments.of("m 1 2 3", "unexpected text after the timestamp"),
                Arguments.of("m 1 99999999999999999999", "invalid timestamp \"99999999999999999999\""),
                Arguments.of("9m 1", "expected a metric name"),
                Arguments.of("m{a=\"1\" 2", "expected ',' or '}' after label a"),
                Arguments.of("m{a=\"1} 2", "unterminated value of label a"),
                Arguments.of("m{a=1} 2", "expected '\"' to open the value of label a"),
                Arguments.of("m{a=\"\\t\"} 2", "invalid escape \\t in label a"),
                Arguments.of("m{a=\"1\",a=\"2\"} 2", "duplicate label a"),
                Arguments.of("m{1a=\"1\"} 2", "expected a label name"),
                Arguments.of("m{a:b=\"1\"} 2", "expected '=' after label a"),
                Arguments.of("m{a=\"1\"}2", "expected blank before the value"),
                Arguments.of("# TYPE m flavour", "unknown metric type \"flavour\""),
                Arguments.of("# TYPE m", "unknown metric type \"\""),
                Arguments.of("# TYPE", "expected a metric name after TYPE"),
                Arguments.of("# HELP 1m x", "expected a metric name after HELP"));
    }

    @ParameterizedTest
    @MethodSource("malformedLines")
    void parse_malformedLine_isReportedWithItsNumberAndTheRestStillParses(String bad, String message) {
        Scrape scrape = PrometheusText.parse("good 1\n" + bad + "\nalso_good 2\n");

        assertThat(scrape.problems()).containsExactly(new ParseProblem(2, bad, message));
        assertThat(scrape.samples("good")).hasSize(1);
        assertThat(scrape.samples("also_good")).hasSize(1);
    }

    @Test
    void parse_secondTypeForOneName_keepsTheFirstAndReportsTheSecond() {
        Scrape scrape = PrometheusText.parse("# TYPE m gauge\n# TYPE m counter\nm 1\n");

        assertThat(scrape.family("m").type()).isEqualTo(MetricType.GAUGE);
        assertThat(scrape.problems()).extracting(ParseProblem::lineNumber).containsExactly(2);
    }

    @Test
    void parse_bucketOfAnUndeclaredHistogram_formsAnUntypedFamilyOfItsOwnName() {
        Scrape scrape = PrometheusText.parse("x_bucket{le=\"1\"} 1\nx_count 1\n");

        assertThat(scrape.families().keySet()).containsExactly("x_bucket", "x_count");
    }

    @Test
    void parse_emptyText_hasNothing() {
        assertThat(PrometheusText.parse("")).isEqualTo(new Scrape(Map.of(), List.of()));
    }
}
