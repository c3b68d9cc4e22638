package dev.sextant.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The approximation the control loop models an engine's prefix cache by (docs/control-loop.md, "The prefix cache's
 * capacity"), against the simulator's engine: a context stays T seconds after its last use, where the contexts left
 * within T, each counted until its conversation's next request replaces it, fill the free KV (load × context ×
 * ∫₀ᵀ (1 − r·G) = free KV, r the share of requests a later turn follows); the tokens the cache serves per request are
 * R × G(T), G the distribution of the times between a conversation's turns and R the same at every load.
 */
class PrefixCacheTest {

    /**
     * Per request at {@code rps} on engine {@code h} serving {@code w}: cached prompt tokens, and cached ÷ G(T) (what
     * R the approximation reads there).
     */
    private static double[] run(EngineParams h, Scenario.ClassWorkload w, double rps) {
        return run(h, w, rps, 400_000);
    }

    /** The same over {@code end} ms of traffic (the first 100 s not counted). */
    private static double[] run(EngineParams h, Scenario.ClassWorkload w, double rps, double end) {
        EventLoop loop = new EventLoop();
        SplittableRandom rng = new SplittableRandom(3);
        double warm = 100_000;
        double[] s = new double[5];
        EngineSim.Listener l = new EngineSim.Listener() {
            @Override
            public void firstToken(EngineSim e, SimRequest r, double at) {
            }

            @Override
            public void finished(EngineSim e, SimRequest r, double at) {
                if (r.arrivalMs >= warm && r.arrivalMs < end) {
                    s[0]++;
                    s[1] += r.cachedTokens;
                    s[2] += r.promptTokens + r.outputTokens;
                    s[3] += e.kvUsage();
                    s[4] += r.conversation.turnsLeft > 0 ? 1 : 0;
                }
                Calibration.nextTurn(loop, e::arrive, r, at, w, rng);
            }

            @Override
            public void failed(EngineSim e, SimRequest r, double at, boolean connect) {
            }

            @Override
            public void timedOut(EngineSim e, SimRequest r, double at) {
            }
        };
        EngineSim engine = new EngineSim(0, "e", h, loop, l, Double.POSITIVE_INFINITY);
        Calibration.conversations(loop, engine::arrive, w, rng, () -> rps, end);
        while (loop.step() && loop.now() <= end) {
            // run
        }
        double cached = s[1] / s[0];
        double context = s[2] / s[0];
        double free = h.kvCacheTokens() * (1 - s[3] / s[0]);
        double room = free / (rps * context) * 1000; // ms of contexts the free KV holds
        double back = s[4] / s[0];
        double theta = w.thinkMeanMs(); // the turns come an exponential think time apart
        // T with ∫₀ᵀ (1 − back·(1 − e^(−t/θ))) dt = (1 − back)·T + back·θ·(1 − e^(−T/θ)) = room
        double lo = 0;
        double hi = 1e9;
        for (int i = 0; i < 200; i++) {
            double mid = 0.5 * (lo + hi);
            if ((1 - back) * mid + back * theta * (1 - Math.exp(-mid / theta)) < room) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        double g = 1 - Math.exp(-lo / theta);
        return new double[] {cached, cached / g};
    }

    /** A cache too small for the conversations between their turns: it serves fewer of their tokens as load rises. */
    @Test
    void aSmallCache_servesFewerTokensUnderLoad_asTheTimeAContextStaysSays() {
        EngineParams h = new EngineParams(4.0, 0.004, 0.012, 32, 600_000, 8192);
        Scenario.ClassWorkload w = new Scenario.ClassWorkload(4, 10_000, 600, 80, 60);
        double[] at40 = run(h, w, 40);
        double[] at60 = run(h, w, 60);
        double[] at80 = run(h, w, 80);
        assertThat(at40[0]).isGreaterThan(at60[0] * 1.1);
        assertThat(at60[0]).isGreaterThan(at80[0] * 1.1);
        // what a cache without limit would serve, read at each load: the same within 5% (812, 788, 799 tokens;
        // counting every request's context as held until evicted, 1,015, 990, 971)
        assertSameWithin(0.05, at40[1], at60[1], at80[1]);
    }

    /**
     * A cache with room for every conversation between its turns (wrong-ratings.yaml's h100 and its chat): it serves
     * as much at 80% of the engine's saturation as at 20%, and the approximation says so, where counting every
     * request's context as held until evicted had it keep 84% of them at 80%.
     */
    @Test
    void aLargeCache_servesTheSameAtEveryLoad_andTheApproximationSaysSo() {
        EngineParams h = new EngineParams(5, 0.006, 0.03, 64, 1_200_000, 4096);
        Scenario.ClassWorkload w = new Scenario.ClassWorkload(4, 10_000, 400, 60, 100);
        double[] at20 = run(h, w, 16);
        double[] at80 = run(h, w, 64);
        assertThat(at80[0]).isCloseTo(at20[0], within(0.03 * at20[0]));
        assertSameWithin(0.05, at20[1], at80[1]);
    }

    /**
     * Prompts of 24k tokens on an engine whose KV holds about twenty of them (long-context.yaml's h100 and workload):
     * from 20% to 80% of its saturation the cache keeps three quarters of the conversations down to an eighth, and R
     * read there is the same within 15% (13.4k, 12.7k, 12.0k, 12.2k tokens; the same engine with a cache without limit
     * serves 12.5k–13.1k). This is what lets the loop model a cache that keeps as few as a tenth of its conversations
     * ({@code GroupModel.MIN_KEPT_SHARE}).
     */
    @Test
    void aCacheOfAFewLongContexts_isReadTheSameFromThreeQuartersKeptToAnEighth() {
        EngineParams h = new EngineParams(6, 0.006, 0.03, 64, 600_000, 8192);
        Scenario.ClassWorkload w = new Scenario.ClassWorkload(2, 20_000, 24_000, 2000, 150);
        double[] at20 = run(h, w, 1.05, 1_500_000);
        double[] at40 = run(h, w, 2.1, 1_500_000);
        double[] at60 = run(h, w, 3.16, 1_500_000);
        double[] at80 = run(h, w, 4.2, 1_500_000);
        assertThat(at80[0]).isLessThan(at20[0] / 4);
        assertSameWithin(0.15, at20[1], at40[1], at60[1], at80[1]);
    }

    private static void assertSameWithin(double tolerance, double... r) {
        double lo = java.util.Arrays.stream(r).min().orElseThrow();
        double hi = java.util.Arrays.stream(r).max().orElseThrow();
        assertThat(hi / lo).as("R read at each load: %s", java.util.Arrays.toString(r)).isLessThan(1 + tolerance);
    }
}
