package dev.sextant.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class EngineTrackerTest {
    @Test
    void aFactorWithinRange_followsItsReadingWhenTheLawMoves() {
        // read 4 times the law, then the law doubles: 2 times it
        assertThat(EngineTracker.rebased(4, 4, 2)).isCloseTo(2, within(1e-12));
        // a factor averaged below its reading moves by the same ratio
        assertThat(EngineTracker.rebased(3, 4, 2)).isCloseTo(1.5, within(1e-12));
    }

    @Test
    void aFactorHeldAtTheSlowestLimit_isRebasedFromTheLimitNotFromAReadingBeyondIt() {
        double slowest = EngineTracker.SLOWEST;
        // read 40 times the law, held at 20; the law doubles: 20 times the new law, still at the limit
        assertThat(EngineTracker.rebased(slowest, 2 * slowest, slowest)).isEqualTo(slowest);
        // read 40 times, the law quadruples: 10 times the new law
        assertThat(EngineTracker.rebased(slowest, 2 * slowest, slowest / 2)).isCloseTo(slowest / 2, within(1e-12));
        // and the same at the fast end
        assertThat(EngineTracker.rebased(1 / slowest, 1 / (2 * slowest), 2 / slowest))
                .isCloseTo(2 / slowest, within(1e-12));
    }

    @Test
    void aReadingThatSaysNothing_leavesTheFactor() {
        assertThat(EngineTracker.rebased(3, Double.NaN, 2)).isEqualTo(3);
        assertThat(EngineTracker.rebased(3, 2, Double.NaN)).isEqualTo(3);
    }
}
