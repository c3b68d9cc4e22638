package dev.sextant.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class LegacyFeedbackPolicyTest {
    private static final double NAN = Double.NaN;

    @Test
    void update_movesWeightsInProportionToTheScoreDistanceFromThePeerMean() {
        // means: ttft 200, tbt 10, util 0.4 → scores 0.5+1+0.5 = 2 and 1.5+1+1.5 = 4, mean 3
        // w0 = 1·(1 − 0.5·(2−3)/3) = 7/6, w1 = 1·(1 − 0.5·(4−3)/3) = 5/6
        double[] w = LegacyFeedbackPolicy.update(new double[] {1, 1}, new double[] {1, 1}, new int[] {0, 0},
                new boolean[] {true, true}, new double[] {100, 300}, new double[] {10, 10}, new double[] {0.2, 0.6},
                0.5, 0.05);
        assertThat(w[0]).isCloseTo(7.0 / 6, within(1e-12));
        assertThat(w[1]).isCloseTo(5.0 / 6, within(1e-12));
    }

    @Test
    void update_highGain_clampsAtTheMinimumWeight() {
        // gain 10: 1 + 10/3 = 13/3 (below the cap 1/0.05 = 20); 1 − 10/3 < 0 → clamped to 0.05·w0 = 0.1
        double[] w = LegacyFeedbackPolicy.update(new double[] {1, 1}, new double[] {2, 2}, new int[] {0, 0},
                new boolean[] {true, true}, new double[] {100, 300}, new double[] {10, 10}, new double[] {0.2, 0.6},
                10, 0.05);
        assertThat(w[0]).isCloseTo(13.0 / 3, within(1e-12));
        assertThat(w[1]).isCloseTo(0.1, within(1e-12));
    }

    @Test
    void update_leavesLoneEngines_downEngines_andEnginesWithoutSignalsAlone() {
        // group 0: engines 0, 1 (engine 2 down, engine 3 no TTFT yet); group 1: engine 4 alone
        double[] w = LegacyFeedbackPolicy.update(new double[] {1, 1, 1, 1, 1}, new double[] {1, 1, 1, 1, 1},
                new int[] {0, 0, 0, 0, 1}, new boolean[] {true, true, false, true, true},
                new double[] {100, 300, 5000, NAN, 50}, new double[] {10, 10, 10, 10, 10},
                new double[] {0.2, 0.6, 1.0, 0.5, 0.9}, 0.5, 0.05);
        // engine 3's util (0.5) still counts in the util mean: (0.2 + 0.6 + 0.5)/3; TTFT mean over 0, 1 = 200
        double mu = (0.2 + 0.6 + 0.5) / 3;
        double s0 = 0.5 + 1 + 0.2 / mu;
        double s1 = 1.5 + 1 + 0.6 / mu;
        double mean = (s0 + s1) / 2;
        assertThat(w[0]).isCloseTo(1 - 0.5 * (s0 - mean) / mean, within(1e-12));
        assertThat(w[1]).isCloseTo(1 - 0.5 * (s1 - mean) / mean, within(1e-12));
        assertThat(w[2]).isEqualTo(1);
        assertThat(w[3]).isEqualTo(1);
        assertThat(w[4]).isEqualTo(1);
    }

    @Test
    void ewma_startsAtTheFirstSample_andIgnoresMissingOnes() {
        assertThat(LegacyFeedbackPolicy.ewma(NAN, 10, 0.5)).isEqualTo(10);
        assertThat(LegacyFeedbackPolicy.ewma(10, 20, 0.25)).isEqualTo(12.5);
        assertThat(LegacyFeedbackPolicy.ewma(10, NAN, 0.25)).isEqualTo(10);
    }
}
