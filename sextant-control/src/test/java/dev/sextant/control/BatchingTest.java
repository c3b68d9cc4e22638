package dev.sextant.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.topology.MeasuredProfile;
import java.util.List;
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

    /**
     * Chat on an h100 (5 + 0.03·R ms steps, 0.006 ms per prompt token, 64 places, 100 tokens, 145-token prompts): its
     * TTFT rises steeply from the idle value (no step to wait for) to half a step more, so a hull through the idle
     * point would lie under it at light load. The estimated profile matches the model at every sampled load from
     * ρ = 0.1, and its value at ρ = 0 is no lower than the idle TTFT.
     */
    @Test
    void lightLoad_theProfileFollowsTheConcaveStart_atEverySampledLoad() {
        Batching b = new Batching(5, 0.03, 0.006e-3, 0, 0.006, 1, 64, 100, 145);
        List<MeasuredProfile.Point> points = b.profile().points();
        double idle = points.get(0).ttftMs();
        double mu = b.saturation();

        MeasuredProfile through = new MeasuredProfile(points);
        MeasuredProfile light = new MeasuredProfile(DefaultControlLoop.lightLoad(points));

        assertThat(through.ttftMs(0.2)).as("the hull through the idle point, under the model at 20%")
                .isLessThan(0.9 * b.ttft(0.2 * mu));
        for (double rho : Batching.SAMPLES) {
            if (rho >= 0.1 && rho <= 0.9) {
                double model = b.ttft(rho * mu);
                assertThat(light.ttftMs(rho)).as("ρ = %s", rho).isCloseTo(model, within(0.01 * model));
            }
        }
        assertThat(light.ttftMs(0)).isGreaterThanOrEqualTo(idle).isLessThanOrEqualTo(light.ttftMs(0.1));
    }

    /** Where the TTFT is convex from the idle point on, nothing changes. */
    @Test
    void lightLoad_convexFromIdle_isLeftAsItIs() {
        List<MeasuredProfile.Point> points = List.of(
                new MeasuredProfile.Point(0, 7, 5),
                new MeasuredProfile.Point(0.1, 7.1, 5),
                new MeasuredProfile.Point(0.2, 7.4, 5.1),
                new MeasuredProfile.Point(0.5, 9, 5.5));

        assertThat(DefaultControlLoop.lightLoad(points)).isEqualTo(points);
    }

    /** E[R²]/E[R] of the M/M/n busy places, from the distribution's definition (sums of a^k/k!, in logs). */
    static double tokenBatchByDefinition(double a, int n) {
        double[] logs = new double[n + 1];
        for (int k = 0; k < n; k++) {
            logs[k] = k * Math.log(a) - logFactorial(k);
        }
        logs[n] = n * Math.log(a) - logFactorial(n) + Math.log(n / (n - a)); // every place busy, queue included
        double top = java.util.Arrays.stream(logs).max().orElseThrow();
        double z = 0;
        double m1 = 0;
        double m2 = 0;
        for (int k = 0; k <= n; k++) {
            double p = Math.exp(logs[k] - top);
            z += p;
            m1 += k * p;
            m2 += (double) k * k * p;
        }
        assertThat(m1 / z).as("the mean batch is the offered load").isCloseTo(a, within(1e-9 * a));
        return m2 / m1;
    }

    private static double logFactorial(int k) {
        double s = 0;
        for (int i = 2; i <= k; i++) {
            s += Math.log(i);
        }
        return s;
    }

    @Test
    void tokenBatch_isTheSizeBiasedBatch_fromAPoissonBatchToAFullOne() {
        for (int n : new int[] {1, 2, 3, 8, 64, 1024}) {
            for (double share : new double[] {0.01, 0.3, 0.6, 0.9, 0.99}) {
                double a = share * n;
                assertThat(Batching.tokenBatch(a, n)).as("a = %s, n = %s", a, n)
                        .isCloseTo(tokenBatchByDefinition(a, n), within(1e-9 * n));
            }
        }
        assertThat(Batching.tokenBatch(0.5, 1024)).as("far below the limit: mean + 1").isEqualTo(1.5);
        assertThat(Batching.tokenBatch(0, 8)).as("a lone sequence").isEqualTo(1);
        assertThat(Batching.tokenBatch(8, 8)).as("a full batch").isEqualTo(8);
    }

    /**
     * Per token, a step's time is that of the batch a token sees: at 80% of an 8-place engine's saturation (the large
     * fleet's h100) that batch is about 0.7 larger than the mean one, and at 12 + 1.5·R ms steps the mean time between
     * tokens 5% longer than the step at the mean batch, as the simulated engine measures it.
     */
    @Test
    void tbt_isTheStepAtTheBatchATokenSees() {
        Batching b = eightPlaces(0.083);
        double x = 0.8 * b.saturation();
        double tbt = b.tbt(x);
        double mean = x * (250 - 1) * tbt / 1000;
        assertThat(tbt).isCloseTo(b.stepTime(Batching.tokenBatch(mean, 8), x * 800), within(1e-6 * tbt));
        assertThat(tbt / b.stepTime(mean, x * 800)).isBetween(1.03, 1.08);
        assertThat(b.tbt(0)).as("a lone sequence's step").isCloseTo(12 + 1.5, within(1e-9));
    }

    /**
     * The places an observed wait implies are the fewest that make the M/M/n wait that short, as a scan one place at
     * a time finds them (the search halves beyond 256 places above the load, where the wait only falls).
     */
    @Test
    void serversForWait_isTheFewestPlacesThatWaitNoLonger_asAScanFindsThem() {
        java.util.SplittableRandom r = new java.util.SplittableRandom(7);
        for (int i = 0; i < 300; i++) {
            double a = r.nextDouble() * (i % 3 == 0 ? 2000 : 60);
            double serviceMs = 1 + r.nextDouble() * 5000;
            double waitMs = Math.pow(10, r.nextDouble() * 8 - 6);
            int cap = 1 + r.nextInt(3000);
            int n = Math.max(1, (int) Math.floor(a) + 1);
            while (n < cap && Batching.erlangC(n, a) * serviceMs / (n - a) > waitMs) {
                n++;
            }
            assertThat(Batching.serversForWait(a, serviceMs, waitMs, cap)).as("a %s, service %s, wait %s, cap %d", a,
                    serviceMs, waitMs, cap).isEqualTo(n);
        }
    }

    /** A batch said to be a billion places (a rating or a gauge no engine has) is taken as MAX_SLOTS places. */
    @Test
    void slotsBeyondAnyEngine_areCapped_andTheWaitStaysComputable() {
        Batching b = new Batching(5, 0.03, 6e-6, 0, 0.006, 1, 1e9, 120, 300);
        assertThat(b.slots()).isEqualTo(Batching.MAX_SLOTS);
        assertThat(b.servers()).isEqualTo(Batching.MAX_SLOTS);
        assertThat(b.ttft(0.5 * b.saturation())).isFinite().isPositive();
        assertThat(Batching.erlangC(Batching.MAX_SLOTS, 3)).isZero();
    }
}
