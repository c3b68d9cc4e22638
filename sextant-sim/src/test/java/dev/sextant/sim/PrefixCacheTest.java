package dev.sextant.sim;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The approximation the control loop models an engine's prefix cache by (docs/control-loop.md, "The prefix cache's
 * capacity"), against the simulator's engine: a context stays about T = free KV / (load × context) seconds, so the
 * tokens the cache serves per request are R × G(T), G the distribution of the times between a conversation's turns
 * and R the same at every load.
 */
class PrefixCacheTest {

    /** Per request at {@code rps}: cached prompt tokens, and cached ÷ G(T) (what R the approximation reads there). */
    private static double[] run(double rps) {
        EngineParams h = new EngineParams(4.0, 0.004, 0.012, 32, 600_000, 8192);
        Scenario.ClassWorkload w = new Scenario.ClassWorkload(4, 10_000, 600, 80, 60);
        EventLoop loop = new EventLoop();
        SplittableRandom rng = new SplittableRandom(3);
        double warm = 100_000;
        double end = 400_000;
        double[] s = new double[4];
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
                }
                Calibration.nextTurn(loop, e, r, at, w, rng);
            }

            @Override
            public void failed(EngineSim e, SimRequest r, double at, boolean connect) {
            }

            @Override
            public void timedOut(EngineSim e, SimRequest r, double at) {
            }
        };
        EngineSim engine = new EngineSim(0, "e", h, loop, l, Double.POSITIVE_INFINITY);
        Calibration.conversations(loop, engine, w, rng, () -> rps, end);
        while (loop.step() && loop.now() <= end) {
            // run
        }
        double cached = s[1] / s[0];
        double context = s[2] / s[0];
        double free = 600_000 * (1 - s[3] / s[0]);
        double kept = free / (rps * context) * 1000; // ms
        double g = 1 - Math.exp(-kept / w.thinkMeanMs()); // the turns come an exponential think time apart
        return new double[] {cached, cached / g};
    }

    @Test
    void theTokensACacheServes_fallWithLoad_asTheTimeAContextStaysSays() {
        double[] at40 = run(40);
        double[] at60 = run(60);
        double[] at80 = run(80);
        assertThat(at40[0]).isGreaterThan(at60[0] * 1.1);
        assertThat(at60[0]).isGreaterThan(at80[0] * 1.1);
        double lo = Math.min(at40[1], Math.min(at60[1], at80[1]));
        double hi = Math.max(at40[1], Math.max(at60[1], at80[1]));
        // what a cache without limit would serve, read at each load: the same within 10% (1,015, 990, 971 tokens)
        assertThat(hi / lo).isLessThan(1.10);
    }
}
