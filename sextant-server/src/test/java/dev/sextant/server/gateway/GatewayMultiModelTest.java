package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.config.TopologyLoader;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.snapshot.Snapshot;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;

/**
 * Two models of very different durations behind one gateway keep their conversations on their engines as well as
 * one gateway per model does, on live sockets (docs/request-path.md, "Bounded load", per pool; the simulator's
 * {@code multi-model.yaml}). Engines l1–l3 serve model large (20 tokens an answer, about 0.4 s), s1–s3 model small
 * (2 tokens, about 0.04 s); multi-turn conversations of both arrive at once, each with its own
 * {@code prompt_cache_key}. The measure: the share of later turns that land on the engine of their conversation's
 * first turn.
 */
class GatewayMultiModelTest {
    private static final double STEP_MS = 20;
    private static final int LARGE_TOKENS = 20;
    private static final int SMALL_TOKENS = 2;
    private static final int TURNS = 4;
    /**
     * Closed-loop conversations of model large, about 8 in flight per large engine: the bounded load's minimum, so
     * that where the keys crowd an engine its bound decides (⌈1.25 × ⅓ × (m + 1)⌉ = 11 at m = 24), as it should for a
     * gateway serving model large alone. Model small's 3 carry about as many requests per second.
     */
    private static final int LARGE_WORKERS = 24;
    private static final int SMALL_WORKERS = 3;
    private static final int CONVERSATIONS_PER_WORKER = 8;
    /**
     * How far apart the two set-ups' shares of turns kept on their conversation's first engine may be: 6 points, or 3
     * standard errors of the difference when that is more. The 2-point target is the simulator's to hold
     * ({@code multi-model.yaml} against {@code variants/multi-model-split.yaml}, docs/evaluation.md); here, on live
     * sockets, the share moves with the machine's load (gaps of 4 to 5 points were seen with other builds running,
     * none when quiet), while the fault this guards against, bounded load comparing unlike units, cost 17 points.
     */
    private static final double POINTS = 6.0;
    private static final Duration DEADLINE = Duration.ofSeconds(90);

    @Test
    void oneGatewayForTwoModels_keepsConversationsOnTheirEngines_asOneGatewayPerModelDoes() throws Exception {
        List<EngineEmulator> engines = new ArrayList<>();
        try {
            StringBuilder endpoints = new StringBuilder();
            for (String id : List.of("l1", "l2", "l3", "s1", "s2", "s3")) {
                boolean large = id.startsWith("l");
                EngineEmulator e = EngineEmulator.start(EngineConfig.defaults(id, large ? "large" : "small")
                        .withLatency(64, 0.0, STEP_MS, 0.0).withDefaultMaxTokens(large ? LARGE_TOKENS : SMALL_TOKENS));
                engines.add(e);
                endpoints.append("  - {id: ").append(id).append(", cluster: c, endpoint: 'http://127.0.0.1:")
                        .append(e.port()).append("', models: [").append(large ? "large" : "small")
                        .append("], capacity_rps: ").append(large ? 150 : 1500).append(", profile: {ttft_ms: ")
                        .append(STEP_MS).append(", tbt_ms: ").append(STEP_MS).append(", tbt_slope: 0}}\n");
            }
            Snapshot snapshot = snapshot(endpoints.toString());

            Stickiness together = new Stickiness();
            Stickiness apart = new Stickiness();
            try (Gateway both = start("both", snapshot); Gateway large = start("large-only", snapshot);
                 Gateway small = start("small-only", snapshot)) {
                run(List.of(both, large), List.of(both, small), List.of(together, apart));
            }
            String summary = "one gateway: " + together + "; one per model: " + apart;
            System.out.println("multi-model: " + summary);
            for (String model : List.of("large", "small")) {
                assertThat(together.turns(model)).as("turns measured, %s: %s", model, summary).isGreaterThan(100);
                assertThat(apart.turns(model)).as("turns measured, %s: %s", model, summary).isGreaterThan(100);
                double p1 = together.percent(model) / 100;
                double p2 = apart.percent(model) / 100;
                double standardError = 100 * Math.sqrt(p1 * (1 - p1) / together.turns(model)
                        + p2 * (1 - p2) / apart.turns(model));
                double allowed = Math.max(POINTS, 3 * standardError);
                assertThat(Math.abs(together.percent(model) - apart.percent(model)))
                        .as("model %s: turns on their conversation's first engine, one gateway vs one per model "
                                + "(within %.1f points): %s", model, allowed, summary)
                        .isLessThanOrEqualTo(allowed);
            }
            assertThat(together.failed.sum() + apart.failed.sum()).as("answers other than 200: %s", summary).isZero();
        } finally {
            engines.forEach(EngineEmulator::close);
        }
    }

    private static Gateway start(String cluster, Snapshot snapshot) {
        return Gateway.start(GatewayConfig.defaults(cluster).withAccessLog(false), SnapshotSource.fixed(snapshot), 2);
    }

    /**
     * Conversations of both models at once, the same keys in the same order to each set-up i: model large's to
     * {@code large[i]}, model small's to {@code small[i]}, counted in {@code into[i]}; model small's go on until model
     * large's are done. The set-ups run side by side on the same engines, so that they meet the same engine steps and
     * the same machine: what differs is only the gateways (each bounds the load of its own requests).
     */
    private static void run(List<Gateway> large, List<Gateway> small, List<Stickiness> into) throws InterruptedException {
        List<ClosedLoop> loops = new ArrayList<>();
        try {
            List<ClosedLoop> largeLoops = new ArrayList<>();
            for (int i = 0; i < into.size(); i++) {
                Stickiness s = into.get(i);
                loops.add(new ClosedLoop("small-" + i, small.get(i).port(), SMALL_WORKERS, Long.MAX_VALUE,
                        (w, n) -> body("small", w, n), (w, n, status, engine) -> s.answered("small", w, n, status, engine)));
                largeLoops.add(new ClosedLoop("large-" + i, large.get(i).port(), LARGE_WORKERS,
                        (long) CONVERSATIONS_PER_WORKER * TURNS, (w, n) -> body("large", w, n),
                        (w, n, status, engine) -> s.answered("large", w, n, status, engine)));
            }
            loops.addAll(largeLoops);
            for (ClosedLoop l : largeLoops) {
                assertThat(l.awaitDone(DEADLINE)).as("model large's conversations done: %s", into).isTrue();
            }
        } finally {
            for (ClosedLoop l : loops) {
                l.close();
            }
        }
    }

    /** Turn n % TURNS of conversation n / TURNS of {@code worker}. */
    private static String body(String model, int worker, long n) {
        return "{\"model\":\"" + model + "\",\"prompt_cache_key\":\"" + model + "-" + worker + "-" + n / TURNS
                + "\",\"messages\":[{\"role\":\"user\",\"content\":\"turn " + n % TURNS + "\"}]}";
    }

    /** Per model: later turns answered, and those on the engine of their conversation's first turn. */
    private static final class Stickiness {
        final Map<String, String> firstEngine = new ConcurrentHashMap<>();
        final Map<String, LongAdder> turns = new ConcurrentHashMap<>();
        final Map<String, LongAdder> kept = new ConcurrentHashMap<>();
        final LongAdder failed = new LongAdder();

        void answered(String model, int worker, long n, int status, String engine) {
            if (status != 200 || engine == null) {
                failed.increment();
                return;
            }
            String conversation = model + "-" + worker + "-" + n / TURNS;
            if (n % TURNS == 0) {
                firstEngine.put(conversation, engine);
                return;
            }
            turns.computeIfAbsent(model, m -> new LongAdder()).increment();
            if (engine.equals(firstEngine.get(conversation))) {
                kept.computeIfAbsent(model, m -> new LongAdder()).increment();
            }
        }

        long turns(String model) {
            LongAdder t = turns.get(model);
            return t == null ? 0 : t.sum();
        }

        double percent(String model) {
            LongAdder k = kept.get(model);
            return turns(model) == 0 ? 0 : 100.0 * (k == null ? 0 : k.sum()) / turns(model);
        }

        @Override
        public String toString() {
            return String.format(Locale.ROOT, "large %.1f%% of %d turns, small %.1f%% of %d turns, %d failed",
                    percent("large"), turns("large"), percent("small"), turns("small"), failed.sum());
        }
    }

    /**
     * The optimizer's snapshot for three gateway clusters in one place: {@code both} serves models large and small,
     * {@code large-only} and {@code small-only} one each, at the same demand per model.
     */
    private static Snapshot snapshot(String engines) throws Exception {
        String yaml = "gateway_clusters: [{id: both, region: r}, {id: large-only, region: r}, {id: small-only, region: r}]\n"
                + "engine_clusters: [{id: c, region: r}]\n"
                + "network_rtt_ms: {both: {c: 1}, large-only: {c: 1}, small-only: {c: 1}}\n"
                + "models: [{id: large, output_tokens: " + LARGE_TOKENS + "}, {id: small, output_tokens: "
                + SMALL_TOKENS + "}]\n"
                + "engines:\n" + engines
                + "classes: [{id: large, model: large}, {id: small, model: small}]\n"
                + "demand_rps: {both: {large: 60, small: 60}, large-only: {large: 60}, small-only: {small: 60}}\n";
        return Policies.optimal().solve(TopologyLoader.load(yaml, "multi-model.yaml"), SolveOptions.defaults());
    }
}
