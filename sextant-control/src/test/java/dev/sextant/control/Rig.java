package dev.sextant.control;

import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Engine;
import dev.sextant.topology.ParametricProfile;
import dev.sextant.topology.Topology;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;

/**
 * A control loop fed by fake engines of known truth under a manual clock: every scrape interval each engine runs
 * for that long at the load the published snapshot gives it (demand × weight), is scraped, and the gateway reports
 * its Poisson arrivals and the engines' outcomes; every solve interval the loop steps. No socket, no thread, no
 * sleep.
 */
final class Rig {
    final ManualTicker ticker = new ManualTicker();
    final Topology topology;
    final ControlLoop loop;
    final Map<String, FakeEngine> engines = new LinkedHashMap<>();
    final List<Step> steps = new ArrayList<>();
    final SplittableRandom rng;
    double demand;
    double scrapeSeconds = 5;
    double solveSeconds = 10;
    /** Engines whose scrapes fail (no /metrics, or down). */
    final java.util.Set<String> noMetrics = new java.util.HashSet<>();
    /** Engines the gateway has ejected: it reports no attempt on them (their scrapes still answer). */
    final java.util.Set<String> ejected = new java.util.HashSet<>();
    /** Engine id → fraction of its attempts that fail (server errors). */
    final Map<String, Double> errorRate = new TreeMap<>();
    /** Engines whose failing attempts time out (hang) instead of answering a server error. */
    final java.util.Set<String> hangs = new java.util.HashSet<>();
    /**
     * Engines whose core hangs: their metrics stand still, their gateways' requests stay in flight (nothing reported)
     * and their canaries time out.
     */
    final java.util.Set<String> stalled = new java.util.HashSet<>();
    /** Engine → requests the gateway reports in flight on it; null: its reports say nothing of them. */
    Map<String, Long> inFlight;
    /** Extra arrivals in the next report only (a burst), and an extra prompt on one engine's next interval. */
    int burstArrivals;
    String hugePromptEngine;
    double hugePromptTokens;
    private double sinceSolve;
    /** Scrape intervals by which scrapes and reports reach the loop late. */
    int signalDelayIntervals;
    private final java.util.ArrayDeque<List<Runnable>> inTransit = new java.util.ArrayDeque<>();

    Rig(Topology topology, Map<String, Batching> truths, long seed) {
        this(topology, truths, seed, ControlOptions.defaults());
    }

    Rig(Topology topology, Map<String, Batching> truths, long seed, ControlOptions options) {
        this.topology = topology;
        this.rng = new SplittableRandom(seed);
        this.demand = topology.demandRps().get("gw").get("chat");
        long s = seed;
        for (Engine e : topology.engines()) {
            engines.put(e.id(), new FakeEngine(truths.get(e.id()), ++s * 7919));
        }
        this.loop = ControlLoop.create(topology, options, ticker, null);
        steps.add(loop.step());
    }

    /** The configured engine of the truth {@code b}, rated {@code factor} × its saturation, profile to match. */
    static Engine configured(String id, String cluster, Batching b, double factor) {
        double mu = b.saturation();
        double tbt0 = b.tbt(0);
        double slope = b.tbt(0.999 * mu) / tbt0 - 1;
        return new Engine(id, cluster, "http://" + id + ":8000", List.of("m"), mu * factor,
                new ParametricProfile(b.firstTokenWithoutQueue(0), tbt0, Math.max(0, slope)), 1);
    }

    /** What the published snapshot sends to each engine, req/s. */
    Map<String, Double> loads() {
        Map<String, Double> out = new TreeMap<>();
        engines.keySet().forEach(id -> out.put(id, 0.0));
        Snapshot s = loop.published();
        Route r = s.route("gw", "chat");
        if (r != null) {
            r.weights().forEach((id, w) -> out.merge(id, w * demand * (1 - 0) , Double::sum));
        }
        return out;
    }

    /** Runs for {@code seconds} (a multiple of the scrape interval). */
    void run(double seconds) {
        for (double t = 0; t < seconds - 1e-9; t += scrapeSeconds) {
            Map<String, Double> load = loads();
            Map<String, GatewayReport.EngineOutcomes> outcomes = new TreeMap<>();
            ticker.advanceSeconds(scrapeSeconds);
            List<Runnable> signals = new ArrayList<>();
            long takenAt = ticker.nanos();
            for (Map.Entry<String, FakeEngine> e : engines.entrySet()) {
                String id = e.getKey();
                double x = load.get(id);
                boolean huge = id.equals(hugePromptEngine);
                e.getValue().frozen |= stalled.contains(id);
                e.getValue().run(x, scrapeSeconds, huge ? hugePromptTokens : 0, 0);
                EngineScrape scrape = noMetrics.contains(id) ? EngineScrape.failed(id, takenAt, "connection refused")
                        : EngineScrape.of(id, takenAt, e.getValue().metrics());
                signals.add(() -> loop.observe(scrape));
                long attempts = ejected.contains(id) || stalled.contains(id) ? 0 : Math.round(x * scrapeSeconds);
                if (attempts > 0) {
                    long errors = Math.round(attempts * errorRate.getOrDefault(id, 0.0));
                    boolean hung = hangs.contains(id);
                    outcomes.put(id, new GatewayReport.EngineOutcomes(attempts, attempts - errors, 0,
                            hung ? errors : 0, hung ? 0 : errors, 0,
                            new GatewayReport.Mean(20, attempts - errors), GatewayReport.Mean.NONE,
                            GatewayReport.Mean.NONE, GatewayReport.Mean.NONE, 0, 0));
                }
            }
            hugePromptEngine = null;
            long arrivals = poisson(demand * scrapeSeconds) + burstArrivals;
            burstArrivals = 0;
            Map<String, Long> held = inFlight == null ? null : new TreeMap<>(inFlight);
            signals.add(() -> loop.observe(new GatewayReport("gw", "", ticker.nanos(), scrapeSeconds,
                    Map.of("chat", arrivals), outcomes, Map.of(), Map.of(), held)));
            inTransit.add(signals);
            while (inTransit.size() > signalDelayIntervals) {
                inTransit.poll().forEach(Runnable::run);
            }
            for (Canary c : loop.canariesDue()) {
                double rate = errorRate.getOrDefault(c.engine(), 0.0);
                if (stalled.contains(c.engine())) {
                    loop.observe(CanaryResult.failed(c.engine(), ticker.nanos(), "no answer within 10 s"));
                    continue;
                }
                loop.observe(noMetrics.contains(c.engine()) && rate >= 1 || rng.nextDouble() < rate
                        ? CanaryResult.failed(c.engine(), ticker.nanos(), "HTTP 500")
                        : CanaryResult.ok(c.engine(), ticker.nanos(), 10, engines.get(c.engine()).canaryTbt()));
            }
            sinceSolve += scrapeSeconds;
            if (sinceSolve >= solveSeconds - 1e-9 || loop.urgent()) {
                sinceSolve = 0;
                steps.add(loop.step());
            }
        }
    }

    private long poisson(double mean) {
        return Math.max(0, Math.round(mean + Math.sqrt(mean) * rng.nextGaussian()));
    }

    EngineEstimate estimate(String engine) {
        return loop.estimates().engines().get(engine);
    }

    /** Publications after step {@code from}. */
    long publicationsSince(int from) {
        return steps.subList(from, steps.size()).stream().filter(Step::published).count();
    }
}
