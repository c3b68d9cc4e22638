package dev.sextant.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

/** The production control loop learns the capacity of a simulated engine it was told wrong (docs/control-loop.md). */
class AccuracyTest {
    static Accuracy.Case chat(double factor) {
        return named("h100, chat", factor);
    }

    static Accuracy.Case named(String name, double factor) {
        return Accuracy.cases().stream().filter(c -> c.name().equals(name) && c.factor() == factor)
                .findFirst().orElseThrow();
    }

    @Test
    void prefillBound_ratedTwiceTooHigh_capacityComesToWhatItServesUnderABacklogOnceTheCountRulesOutTheLaws() {
        // 24k-token prompts: a queue there is for prefill, not for a place in the batch, and the laws alone
        // extrapolate the prefill limit 12-14% high; one minute of overload completes too few requests for their
        // count to rule that out (docs/control-loop.md), four minutes do
        double[] longOverload = {0.3, 0.5, 0.7, 0.9, 1.1, 1.1, 1.1, 1.1, 0.6, 0.5};
        Accuracy.Result r = Accuracy.run(named("h100, long context", 2), longOverload, 60_000, 7);

        assertThat(r.configuredRps()).isGreaterThan(1.7 * r.trueSaturationRps());
        assertThat(r.capacityError()).isCloseTo(0, within(0.1));
    }

    @Test
    void ratedTwiceTooHigh_capacityComesWithinTenPercentOfTheTruthInTenMinutes() {
        Accuracy.Result r = Accuracy.run(chat(2), 60_000, 7);

        assertThat(r.configuredRps()).isGreaterThan(1.7 * r.trueSaturationRps());
        assertThat(r.capacityError()).isCloseTo(0, within(0.1));
    }

    @Test
    void ratedHalf_capacityComesWithinTenPercentOfTheTruthInTenMinutes() {
        Accuracy.Result r = Accuracy.run(chat(0.5), 60_000, 7);

        assertThat(r.configuredRps()).isLessThan(0.6 * r.trueSaturationRps());
        assertThat(r.capacityError()).isCloseTo(0, within(0.1));
    }

    @Test
    void fewPlaces_theTruthIsTheMeanOfReplications_preciseEnoughAtModerateLoadToJudgeATenPercentError() {
        // an 8-place engine's mean wait near saturation depends on rare long busy periods: one run's mean is its
        // seed's (400 to 920 ms at 80%), the mean of the replications carries its confidence interval
        Accuracy.Result r = Accuracy.run(named("h100 of 8 sequences, long answers", 1), 60_000, 7);

        for (int i = 0; i < Accuracy.UTILIZATIONS.length; i++) {
            assertThat(r.trueTtftHalfWidthMs()[i]).isPositive();
        }
        assertThat(r.trueTtftHalfWidthMs()[1] / r.trueTtftMs()[1]).isLessThan(0.05); // at 40% of saturation
        assertThat(r.trueTtftHalfWidthMs()[3] / r.trueTtftMs()[3]).isLessThan(0.25); // at 80%
        assertThat(r.trueTtftMs()).isSorted();
    }

    @Test
    void fewPlaces_ratedRight_ttftFollowsTheQueueForAPlaceFrom40To80Percent() {
        // an 8-place engine's wait is for a place held at a full batch's pace, and its outputs vary little (uniform
        // within ±50% of the mean): M/M/N at the mean batch put it 43% early at 60% of the saturation
        Accuracy.Result r = Accuracy.run(named("h100 of 8 sequences, long answers", 1), 60_000, 7);

        for (int i = 1; i < Accuracy.UTILIZATIONS.length; i++) {
            assertThat(r.estimatedTtftMs()[i] / r.trueTtftMs()[i] - 1).as("at %.0f%%", 100 * Accuracy.UTILIZATIONS[i])
                    .isCloseTo(0, within(0.3));
        }
    }

    @Test
    void profiles_reportEveryCaseAtEveryLoad_trueAndEstimated() {
        java.util.List<String> lines = Accuracy.report(10, 7, true, null);

        long rows = lines.stream().filter(l -> l.startsWith("| ") && l.contains(" ± ")).count();
        assertThat(rows).isEqualTo((long) Accuracy.cases().size() * Accuracy.UTILIZATIONS.length);
        assertThat(lines).anyMatch(l -> l.startsWith("| h100, chat | 2× | 80% | "));
    }
}
