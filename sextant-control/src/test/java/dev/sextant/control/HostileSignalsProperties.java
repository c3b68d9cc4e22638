package dev.sextant.control;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.signal.EngineMetrics;
import dev.sextant.signal.PrometheusText;
import dev.sextant.snapshot.Route;
import dev.sextant.topology.Engine;
import dev.sextant.topology.Topology;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.LongRange;

/**
 * Engines, vLLM or SGLang, whose {@code /metrics} say anything at all (gauges negative, not finite or in the
 * billions, counters that fall, jump or are NaN, histograms whose buckets fall or whose sums are negative, series
 * missing, scrapes failing), gateways whose reports carry the largest counts a report may, and scrapes a millisecond
 * apart, through the text parser and the whole loop: every step makes a snapshot, its weights are fractions, every
 * estimate is a finite number. One engine's broken exporter must not stop the fleet's solve. Before the bounds it
 * found, it did: an exception at every step (a law, a model's output length, the cache discount or a profile beyond
 * any number, and a cache discount of 1e40 ms, finite, on which the solve's arithmetic gave NaN), and a batch of a
 * billion places that made one step run for minutes; later, the seeds of {@link #seedsThatOnceFailed}.
 */
class HostileSignalsProperties {
    private static final double[] EXTREMES = {0, 1, -1, 0.5, 1e-300, 1e300, Double.NaN, Double.POSITIVE_INFINITY,
        Double.NEGATIVE_INFINITY, 1e9, 3.7, -1e9, 1e15, 1e16};
    /** The series an engine of one kind exports, by how they behave. */
    private record Names(String[] gauges, String[] counters, String[] histograms) {}

    private static final Names VLLM = new Names(
            new String[] {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"},
            new String[] {"vllm:request_success_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
                "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"},
            new String[] {"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
                "vllm:request_queue_time_seconds", "vllm:request_generation_tokens"});
    private static final Names SGLANG = new Names(
            new String[] {"sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage",
                "sglang:cache_hit_rate", "sglang:max_running_requests"},
            new String[] {"sglang:num_requests_total", "sglang:prompt_tokens_total", "sglang:generation_tokens_total"},
            new String[] {"sglang:time_to_first_token_seconds", "sglang:inter_token_latency_seconds",
                "sglang:queue_time_seconds"});
    private static final double[] BOUNDS = {0.001, 0.01, 0.1, 1, 10};

    @Property(tries = 5)
    void anyVllmSignals_everyStepMakesASnapshot_ofFractions_andFiniteEstimates(
            @ForAll @LongRange(min = 1, max = 1_000_000_000L) long seed) {
        run(seed, VLLM);
    }

    @Property(tries = 5)
    void anySglangSignals_everyStepMakesASnapshot_ofFractions_andFiniteEstimates(
            @ForAll @LongRange(min = 1, max = 1_000_000_000L) long seed) {
        run(seed, SGLANG);
    }

    /**
     * Seeds that once failed: a speed reading of NaN (SGLang 3534), a histogram count of 1e-300 that made a prompt of
     * 1e309 tokens (vLLM 1085), a prompt of 1e-300 tokens that made the prior's cost per token infinite (SGLang 249),
     * and a warm start from prices in the trillions of ms that gave shed fractions of NaN (vLLM 574502378).
     */
    @Example
    void seedsThatOnceFailed() {
        run(3534, SGLANG);
        run(1085, VLLM);
        run(249, SGLANG);
        run(574502378L, VLLM);
    }

    private static void run(long seed, Names names) {
        SplittableRandom r = new SplittableRandom(seed);
        Topology t = ControlLoopTest.fleet(ControlLoopTest.truths(Map.of()), Map.of(), 200);
        ManualTicker ticker = new ManualTicker();
        ControlLoop loop = ControlLoop.create(t, ControlOptions.defaults(), ticker, null);
        loop.step();
        Map<String, double[]> counters = new HashMap<>();
        for (int i = 0; i < 40; i++) {
            ticker.advanceSeconds(r.nextInt(4) == 0 ? 0.001 : 5);
            for (Engine e : t.engines()) {
                if (r.nextInt(10) == 0) {
                    loop.observe(EngineScrape.failed(e.id(), ticker.nanos(), "connection refused"));
                } else {
                    String text = metrics(r, names, counters.computeIfAbsent(e.id(), k -> new double[16]));
                    loop.observe(EngineScrape.of(e.id(), ticker.nanos(), EngineMetrics.from(PrometheusText.parse(text))));
                }
            }
            loop.observe(report(r, t, ticker.nanos()));
            for (Canary c : loop.canariesDue()) {
                loop.observe(r.nextBoolean() ? CanaryResult.failed(c.engine(), ticker.nanos(), "HTTP 500")
                        : CanaryResult.ok(c.engine(), ticker.nanos(), r.nextDouble() * 1e4, r.nextDouble() * 100));
            }
            if (i % 2 == 1 || loop.urgent()) {
                Step s = loop.step();
                assertThat(s.snapshot()).as("step %d: %s", i, s.reason()).isNotNull();
                Route route = loop.published().route("gw", "chat");
                if (route != null) {
                    assertThat(route.weights().values()).allSatisfy(w -> assertThat(w).isBetween(0.0, 1.0));
                }
                assertThat(loop.estimates().engines().values()).allSatisfy(est -> {
                    assertThat(est.capacityRps()).as("%s", est).isFinite().isNotNegative();
                    assertThat(est.batchSlots()).as("%s", est).isFinite().isPositive();
                });
            }
        }
    }

    /** A scrape: each series present or not, its value plausible, extreme, or a counter's jump or reset. */
    private static String metrics(SplittableRandom r, Names names, double[] counters) {
        String[] counterNames = names.counters();
        String[] histograms = names.histograms();
        StringBuilder b = new StringBuilder();
        for (String g : names.gauges()) {
            if (r.nextInt(6) > 0) {
                b.append(g).append("{model_name=\"m\"} ").append(text(value(r))).append('\n');
            }
        }
        for (int i = 0; i < counterNames.length; i++) {
            counters[i] = next(r, counters[i], 1000);
            if (r.nextInt(8) > 0) {
                b.append(counterNames[i]).append("{model_name=\"m\"} ").append(text(counters[i])).append('\n');
            }
        }
        for (int i = 0; i < histograms.length; i++) {
            if (r.nextInt(6) == 0) {
                continue;
            }
            String h = histograms[i];
            int c = counterNames.length + i;
            double count = counters[c] = next(r, counters[c], 500);
            double cumulative = 0;
            for (double le : BOUNDS) {
                cumulative = r.nextInt(10) == 0 ? value(r) : Math.min(count, cumulative + r.nextDouble() * count / 3);
                b.append(h).append("_bucket{model_name=\"m\",le=\"").append(le).append("\"} ").append(text(cumulative))
                        .append('\n');
            }
            b.append(h).append("_bucket{model_name=\"m\",le=\"+Inf\"} ").append(text(count)).append('\n');
            b.append(h).append("_count{model_name=\"m\"} ").append(text(count)).append('\n');
            b.append(h).append("_sum{model_name=\"m\"} ").append(text(r.nextInt(5) == 0 ? value(r)
                    : count * r.nextDouble())).append('\n');
        }
        return b.toString();
    }

    /** A counter's next value: mostly up by up to {@code step}, sometimes reset to 0, sometimes anything. */
    private static double next(SplittableRandom r, double v, double step) {
        int k = r.nextInt(10);
        return k < 7 ? v + r.nextDouble() * step : k == 7 ? 0 : value(r);
    }

    /** A plausible value a third of the time, else an extreme one. */
    private static double value(SplittableRandom r) {
        return r.nextInt(3) == 0 ? EXTREMES[r.nextInt(EXTREMES.length)] : r.nextDouble() * Math.pow(10, r.nextInt(8) - 2);
    }

    private static String text(double v) {
        return Double.isNaN(v) ? "NaN" : v == Double.POSITIVE_INFINITY ? "+Inf" : v == Double.NEGATIVE_INFINITY ? "-Inf"
                : Double.toString(v);
    }

    /** A report the parser would let through: counts up to its largest, means from a microsecond to a day. */
    private static GatewayReport report(SplittableRandom r, Topology t, long at) {
        Map<String, GatewayReport.EngineOutcomes> outcomes = new TreeMap<>();
        for (Engine e : t.engines()) {
            if (r.nextInt(3) == 0) {
                continue;
            }
            long attempts = r.nextInt(10) == 0 ? MAX_COUNT : r.nextInt(2000);
            long ok = Math.min(attempts, r.nextInt(2000));
            outcomes.put(e.id(), new GatewayReport.EngineOutcomes(attempts, ok, 0, 0, attempts - ok, 0, mean(r),
                    mean(r), mean(r), mean(r), r.nextInt(3), r.nextInt(2)));
        }
        long arrivals = r.nextInt(10) == 0 ? MAX_COUNT : r.nextInt(5000);
        return new GatewayReport("gw", "", at, r.nextInt(5) == 0 ? 1e-3 : 5, Map.of("chat", arrivals), outcomes,
                Map.of(), Map.of(), null);
    }

    /** The largest count a gateway's report may carry (the control plane's report parser refuses more). */
    private static final long MAX_COUNT = 1_000_000_000_000L;

    private static GatewayReport.Mean mean(SplittableRandom r) {
        return r.nextInt(4) == 0 ? GatewayReport.Mean.NONE
                : new GatewayReport.Mean(r.nextDouble() * Math.pow(10, r.nextInt(11) - 3), r.nextInt(1000) + 1);
    }
}
