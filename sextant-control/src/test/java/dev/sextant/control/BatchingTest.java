package dev.sextant.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

/** The wait for a place in the batch: M/M/N at a full batch's residence, scaled for less variable lengths. */
class BatchingTest {
    /** Eight places, 250 tokens of 12 + 1.5·R ms steps, 800-token prompts (large-fleet's h100). */
    static Batching eightPlaces(double outputCv2) {
        return new Batching(12, 1.5, 0.03e-3, 0, 0.03, 1, 8, 250, 800, outputCv2);
    }

    /** Erlang's C from its definition (sums of a^k/k!), independent of the recursion the model uses. */
    static double erlangC(int n, double a) {
        double term = 1;
        double below = 0;
        for (int k = 0; k < n; k++) {
            below += term;
            term *= a / (k + 1);
        }
        double top = term * n / (n - a);
        return top / (below + top);
    }

    @Test
    void exponentialLengths_placeWaitIsMmnWithTheFullBatchResidence() {
        Batching b = eightPlaces(1);
        double x = 0.6 * b.saturation();
        double full = b.residenceAtFullBatch(x);
        double a = x * full / 1000;
        double decodingShare = (full - b.firstTokenWithoutQueue(x)) / full;

        double mmn = erlangC(8, a) * full / (8 - a);

        assertThat(b.placeWait(x)).isCloseTo(mmn * (1 + decodingShare * decodingShare) / 2, within(1e-9 * mmn));
        assertThat(full).as("every step a full batch's").isGreaterThan(b.residence(x));
    }

    @Test
    void lengthsAllAlike_waitAboutHalfOfExponentials() {
        double x = 0.7 * eightPlaces(1).saturation();

        double ratio = eightPlaces(0).placeWait(x) / eightPlaces(1).placeWait(x);

        assertThat(ratio).isBetween(0.5, 0.52); // (1 + c²·share²)/2 over (1 + share²)/2, share ≈ 0.995
    }

    @Test
    void placeWait_increasingAndConvexBelowSaturation_infiniteAtIt() {
        Batching b = eightPlaces(0.1);
        double mu = b.saturation();
        double previous = 0;
        double previousSlope = 0;
        for (int k = 1; k <= 97; k++) {
            double x = k / 100.0 * mu;
            double w = b.placeWait(x);
            double slope = (w - previous) / (mu / 100);
            assertThat(Double.isFinite(w)).isTrue();
            assertThat(w).isGreaterThanOrEqualTo(previous);
            assertThat(slope).isGreaterThanOrEqualTo(previousSlope - 1e-9);
            previous = w;
            previousSlope = slope;
        }
        assertThat(b.placeWait(mu * 1.0001)).isInfinite();
    }

    @Test
    void wait_isThePlaceThePrefillAheadAndHalfAStep() {
        Batching b = eightPlaces(0.5);
        double x = 0.5 * b.saturation();

        assertThat(b.wait(x)).isCloseTo(b.placeWait(x) + b.waitWithoutFullBatch(x), within(1e-9));
        assertThat(b.wait(0.0)).isZero();
    }
}
