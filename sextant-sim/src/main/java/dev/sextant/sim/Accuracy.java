package dev.sextant.sim;

import dev.sextant.control.ControlLoop;
import dev.sextant.control.ControlOptions;
import dev.sextant.control.EngineEstimate;
import dev.sextant.control.EngineScrape;
import dev.sextant.control.GatewayReport;
import dev.sextant.request.ReuseTimes;
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
public final class Accuracy {
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
     */
    record Result(double trueSaturationRps, double estimatedCapacityRps, double configuredRps, double[] trueTtftMs,
                  double[] trueTtftHalfWidthMs, double[] estimatedTtftMs, double[] trueTbtMs, double[] estimatedTbtMs) {
        double capacityError() {
            return estimatedCapacityRps / trueSaturationRps - 1;
        }

    }

    /**
     * Independent runs behind each true mean TTFT. On an engine of few batch places near saturation the mean wait
     * is set by rare long busy periods: one run of 4,000 requests at 80% of an 8-place engine's saturation gave
     * anything from 400 to 920 ms by its seed, so one run measures its seed, not the engine.
     */
    static final int REPLICATIONS = 32;

    private static double mean(double[] v) {
        double sum = 0;
        for (double x : v) {
            sum += x;
        }
        return sum / v.length;
    }

    /** Half the width of the 95% confidence interval of the mean of {@code v} (Student's t, 31 degrees of freedom). */
    private static double halfWidth(double[] v) {
        double m = mean(v);
        double ss = 0;
        for (double x : v) {
            ss += (x - m) * (x - m);
        }
        return 2.04 * Math.sqrt(ss / (v.length - 1) / v.length);
    }

    /** The saturation throughput of hardware {@code h} under workload {@code w}, req/s. */
    static double saturation(EngineParams h, Scenario.ClassWorkload w, long seed) {
        double guess = h.saturationRps(ScenarioLoader.uncachedPrompt(w), w.outputTokens());
        double[] m = Calibration.run(h, w, 2.5 * guess, seed, Calibration.WARMUP_MS);
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
        double[] ttftHalfWidth = new double[UTILIZATIONS.length];
        double[] tbt = new double[UTILIZATIONS.length];
        for (int i = 0; i < UTILIZATIONS.length; i++) {
            double[] ttfts = new double[REPLICATIONS];
            for (int k = 0; k < REPLICATIONS; k++) {
                double[] m = Calibration.run(h, w, UTILIZATIONS[i] * mu, seed + 1 + i * REPLICATIONS + k);
                ttfts[k] = m[0];
                tbt[i] += m[1] / REPLICATIONS;
            }
            ttft[i] = mean(ttfts);
            ttftHalfWidth[i] = halfWidth(ttfts);
        }
        Topology t = new Topology(List.of(new GatewayCluster("gw", "r")), List.of(new EngineCluster(configured.cluster(),
                "r")), Map.of("gw", Map.of(configured.cluster(), 1.0)), List.of(new Model(configured.models().get(0),
                (int) Math.round(w.outputTokens()))), List.of(configured),
                List.of(new TrafficClass("c", configured.models().get(0), List.of(), 0)), Map.of("gw", Map.of("c", 1.0)),
                0.1, 25);
        EventLoop loop = new EventLoop();
        ControlLoop control = ControlLoop.create(t, ControlOptions.defaults(), () -> Math.round(loop.now() * 1e6), null);
        SplittableRandom rng = new SplittableRandom(seed);
        double[] rate = {fractions[0] * mu};
        // what a gateway in front of the engine counts and reports: its arrivals and the times between a
        // conversation's requests (the prefix cache's capacity, docs/control-loop.md), every scrape interval
        ReuseTimes reuse = new ReuseTimes(16);
        java.util.concurrent.atomic.AtomicLongArray reuseCounts = reuse.counts("c");
        long[] arrivals = {0};
        java.util.function.BiConsumer<EngineSim, SimRequest> gateway = (e, r) -> {
            arrivals[0]++;
            reuse.arrived(reuseCounts, r.conversation.id, r.promptTokens, Math.round(loop.now() * 1e6));
            e.arrive(r);
        };
        EngineSim.Listener listener = new EngineSim.Listener() {
            @Override
            public void firstToken(EngineSim e, SimRequest r, double at) {
                r.firstTokenMs = at;
            }

            @Override
            public void finished(EngineSim e, SimRequest r, double at) {
                reuse.ended(r.conversation.id, Math.round(at * 1e6));
                Calibration.nextTurn(loop, next -> gateway.accept(e, next), r, at, w, rng);
            }

            @Override
            public void failed(EngineSim e, SimRequest r, double at, boolean connect) {
            }

            @Override
            public void timedOut(EngineSim e, SimRequest r, double at) {
            }
        };
        EngineSim engine = new EngineSim(0, configured.id(), h, loop, listener, Double.POSITIVE_INFINITY);
        double end = fractions.length * stepMs;
        Calibration.conversations(loop, r -> gateway.accept(engine, r), w, rng, () -> rate[0], end);
        for (int i = 1; i < fractions.length; i++) {
            double f = fractions[i];
            loop.at(i * stepMs, () -> rate[0] = f * mu);
        }
        for (double at = 5_000; at <= end; at += 5_000) {
            loop.at(at, () -> {
                long nanos = Math.round(loop.now() * 1e6);
                control.observe(EngineScrape.of(configured.id(), nanos, engine.metrics()));
                control.observe(new GatewayReport("gw", "", nanos, 5, Map.of("c", arrivals[0]), Map.of(), Map.of(),
                        reuse.drain()));
                arrivals[0] = 0;
            });
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
        return new Result(mu, e.capacityRps(), configured.capacityRps(), ttft, ttftHalfWidth, ettft, tbt, etbt);
    }

    /** One case of {@link #report}: hardware and workload as the scenarios write them, rated {@code factor} × right. */
    record Case(String name, EngineParams hardware, Scenario.ClassWorkload workload, double factor) {
    }

    /** The offered load, as fractions of the true saturation, one step each: up, an overload, down, up again. */
    static final double[] SWEEP = {0.3, 0.5, 0.7, 0.9, 1.1, 0.6, 0.8, 0.4, 0.9, 0.5};

    /**
     * The cases of {@code sextant accuracy}: the hardware of the scenarios (examples/scenarios/wrong-ratings.yaml's
     * h100 and l4, long-context.yaml's h100 and workload, large-fleet.yaml's h100 with its long answers), each rated
     * half, exactly and twice what it carries (the configured profile derived from the hardware as the simulator
     * derives every engine's, the capacity scaled).
     */
    static List<Case> cases() {
        EngineParams h100 = new EngineParams(5, 0.006, 0.03, 64, 1_200_000, 4096);
        EngineParams l4 = new EngineParams(9, 0.012, 0.06, 32, 500_000, 4096);
        EngineParams longH100 = new EngineParams(6, 0.006, 0.03, 64, 600_000, 8192);
        EngineParams fleetH100 = new EngineParams(12, 0.03, 1.5, 8, 120_000, 2048);
        Scenario.ClassWorkload chat = new Scenario.ClassWorkload(4, 10_000, 400, 60, 100);
        Scenario.ClassWorkload longContext = new Scenario.ClassWorkload(2, 20_000, 24_000, 2000, 150);
        Scenario.ClassWorkload longAnswers = new Scenario.ClassWorkload(4, 15_000, 800, 100, 250);
        List<Case> out = new ArrayList<>();
        for (double f : new double[] {0.5, 1, 2}) {
            out.add(new Case("h100, chat", h100, chat, f));
            out.add(new Case("l4, chat", l4, chat, f));
            out.add(new Case("h100, long context", longH100, longContext, f));
            out.add(new Case("h100 of 8 sequences, long answers", fleetH100, longAnswers, f));
        }
        out.sort(java.util.Comparator.comparing(Case::name).thenComparingDouble(Case::factor));
        return out;
    }

    /** Runs one case through {@link #SWEEP} with steps of {@code stepMs}. */
    static Result run(Case c, double stepMs, long seed) {
        return run(c, SWEEP, stepMs, seed);
    }

    /** Runs one case through the loads {@code fractions} of its true saturation, {@code stepMs} each. */
    static Result run(Case c, double[] fractions, double stepMs, long seed) {
        Engine derived = ScenarioLoader.derive("e", "gpu", List.of("m"), c.hardware(), c.workload(), Double.NaN);
        Engine configured = new Engine("e", "gpu", derived.endpoint(), derived.models(),
                derived.capacityRps() * c.factor(), derived.profile(), 1.0);
        return run(c.hardware(), c.workload(), configured, fractions, stepMs, seed);
    }

    /**
     * The report of {@code sextant accuracy}: every case of {@link #cases()}, as a Markdown table, with the
     * capacity's error and the worst errors of the profile's TTFT and TBT at 20–80% of the true saturation.
     *
     * @param stepSeconds how long each load of the sweep lasts
     * @param profiles    whether a second table follows with each case's true and estimated TTFT and TBT at every
     *                    compared load (where the errors are, not only how large the worst is)
     * @param progress    where a line per case goes as it finishes (may be null)
     */
    public static List<String> report(double stepSeconds, long seed, boolean profiles, java.io.PrintStream progress) {
        List<String> detail = new ArrayList<>();
        List<String> out = new ArrayList<>();
        out.add(String.format(java.util.Locale.ROOT, "Ten loads of %.0f s each (%s of the true saturation), "
                + "scraped every 5 s; errors after the %.0f minutes:", stepSeconds, fractions(),
                SWEEP.length * stepSeconds / 60));
        out.add("");
        out.add("| engine and workload | rated | true capacity | configured | estimated | capacity error "
                + "| worst TBT error | worst TTFT error |");
        out.add("| --- | --- | --- | --- | --- | --- | --- | --- |");
        for (Case c : cases()) {
            Result r = run(c, stepSeconds * 1000, seed);
            double tbt = 0;
            double ttft = 0;
            for (int i = 0; i < r.trueTbtMs().length; i++) {
                tbt = Math.max(tbt, Math.abs(r.estimatedTbtMs()[i] / r.trueTbtMs()[i] - 1));
                ttft = Math.max(ttft, Math.abs(r.estimatedTtftMs()[i] / r.trueTtftMs()[i] - 1));
            }
            String line = String.format(java.util.Locale.ROOT, "| %s | %s× | %.2f req/s | %.2f | %.2f | %+.1f%% | "
                    + "%.1f%% | %.1f%% |", c.name(), c.factor() == 1 ? "1" : c.factor() == 0.5 ? "0.5" : "2",
                    r.trueSaturationRps(), r.configuredRps(), r.estimatedCapacityRps(), 100 * r.capacityError(),
                    100 * tbt, 100 * ttft);
            out.add(line);
            if (progress != null) {
                progress.println(line);
            }
            for (int i = 0; i < r.trueTbtMs().length; i++) {
                detail.add(String.format(java.util.Locale.ROOT, "| %s | %s× | %.0f%% | %.1f ± %.1f | %.1f | %+.0f%% | "
                        + "%.2f | %.2f | %+.0f%% |", c.name(), c.factor() == 1 ? "1" : c.factor() == 0.5 ? "0.5" : "2",
                        100 * UTILIZATIONS[i], r.trueTtftMs()[i], r.trueTtftHalfWidthMs()[i], r.estimatedTtftMs()[i],
                        100 * (r.estimatedTtftMs()[i] / r.trueTtftMs()[i] - 1), r.trueTbtMs()[i],
                        r.estimatedTbtMs()[i], 100 * (r.estimatedTbtMs()[i] / r.trueTbtMs()[i] - 1)));
            }
        }
        if (profiles) {
            out.add("");
            out.add("Each case's mean TTFT and TBT, ms, true and estimated, at fractions of the true saturation (the true "
                    + "TTFT the mean of " + REPLICATIONS + " runs ± the half-width of its 95% confidence interval):");
            out.add("");
            out.add("| engine and workload | rated | load | true TTFT | estimated | error | true TBT | estimated | error |");
            out.add("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
            out.addAll(detail);
        }
        return out;
    }

    private static String fractions() {
        StringBuilder b = new StringBuilder();
        for (double f : SWEEP) {
            b.append(b.length() == 0 ? "" : ", ").append(Math.round(f * 100)).append('%');
        }
        return b.toString();
    }
}
