package dev.sextant.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.topology.Engine;
import dev.sextant.topology.MeasuredProfile;
import org.junit.jupiter.api.Test;

class CalibrationTest {
    @Test
    void lowLoad_matchesTheIdleStepModel() {
        // alone on the engine: TTFT = a + b·prompt = 10 + 0.1·E[prompt] with prompts uniform in [25, 75];
        // TBT = a + c = 11 ms
        EngineParams h = new EngineParams(10, 0.1, 1, 2, 10_000, 100);
        Scenario.ClassWorkload w = new Scenario.ClassWorkload(1, 1000, 50, 1, 3);
        double[] m = Calibration.run(h, w, 0.1, 3);
        assertThat(m[0]).isBetween(14.5, 15.5);
        assertThat(m[1]).isBetween(11.0, 11.3);
    }

    @Test
    void multiTurnConversations_areMeasuredAtTheRateTheyAreOffered() {
        // four turns of 10 s think times: after a fixed 20 s the later turns arrive at about half their rate
        EngineParams h = new EngineParams(5, 0.006, 0.03, 64, 1_200_000, 4096);
        Scenario.ClassWorkload chat = new Scenario.ClassWorkload(4, 10_000, 400, 60, 100);
        double[] m = Calibration.run(h, chat, 30, 5);
        assertThat(m[2]).as("requests finished per second, offered 30").isCloseTo(30, within(1.0));
    }

    /**
     * The mean TBT measured at 80% of the chat h100's saturation is the steady state's: the same engine and workload
     * with conversations that never stop arriving, its decoding time over its output tokens for requests that arrived
     * well before the end. Requests arriving once new conversations stop see a load that decays as they end; counted,
     * they put the figure 6% low.
     */
    @Test
    void highLoad_isMeasuredAtTheRate_notOnTheDrainAfterIt() {
        EngineParams h = new EngineParams(5, 0.006, 0.03, 64, 1_200_000, 4096);
        Scenario.ClassWorkload chat = new Scenario.ClassWorkload(4, 10_000, 400, 60, 100);
        double rps = 64;
        double[] m = Calibration.run(h, chat, rps, 7);

        double from = Calibration.steadyWarmupMs(chat);
        double to = from + 120_000;
        EventLoop loop = new EventLoop();
        java.util.SplittableRandom rng = new java.util.SplittableRandom(11);
        double[] decode = new double[2];
        EngineSim.Listener l = new EngineSim.Listener() {
            @Override
            public void firstToken(EngineSim e, SimRequest r, double at) {
                r.firstTokenMs = at;
            }

            @Override
            public void finished(EngineSim e, SimRequest r, double at) {
                if (r.arrivalMs >= from && r.arrivalMs < to) {
                    decode[0] += at - r.firstTokenMs;
                    decode[1] += r.outputTokens - 1;
                }
                Calibration.nextTurn(loop, e::arrive, r, at, chat, rng);
            }

            @Override
            public void failed(EngineSim e, SimRequest r, double at, boolean connect) {
            }

            @Override
            public void timedOut(EngineSim e, SimRequest r, double at) {
            }
        };
        EngineSim engine = new EngineSim(0, "steady", h, loop, l, Double.POSITIVE_INFINITY);
        Calibration.conversations(loop, engine::arrive, chat, rng, () -> rps, to + 60_000);
        while (loop.step() && loop.now() < to + 60_000) {
            // until well after the last request measured has finished, with new conversations still arriving
        }
        double steady = decode[0] / decode[1];

        assertThat(m[1]).isCloseTo(steady, within(0.02 * steady));
    }

    @Test
    void measuredProfiles_replaceTheDerivedOnes_andGrowWithLoad() throws Exception {
        Scenario s = ScenarioLoader.parse("m.yaml", SimulationTest.FAULTY.replace("duration_s: 40",
                "duration_s: 40\nprofiles: measured"));
        for (Engine e : s.topology().engines()) {
            assertThat(e.profile()).isInstanceOf(MeasuredProfile.class);
            assertThat(e.profile().ttftMs(0.95)).isGreaterThan(e.profile().ttftMs(0.05));
            assertThat(e.profile().tbtMs(0.95)).isGreaterThanOrEqualTo(e.profile().tbtMs(0.05));
        }
        Metrics m = Simulator.simulate(s.withDuration(15_000), "sextant", 1, null).metrics();
        assertThat(m.completed + m.shed + m.failed).isEqualTo(m.generated);
    }

    @Test
    void unknownProfilesMode_isRefused() {
        assertThatThrownBy(() -> ScenarioLoader.parse("m.yaml", SimulationTest.FAULTY.replace("duration_s: 40",
                "duration_s: 40\nprofiles: guessed")))
                .hasMessageMatching("m\\.yaml:\\d+: profiles: 'guessed' \\(expected one of \\[derived, measured]\\)");
    }
}
