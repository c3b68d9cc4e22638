package dev.sextant.snapshot;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.offset;

class RetryBudgetTest {

    @ParameterizedTest(name = "r({0}) = {1}")
    @CsvSource({
        "0.0,   0.2",
        "0.5,   0.2",
        "0.725, 0.105",
        "0.95,  0.01",
        "1.5,   0.01",
        "NaN,   0.01",
    })
    void ratio_ofTheDefault_isFlatBeyondTheEndsAndLinearBetween(double u, double expected) {
        assertThat(RetryBudget.DEFAULT.ratio(u)).isCloseTo(expected, offset(1e-12));
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "negative utilization  | -0.1     | 0.2 | 1.0      | utilization: -0.1 (expected: a finite number >= 0)",
        "infinite utilization  | Infinity | 0.2 | 1.0      | utilization: Infinity (expected: a finite number >= 0)",
        "ratio above 1         | 0.5      | 1.5 | 1.0      | ratio: 1.5 (expected: in [0, 1])",
        "negative ratio        | 0.5      | -1  | 1.0      | ratio: -1.0 (expected: in [0, 1])",
        "infinite floor        | 0.5      | 0.2 | Infinity | min_retries_per_second: Infinity (expected: a finite number >= 0)",
        "negative floor        | 0.5      | 0.2 | -1       | min_retries_per_second: -1.0 (expected: a finite number >= 0)",
    })
    void new_outOfRange_isRejectedNamingTheField(String what, double utilization, double ratio, double floor,
                                                  String message) {
        assertThatThrownBy(() -> new RetryBudget(List.of(new RetryBudget.Point(utilization, ratio)), floor))
                .isInstanceOf(IllegalArgumentException.class).hasMessage(message);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"0.5, 0.5", "0.6, 0.5"})
    void new_utilizationsNotStrictlyIncreasing_isRejected(double first, double second) {
        assertThatThrownBy(() -> new RetryBudget(List.of(new RetryBudget.Point(first, 0.2),
                new RetryBudget.Point(second, 0.1)), 1))
                .hasMessage("curve: utilizations not increasing (expected: sorted, distinct)");
    }
}
