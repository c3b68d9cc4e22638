package dev.sextant.sim;

import dev.sextant.topology.Topology;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Everything one simulation needs: the topology the control plane sees, how each engine really behaves,
 * the workload, the control loop's timing, faults on a timeline and the policies to compare.
 *
 * @param name        short name, used in reports
 * @param description what the scenario shows, for the report
 * @param topology    the fleet as the optimizer sees it; its demand is the mean offered load
 * @param hardware    per engine (same order as {@code topology.engines()}), how it really runs
 * @param workload    per class (same order as {@code topology.classes()}), the conversation shape
 * @param arrivals    per gateway cluster (same order as {@code topology.gatewayClusters()}), the arrival shape
 * @param durationMs  how long clients send new conversations, ms; in-flight requests then drain
 * @param clientTimeoutMs a request still waiting in an engine queue this long after it was sent fails
 * @param control     timing of signals, solves and snapshot propagation
 * @param faults      faults on the timeline
 * @param policies    policy names to run by default, in order
 * @param legacy      parameters of the legacy feedback controller
 * @param gainSweep   extra gains of the legacy controller to run as {@code legacy-feedback[gain=g]}
 * @param sampleMs    interval of the time series, ms
 * @param metrics     per engine, whether it exports {@code /metrics} (false: a TGI- or TensorRT-LLM-like engine
 *                    whose scrapes fail; only gateways and canaries see it)
 */
record Scenario(String name, String description, Topology topology, List<EngineParams> hardware,
                List<ClassWorkload> workload, List<Arrivals> arrivals, double durationMs, double clientTimeoutMs,
                Control control, List<Fault> faults, List<String> policies, LegacyParams legacy,
                List<Double> gainSweep, double sampleMs, List<Boolean> metrics) {

    Scenario {
        hardware = List.copyOf(hardware);
        metrics = List.copyOf(metrics);
        if (metrics.size() != topology.engines().size()) {
            throw new IllegalArgumentException("metrics: " + metrics.size() + " entries (expected: one per engine, "
                    + topology.engines().size() + ")");
        }
        workload = List.copyOf(workload);
        arrivals = List.copyOf(arrivals);
        faults = List.copyOf(faults);
        policies = List.copyOf(policies);
        gainSweep = List.copyOf(gainSweep);
        if (hardware.size() != topology.engines().size()) {
            throw new IllegalArgumentException("hardware: " + hardware.size() + " entries (expected: one per engine, "
                    + topology.engines().size() + ")");
        }
    }

    /**
     * The shape of one class's conversations.
     *
     * @param turnsMean         mean turns per conversation (geometric, ≥ 1)
     * @param thinkMeanMs       mean think time between a reply and the next turn (exponential), ms
     * @param firstPromptTokens mean prompt tokens of a first turn (uniform in [½, 1½]× the mean)
     * @param newTokensPerTurn  mean new user tokens added by each later turn (uniform in [½, 1½]× the mean)
     * @param outputTokens      mean output tokens per reply (uniform in [½, 1½]× the mean)
     * @param systemPromptTokens tokens of a system prompt shared across conversations, before the first message;
     *                           0 for none (then {@code systemPrompts} and {@code keyedShare} change nothing)
     * @param systemPrompts     how many distinct system prompts there are (≥ 1); a conversation draws the i-th
     *                          (0-based) with probability ∝ 1/(i + 1), so the first is the hottest
     * @param keyedShare        the share of conversations whose client sends an explicit key
     *                          ({@code prompt_cache_key}); the rest send none, and the gateway derives their key
     *                          from the prompt (docs/request-path.md §1)
     */
    record ClassWorkload(double turnsMean, double thinkMeanMs, double firstPromptTokens, double newTokensPerTurn,
                         double outputTokens, double systemPromptTokens, int systemPrompts, double keyedShare) {
        /** Conversations without a shared system prompt, each with an explicit key. */
        ClassWorkload(double turnsMean, double thinkMeanMs, double firstPromptTokens, double newTokensPerTurn,
                      double outputTokens) {
            this(turnsMean, thinkMeanMs, firstPromptTokens, newTokensPerTurn, outputTokens, 0, 1, 1);
        }

        /** True when conversations carry a structured prompt: a shared system prompt or no explicit key. */
        boolean structured() {
            return systemPromptTokens > 0 || keyedShare < 1;
        }
    }

    /** Arrival shape of new conversations at a gateway cluster. */
    enum Shape { POISSON, BURSTY, DIURNAL }

    /**
     * @param shape       Poisson, bursty (rate × {@code factor} during {@code burstMs} of every {@code periodMs},
     *                    scaled so the mean is unchanged) or diurnal (rate × (1 + factor·sin(2πt/period)))
     * @param factor      burst factor (≥ 1) or diurnal amplitude (in [0, 1))
     * @param periodMs    period, ms
     * @param burstMs     burst length within a period, ms
     */
    record Arrivals(Shape shape, double factor, double periodMs, double burstMs) {
        static final Arrivals POISSON = new Arrivals(Shape.POISSON, 1, 1, 0);

        /** Rate multiplier at time {@code t} ms (mean 1 over a period). */
        double multiplier(double t) {
            switch (shape) {
                case BURSTY -> {
                    double frac = burstMs / periodMs;
                    double low = 1 / (frac * factor + (1 - frac));
                    return (t % periodMs) < burstMs ? factor * low : low;
                }
                case DIURNAL -> {
                    return 1 + factor * Math.sin(2 * Math.PI * t / periodMs);
                }
                default -> {
                    return 1;
                }
            }
        }

        /** The largest multiplier. */
        double maxMultiplier() {
            return switch (shape) {
                case BURSTY -> factor / ((burstMs / periodMs) * factor + (1 - burstMs / periodMs));
                case DIURNAL -> 1 + factor;
                default -> 1;
            };
        }

        /**
         * At most how much more than the mean rate the shape asks for over the first {@code durationMs} ms, as ms at
         * the mean rate: over whole periods nothing, over a part of one at most a burst's or a half-wave's excess
         * (and never more than the largest multiplier all along).
         */
        double excessMs(double durationMs) {
            double partOfAPeriod = switch (shape) {
                case BURSTY -> burstMs * (maxMultiplier() - 1);
                case DIURNAL -> factor * periodMs / Math.PI;
                default -> 0;
            };
            return Math.min(durationMs * (maxMultiplier() - 1), partOfAPeriod);
        }
    }

    /**
     * The control loop's timing.
     *
     * @param scrapeMs          engines' metrics are read (and gateways report) every this many ms
     * @param signalDelayMs     a scrape or a report reaches the controller this much later
     * @param solveMs           the optimizer re-solves every this many ms
     * @param propagationMs     a snapshot reaches gateways this much later
     * @param healthCheckMs     baselines notice an engine is down (or back) this much later
     * @param connectTimeoutMs  an attempt across a cut network link fails after this long
     */
    record Control(double scrapeMs, double signalDelayMs, double solveMs, double propagationMs, double healthCheckMs,
                   double connectTimeoutMs) {
        static final Control DEFAULT = new Control(5_000, 2_000, 10_000, 1_000, 5_000, 1_000);
    }

    /**
     * The legacy feedback controller's parameters.
     *
     * @param gain      proportional gain, ≥ 0
     * @param periodMs  update period, ms
     * @param smoothing EWMA weight of a new sample of TTFT, TBT, utilization, in (0, 1]
     * @param minWeight lower clamp of an engine's weight relative to its initial weight, in (0, 1]
     */
    record LegacyParams(double gain, double periodMs, double smoothing, double minWeight) {
        static final LegacyParams DEFAULT = new LegacyParams(0.5, 5_000, 0.5, 0.05);
    }

    /** Kinds of faults. */
    enum FaultKind { ENGINE_CRASH, ENGINE_SLOWDOWN, ENGINE_ERRORS, PARTITION, LINK_SLOWDOWN, CONTROL_PLANE_OUTAGE,
        DEMAND_SURGE, REQUEST_BURST, WORKLOAD_SHIFT, CONTROL_PLANE_RESTART }

    /**
     * A fault on the timeline, undone at {@code atMs + durationMs}.
     *
     * @param kind      what happens
     * @param atMs      when, ms
     * @param durationMs how long, ms
     * @param engines   engine indices hit (crash, slowdown, errors)
     * @param gateway   gateway index (partition, link slowdown, burst, demand surge, workload shift; -1 = every
     *                  gateway)
     * @param cluster   engine cluster id (partition, link slowdown)
     * @param factor    slowdown factor, round-trip multiplier, demand multiplier, or fraction of requests answered
     *                  with an error, or for a workload shift the multiplier of every new turn's output tokens
     * @param promptFactor for a workload shift, the multiplier of every new turn's new prompt tokens; 1 otherwise
     * @param burst     for a request burst: how many requests at once and their size; null otherwise
     */
    record Fault(FaultKind kind, double atMs, double durationMs, List<Integer> engines, int gateway, String cluster,
                 double factor, double promptFactor, Burst burst) {
        Fault {
            engines = List.copyOf(engines);
        }

        /** Whether it reaches gateway cluster {@code g}: its own, or every one when it names none. */
        boolean reaches(int g) {
            return gateway < 0 || gateway == g;
        }

        /**
         * The largest demand surge of {@code faults} that reaches gateway cluster {@code g}, 1 when none does: the
         * peak its arrivals are drawn at for the whole run, and thinned from.
         */
        static double peakSurge(List<Fault> faults, int g) {
            double peak = 1;
            for (Fault f : faults) {
                if (f.kind == FaultKind.DEMAND_SURGE && f.reaches(g)) {
                    peak = Math.max(peak, f.factor);
                }
            }
            return peak;
        }
    }

    /**
     * A burst of single requests sent at one instant from one gateway cluster (one huge prompt; a thousand streams).
     *
     * @param requests     how many, ≥ 1
     * @param trafficClass the class index
     * @param promptTokens prompt tokens of each, ≥ 1
     * @param outputTokens output tokens of each, ≥ 1
     */
    record Burst(int requests, int trafficClass, int promptTokens, int outputTokens) {
    }

    /** The same scenario with {@code clients} in every class's workload (the rest of each workload as it was). */
    Scenario withClients(Clients clients) {
        List<ClassWorkload> w = new ArrayList<>();
        for (ClassWorkload c : workload) {
            w.add(new ClassWorkload(c.turnsMean(), c.thinkMeanMs(), c.firstPromptTokens(), c.newTokensPerTurn(),
                    c.outputTokens(), clients.systemPromptTokens(), clients.systemPrompts(), clients.keyedShare()));
        }
        return new Scenario(name, description, topology, hardware, w, arrivals, durationMs, clientTimeoutMs, control,
                faults, policies, legacy, gainSweep, sampleMs, metrics);
    }

    /** The same scenario with another traffic duration (for short test runs). */
    Scenario withDuration(double ms) {
        return new Scenario(name, description, topology, hardware, workload, arrivals, ms, clientTimeoutMs, control,
                faults, policies, legacy, gainSweep, sampleMs, metrics);
    }

    /** Index of each engine id in {@code topology.engines()}. */
    static Map<String, Integer> indexOf(List<String> ids) {
        Map<String, Integer> m = new java.util.HashMap<>();
        for (int i = 0; i < ids.size(); i++) {
            m.put(ids.get(i), i);
        }
        return m;
    }
}
