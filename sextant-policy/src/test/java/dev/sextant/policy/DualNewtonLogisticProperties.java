package dev.sextant.policy;

import static org.assertj.core.api.Assertions.assertThat;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;

/** The affinity term's logistic skips its exponential where that cannot change the result. */
class DualNewtonLogisticProperties {

    @Property(tries = 2000)
    void logistic_isBitForBitTheQuotient(@ForAll @DoubleRange(min = -800, max = 800) double x) {
        assertThat(Double.doubleToRawLongBits(DualNewton.logistic(x)))
                .isEqualTo(Double.doubleToRawLongBits(1 / (1 + Math.exp(x))));
    }

    @Property(tries = 2000)
    void logistic_nearTheShortcut_isBitForBitTheQuotient(@ForAll @DoubleRange(min = -38, max = -36) double x) {
        assertThat(DualNewton.logistic(x)).isEqualTo(1 / (1 + Math.exp(x)));
    }
}
