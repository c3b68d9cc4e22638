package dev.sextant.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.signal.EngineMetrics;
import dev.sextant.signal.PrometheusText;
import org.junit.jupiter.api.Test;

/** What two successive scrapes of vLLM's counters and histograms say about the interval between them. */
class IntervalTest {
    private static EngineMetrics scrape(double ttftCount, double ttftSum, double tbtCount, double tbtSum,
                                        double success, double generated) {
        return EngineMetrics.from(PrometheusText.parse("# TYPE vllm:time_to_first_token_seconds histogram\n"
                + "vllm:time_to_first_token_seconds_bucket{le=\"0.1\"} " + ttftCount / 2 + "\n"
                + "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} " + ttftCount + "\n"
                + "vllm:time_to_first_token_seconds_count " + ttftCount + "\n"
                + "vllm:time_to_first_token_seconds_sum " + ttftSum + "\n"
                + "# TYPE vllm:inter_token_latency_seconds histogram\n"
                + "vllm:inter_token_latency_seconds_bucket{le=\"+Inf\"} " + tbtCount + "\n"
                + "vllm:inter_token_latency_seconds_count " + tbtCount + "\n"
                + "vllm:inter_token_latency_seconds_sum " + tbtSum + "\n"
                + "vllm:request_success_total{finished_reason=\"stop\"} " + success + "\n"
                + "vllm:generation_tokens_total " + generated + "\n"));
    }

    @Test
    void between_twoScrapes_givesTheIntervalsMeansAndCounts() {
        Interval i = Interval.between(scrape(100, 20, 1000, 30, 90, 1100), scrape(140, 26, 3000, 80, 130, 3140), 10,
                0);

        assertThat(i.ttftMs()).isEqualTo(6_000.0 / 40, within(1e-9));
        assertThat(i.ttftCount()).isEqualTo(40);
        assertThat(i.tbtMs()).isEqualTo(50_000.0 / 2000, within(1e-9));
        assertThat(i.completions()).isEqualTo(40);
        assertThat(i.load()).isEqualTo(4.0);
        assertThat(i.generated()).isEqualTo(2040);
        assertThat(i.prompt()).isNaN();
    }

    @Test
    void between_countersThatWentDown_meanARestart_theLaterValueIsTheIncrease() {
        Interval i = Interval.between(scrape(100, 20, 1000, 30, 90, 1100), scrape(10, 3, 100, 2, 8, 110), 2, 0);

        assertThat(i.ttftMs()).isEqualTo(300, within(1e-9));
        assertThat(i.completions()).isEqualTo(8);
        assertThat(i.generated()).isEqualTo(110);
    }

    @Test
    void between_nothingHappened_hasNoMeanAndNoCompletions() {
        EngineMetrics m = scrape(100, 20, 1000, 30, 90, 1100);

        Interval i = Interval.between(m, m, 5, 0);

        assertThat(i.ttftMs()).isNaN();
        assertThat(i.completions()).isZero();
    }

    @Test
    void decoding_isTheMeanBatchItsTokenGapsImply_andTheGaugeWithoutGaps() {
        // 2,000 gaps of 25 ms in 10 s: 50 s of sequences decoding, 5 on average, whatever the gauge read at the ends
        Interval i = Interval.between(scrape(100, 20, 1000, 30, 90, 1100), scrape(140, 26, 3000, 80, 130, 3140), 10,
                0);
        assertThat(i.decoding()).isEqualTo(5, within(1e-9));

        Interval none = new Interval(0, 5, 0, 0, Double.NaN, Double.NaN, Double.NaN, 0, Double.NaN, 0, Double.NaN, 2,
                4, 0, 0, Double.NaN, Double.NaN);
        assertThat(none.decoding()).isEqualTo(3);
    }
}
