package dev.sextant.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.signal.Histogram;
import dev.sextant.signal.VllmBuckets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.DoubleSupplier;
import org.junit.jupiter.api.Test;

/** The variability of output lengths, fitted from histograms with vLLM's wide buckets. */
class OutputLengthsTest {
    static final double[] VLLM_BOUNDS = VllmBuckets.tokens();

    /** {@code n} lengths drawn from {@code draw}, bucketed as vLLM exports them. */
    static Histogram histogram(int n, DoubleSupplier draw) {
        long[] counts = new long[VLLM_BOUNDS.length];
        double sum = 0;
        for (int i = 0; i < n; i++) {
            double x = Math.max(1, Math.round(draw.getAsDouble()));
            sum += x;
            for (int b = 0; b < VLLM_BOUNDS.length; b++) {
                if (x <= VLLM_BOUNDS[b]) {
                    counts[b]++;
                    break;
                }
            }
        }
        List<Histogram.Bucket> buckets = new ArrayList<>();
        long c = 0;
        for (int b = 0; b < VLLM_BOUNDS.length; b++) {
            c += counts[b];
            buckets.add(new Histogram.Bucket(VLLM_BOUNDS[b], c));
        }
        buckets.add(new Histogram.Bucket(Double.POSITIVE_INFINITY, n));
        return new Histogram(buckets, n, sum);
    }

    @Test
    void uniformWithinHalfOfTheMean_comesOutNarrow_thoughTwoBucketsHoldIt() {
        // 125..375 tokens: c² = 1/12 / 1 = 0.083; vLLM's buckets split it only at 200
        SplittableRandom rng = new SplittableRandom(1);
        OutputLengths o = new OutputLengths();
        o.add(histogram(20_000, () -> 250 * (0.5 + rng.nextDouble())));

        assertThat(o.cv2()).isBetween(0.06, 0.13);
    }

    @Test
    void exponential_comesOutNearOne() {
        SplittableRandom rng = new SplittableRandom(2);
        OutputLengths o = new OutputLengths();
        o.add(histogram(20_000, () -> -300 * Math.log(1 - rng.nextDouble())));

        assertThat(o.cv2()).isBetween(0.7, 1.4);
    }

    @Test
    void heavyTailed_comesOutAboveOne() {
        // log-normal with σ = 1.2: c² = e^1.44 − 1 = 3.2
        SplittableRandom rng = new SplittableRandom(3);
        OutputLengths o = new OutputLengths();
        o.add(histogram(20_000, () -> Math.exp(5 + 1.2 * gaussian(rng))));

        assertThat(o.cv2()).isBetween(2.4, 4.2);
    }

    @Test
    void withoutEvidence_thePrior_andFewRequestsWeighLittle() {
        SplittableRandom rng = new SplittableRandom(4);
        OutputLengths none = new OutputLengths();
        OutputLengths few = new OutputLengths();
        few.add(histogram(10, () -> 250 * (0.5 + rng.nextDouble())));
        OutputLengths many = new OutputLengths();
        many.add(histogram(3_000, () -> 250 * (0.5 + rng.nextDouble())));

        assertThat(none.cv2()).isEqualTo(OutputLengths.PRIOR_CV2);
        assertThat(few.cv2()).isBetween(many.cv2(), OutputLengths.PRIOR_CV2);
        assertThat(few.cv2()).isGreaterThan(0.3);
    }

    @Test
    void forgetting_lowersTheEvidenceNotTheFit() {
        SplittableRandom rng = new SplittableRandom(5);
        OutputLengths o = new OutputLengths();
        o.add(histogram(300, () -> 250 * (0.5 + rng.nextDouble())));
        double before = o.cv2();

        o.decay(0.1);

        assertThat(o.requests()).isCloseTo(30, within(1e-9));
        assertThat(o.cv2()).isGreaterThan(before).isLessThan(OutputLengths.PRIOR_CV2);
    }

    @Test
    void why_saysTheEstimateAndItsEvidence_orThatNoneCame() {
        SplittableRandom rng = new SplittableRandom(6);
        OutputLengths o = new OutputLengths();
        String before = o.why();
        o.add(histogram(500, () -> 250 * (0.5 + rng.nextDouble())));

        assertThat(before).isEqualTo("output lengths c² 1 assumed (no histogram of them)");
        assertThat(o.why()).matches("output lengths c² 0\\.[01]\\d from 500 requests \\(prior 1\\)");
    }

    @Test
    void weibullShapes_knownVariability() {
        assertThat(OutputLengths.weibullCv2(1)).as("exponential").isCloseTo(1, within(1e-9));
        assertThat(OutputLengths.weibullCv2(2)).as("Rayleigh: 4/π − 1").isCloseTo(4 / Math.PI - 1, within(1e-9));
        assertThat(OutputLengths.logGamma(5)).isCloseTo(Math.log(24), within(1e-12));
        assertThat(OutputLengths.logGamma(0.5)).isCloseTo(0.5 * Math.log(Math.PI), within(1e-12));
    }

    private static double gaussian(SplittableRandom rng) {
        return Math.sqrt(-2 * Math.log(1 - rng.nextDouble())) * Math.cos(2 * Math.PI * rng.nextDouble());
    }
}
