package dev.sextant.server.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class NumbersTest {
    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({
            "2.0, 2",
            "-3.0, -3",
            "0.0, 0",
            "150.0, 150",
            "2.5, 2.5",
            "0.1, 0.1",
            "1.0E20, 1.0E20",
            "NaN, NaN",
            "Infinity, Infinity",
            "-Infinity, -Infinity"})
    void plain_writesAWholeNumberWithoutAFraction_andAnyOtherAsJavaDoes(double v, String written) {
        assertThat(Numbers.plain(v)).isEqualTo(written);
    }
}
