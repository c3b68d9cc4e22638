package dev.sextant.sim;

import dev.sextant.control.ControlLoop;
import dev.sextant.control.ControlOptions;
import dev.sextant.control.EngineEstimate;
import dev.sextant.control.EngineScrape;
import dev.sextant.control.GatewayReport;
import dev.sextant.topology.Engine;
import dev.sextant.topology.EngineCluster;
import dev.sextant.topology.GatewayCluster;
import dev.sextant.topology.Model;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * How well the control loop learns an engine it was told wrong things about: one simulated engine of known hardware
 * runs a workload whose load sweeps up and down, its scrapes go to the production {@link ControlLoop} (the
 * topology's rating being the prior, possibly wrong), and the estimate is compared with the truth measured on the
 * same simulated engine: its saturation throughput (offered twice what it can carry) and its mean TTFT and TBT at
 * fixed fractions of it.
 */
final class Accuracy {
    /** Utilizations of the true saturation at which profiles are compared. */
    static final double[] UTILIZATIONS = {0.2, 0.4, 0.6, 0.8};

    private Accuracy() {
    }

    /**
     * One comparison.
     *
     * @param trueSaturationRps     measured saturation throughput, req/s
     * @param estimatedCapacityRps  the loop's capacity estimate after the traffic
     * @param configuredRps         what the topology said
     * @param trueTtftMs            measured mean TTFT at each of {@link #UTILIZATIONS}
     * @param estimatedTtftMs       the estimated profile's TTFT at the same loads
     * @param trueTbtMs             measured mean TBT at each
     * @param estimatedTbtMs        the estimated profile's TBT at the same loads
     * @param minutes               minutes of traffic the loop saw
     */
    record Result(double trueSaturationRps, double estimatedCapacityRps, double configuredRps, double[] trueTtftMs,
                  double[] estimatedTtftMs, double[] trueTbtMs, double[] estimatedTbtMs, double minutes) {
        double capacityError() {
            return estimatedCapacityRps / trueSaturationRps - 1;
        }

        double worstProfileError() {
            double worst = 0;
            for (int i = 0; i < trueTbtMs.length; i++) {
                worst = Math.max(worst, Math.abs(estimatedTbtMs[i] / trueTbtMs[i] - 1));
                worst = Math.max(worst, Math.abs(estimatedTtftMs[i] / trueTtftMs[i] - 1));
            }
            return worst;
        }
    }

    /** The saturation throughput of hardware {@code h} under workload {@code w}, req/s. */
    static double saturation(EngineParams h, Scenario.ClassWorkload w, long seed) {
        double guess = h.saturationRps(ScenarioLoader.uncachedPrompt(w), w.outputTokens());
        double[] m = Calibration.run(h, w, 2.5 * guess, seed);
        return m[2];
    }

    /**
     * Runs the experiment: the engine rated {@code configured} (capacity and profile) serves {@code w} while the
     * offered load moves through {@code fractions} of its true saturation, {@code stepMs} each, scraped every 5 s.
     */
    static Result run(EngineParams h, Scenario.ClassWorkload w, Engine configured, double[] fractions, double stepMs,
                      long seed) {
        double mu = saturation(h, w, seed);
        double[] ttft = new double[UTILIZATIONS.length];
        double[] tbt = new double[UTILIZATIONS.length];
        for (int i = 0; i < UTILIZATIONS.length; i++) {
            double[] m = Calibration.run(h, w, UTILIZATIONS[i] * mu, seed + i + 1);
            ttft[i] = m[0];
            tbt[i] = m[1];
        }
        Topology t = new Topology(List.of(new GatewayCluster("gw", "r")), List.of(new EngineCluster(configured.cluster(),
                "r")), Map.of("gw", Map.of(configured.cluster(), 1.0)), List.of(new Model(configured.models().get(0),
                (int) Math.round(w.outputTokens()))), List.of(configured),
                List.of(new TrafficClass("c", configured.models().get(0), List.of(), 0)), Map.of("gw", Map.of("c", 1.0)),
                0.1, 25);
        EventLoop loop = new EventLoop();
        ControlLoop control = ControlLoop.create(t, ControlOptions.defaults(), () -> Math.round(loop.now() * 1e6), null);
        EngineSim[] engine = new EngineSim[1];
        SplittableRandom rng = new SplittableRandom(seed);
        double[] rate = {fractions[0] * mu};
        EngineSim.Listener listener = new EngineSim.Listener() {
            @Override
            public void firstToken(EngineSim e, SimRequest r, double at) {
                r.firstTokenMs = at;
            }

            @Override
            public void finished(EngineSim e, SimRequest r, double at) {
                Conversation c = r.conversation;
                c.contextTokens = r.promptTokens + r.outputTokens;
                if (c.turnsLeft > 0) {
                    double think = -Math.log(1 - rng.nextDouble()) * w.thinkMeanMs();
                    loop.at(at + think, () -> Calibration.turn(loop, engine[0], c, w, rng));
                }
            }

            @Override
            public void failed(EngineSim e, SimRequest r, double at, boolean connect) {
            }

            @Override
            public void timedOut(EngineSim e, SimRequest r, double at) {
            }
        };
        engine[0] = new EngineSim(0, configured.id(), h, loop, listener, Double.POSITIVE_INFINITY);
        double end = fractions.length * stepMs;
        long[] ids = {0};
        Runnable[] next = new Runnable[1];
        next[0] = () -> {
            int turns = 1;
            while (turns < 1000 && rng.nextDouble() >= 1 / w.turnsMean()) {
                turns++;
            }
            Conversation c = new Conversation(ids[0]++, 0, 0, turns);
            Calibration.turn(loop, engine[0], c, w, rng);
            double gap = -Math.log(1 - rng.nextDouble()) / (rate[0] / w.turnsMean() / 1000);
            if (loop.now() + gap < end) {
                loop.after(gap, next[0]);
            }
        };
        loop.at(0, next[0]);
        for (int i = 1; i < fractions.length; i++) {
            double f = fractions[i];
            loop.at(i * stepMs, () -> rate[0] = f * mu);
        }
        for (double at = 5_000; at <= end; at += 5_000) {
            loop.at(at, () -> control.observe(EngineScrape.of(configured.id(), Math.round(loop.now() * 1e6),
                    engine[0].metrics())));
        }
        while (loop.step()) {
            if (loop.now() > end) {
                break;
            }
        }
        EngineEstimate e = control.estimates().engines().get(configured.id());
        double[] ettft = new double[UTILIZATIONS.length];
        double[] etbt = new double[UTILIZATIONS.length];
        for (int i = 0; i < UTILIZATIONS.length; i++) {
            double rho = UTILIZATIONS[i] * mu / e.capacityRps();
            ettft[i] = e.profile().ttftMs(rho);
            etbt[i] = e.profile().tbtMs(rho);
        }
        return new Result(mu, e.capacityRps(), configured.capacityRps(), ttft, ettft, tbt, etbt, end / 60_000);
    }

    /** Unused by the loop, kept for symmetry with other tools: a report of no gateways. */
    static GatewayReport none() {
        return new GatewayReport("gw", "", 0, 1, Map.of(), Map.of(), Map.of());
    }

    static List<String> table(List<Result> results) {
        List<String> out = new ArrayList<>();
        for (Result r : results) {
            out.add(String.format(java.util.Locale.ROOT, "true %.1f est %.1f conf %.1f (cap err %+.1f%%, worst profile "
                    + "err %.1f%%) ttft %s vs %s tbt %s vs %s", r.trueSaturationRps(), r.estimatedCapacityRps(),
                    r.configuredRps(), 100 * r.capacityError(), 100 * r.worstProfileError(),
                    java.util.Arrays.toString(round(r.trueTtftMs())), java.util.Arrays.toString(round(r.estimatedTtftMs())),
                    java.util.Arrays.toString(round(r.trueTbtMs())), java.util.Arrays.toString(round(r.estimatedTbtMs()))));
        }
        return out;
    }

    private static double[] round(double[] a) {
        double[] o = new double[a.length];
        for (int i = 0; i < a.length; i++) {
            o[i] = Math.round(a[i] * 10) / 10.0;
        }
        return o;
    }
}
