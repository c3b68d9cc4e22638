package dev.sextant.sim;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class SimulationTest {
    /** Two regions, an EU-only class, a crash, a slow engine, a cut link and a surge, all within 40 s. */
    static final String FAULTY = """
            name: faulty
            duration_s: 40
            client_timeout_s: 20
            sample_s: 5
            hardware:
              small: {step_ms: 5, prefill_ms_per_token: 0.01, decode_ms_per_seq: 0.05, max_seqs: 16, kv_cache_tokens: 60000, chunk_tokens: 1024}
            workload:
              default: {turns_mean: 3, think_s: 2, first_prompt_tokens: 300, new_tokens_per_turn: 50, output_tokens: 40}
            control: {scrape_s: 2, signal_delay_s: 1, solve_s: 4, propagation_s: 0.5, health_check_s: 2, connect_timeout_s: 0.5}
            legacy: {gain: 1.0, period_s: 2}
            topology:
              gateway_clusters:
                - {id: us, region: us-east}
                - {id: eu, region: eu-west}
              engine_clusters:
                - {id: gpu-us, region: us-east}
                - {id: gpu-eu, region: eu-west}
                - {id: gpu-eu2, region: eu-central}
              network_rtt_ms:
                us: {gpu-us: 2, gpu-eu: 80, gpu-eu2: 90}
                eu: {gpu-us: 80, gpu-eu: 2, gpu-eu2: 15}
              models:
                - {id: m, output_tokens: 40}
              engines:
                - {id: us-1, cluster: gpu-us, models: [m], hardware: small}
                - {id: us-2, cluster: gpu-us, models: [m], hardware: small}
                - {id: eu-1, cluster: gpu-eu, models: [m], hardware: small}
                - {id: eu-2, cluster: gpu-eu2, models: [m], hardware: small}
              classes:
                - {id: chat, model: m, priority: 0}
                - {id: chat-eu, model: m, residency: [eu-west, eu-central], priority: 1}
              demand_rps:
                us: {chat: 12}
                eu: {chat: 6, chat-eu: 8}
            faults:
              - {kind: engine_crash, at_s: 8, duration_s: 10, engines: [eu-1]}
              - {kind: engine_slowdown, at_s: 5, duration_s: 20, engines: [us-2], factor: 4}
              - {kind: partition, at_s: 12, duration_s: 10, gateway: eu, engine_cluster: gpu-eu2}
              - {kind: demand_surge, at_s: 20, duration_s: 8, factor: 3}
              - {kind: control_plane_outage, at_s: 25, duration_s: 10}
            """;

    static Scenario faulty() throws ScenarioException {
        return ScenarioLoader.parse("faulty.yaml", FAULTY);
    }

    /** The faulty scenario without its faults, and with {@code fault} alone if not null. */
    static Scenario calm(String fault) throws ScenarioException {
        String calm = FAULTY.replaceAll("(?s)faults:.*", "");
        return ScenarioLoader.parse("calm.yaml", fault == null ? calm : calm + "faults:\n  - " + fault + "\n");
    }

    static List<String> policies() {
        return SimPolicies.ALL;
    }

    /**
     * Engines whose every step takes an hour (a mistake in a file, or an engine that hangs) do not keep the run going:
     * it waits {@link Simulation#MAX_DRAIN_MS} after the traffic for what is in flight, then ends it as failed, and
     * the report says how many.
     */
    @ParameterizedTest
    @ValueSource(strings = {"nearest", "least-request"}) // Sextant sheds it all: the engines' derived capacity is nil
    void enginesThatNeverFinish_endTheRunAfterTheDrainLimit_withTheirRequestsFailed(String policy) throws Exception {
        Scenario s = ScenarioLoader.parse("stuck.yaml", FAULTY.replaceAll("(?s)faults:.*", "")
                .replace("step_ms: 5,", "step_ms: 3600000,"));
        Simulator.Run run = Simulator.simulate(s, policy, 7, null);
        Metrics m = run.metrics();
        assertThat(m.generated).isPositive();
        assertThat(m.completed).isZero();
        assertThat(m.unfinished()).isPositive().isLessThanOrEqualTo(m.failed);
        assertThat(m.completed + m.shed + m.failed).isEqualTo(m.generated);
        assertThat(m.open()).isZero();
        assertThat(m.endMs).isLessThanOrEqualTo(s.durationMs() + Simulation.MAX_DRAIN_MS + s.sampleMs());
    }

    @ParameterizedTest
    @MethodSource("policies")
    void everyRequestEndsExactlyOnce_underFaults(String policy) throws Exception {
        Simulator.Run run = Simulator.simulate(faulty(), policy, 7, null);
        Metrics m = run.metrics();
        assertThat(m.generated).isGreaterThan(500);
        assertThat(m.completed + m.shed + m.failed).isEqualTo(m.generated);
        assertThat(m.open()).isZero();
        assertThat(m.completed).isGreaterThan(m.generated / 2);
    }

    @ParameterizedTest
    @MethodSource("policies")
    void noRequestIsSentOutsideItsAllowedSet(String policy) throws Exception {
        Simulator.Run run = Simulator.simulate(faulty(), policy, 3, null);
        assertThat(run.summary().residencyViolations()).isZero();
        assertThat(run.metrics().attempts).isGreaterThan(0);
    }

    @ParameterizedTest
    @MethodSource("policies")
    void sameScenarioAndSeed_giveIdenticalResults(String policy) throws Exception {
        Simulator.Run a = Simulator.simulate(faulty(), policy, 11, null);
        Simulator.Run b = Simulator.simulate(faulty(), policy, 11, null);
        assertThat(b.summary()).isEqualTo(a.summary());
        assertThat(b.metrics().series).usingRecursiveComparison().isEqualTo(a.metrics().series);
        assertThat(b.metrics().ttft).isEqualTo(a.metrics().ttft);
    }

    @Property(tries = 4)
    void conservationHolds_forAnySeed(@ForAll @LongRange(min = 0, max = 1_000_000) long seed) throws Exception {
        Metrics m = Simulator.simulate(faulty().withDuration(15_000), "least-request", seed, null).metrics();
        assertThat(m.completed + m.shed + m.failed).isEqualTo(m.generated);
    }

    @ParameterizedTest
    @MethodSource("policies")
    void everyPolicySeesTheSameConversations(String policy) throws Exception {
        // without faults or timeouts the set of first turns does not depend on the policy
        Scenario calm = ScenarioLoader.parse("calm.yaml", FAULTY.replaceAll("(?s)faults:.*", ""));
        long first = Simulator.simulate(calm, "round-robin", 5, null).metrics().generated;
        long other = Simulator.simulate(calm, policy, 5, null).metrics().generated;
        // later turns depend on completion times; counts stay within a few percent
        assertThat((double) other).isCloseTo(first, org.assertj.core.data.Percentage.withPercentage(5));
    }

    /**
     * eu's round trip to its own engine cluster grows from 2 to 100 ms for the whole run, while gpu-eu2 is 15 ms away:
     * requests sent there pay the longer round trip, the gateways' probes measure it, and Sextant's control loop,
     * planning with what they measure, moves eu's traffic to gpu-eu2. Before the simulated probes reported the
     * topology's round trips, it never did.
     */
    /** Shared system prompts are drawn with probability ∝ 1/(i + 1): for four, 12/25, 6/25, 4/25 and 3/25. */
    @Test
    void zipf_drawsEachPrompt_inProportionToOneOverItsRank() {
        double[] sums = {1, 1.5, 1.5 + 1.0 / 3, 1.5 + 1.0 / 3 + 0.25};
        java.util.SplittableRandom rng = new java.util.SplittableRandom(5);
        int[] seen = new int[4];
        int n = 200_000;
        for (int k = 0; k < n; k++) {
            seen[Simulation.zipf(rng, sums)]++;
        }
        double[] expected = {12.0 / 25, 6.0 / 25, 4.0 / 25, 3.0 / 25};
        for (int i = 0; i < 4; i++) {
            // five standard deviations of a binomial share over 200,000 draws
            double sd = Math.sqrt(expected[i] * (1 - expected[i]) / n);
            assertThat(seen[i] / (double) n).as("prompt %d", i).isCloseTo(expected[i],
                    org.assertj.core.api.Assertions.within(5 * sd));
        }
        assertThat(Simulation.zipf(new java.util.SplittableRandom(1), new double[] {1})).isZero();
    }

    @Test
    void linkSlowdown_requestsPayTheLongerRoundTrip_andTheLoopPlansWithWhatTheProbesMeasure() throws Exception {
        Scenario normal = calm(null);
        Scenario slowLink = calm("{kind: link_slowdown, at_s: 0, duration_s: 40, gateway: eu, engine_cluster: gpu-eu, "
                + "factor: 50}");
        int eu = 1;
        int eu1 = 2;
        Metrics before = Simulator.simulate(normal, "sextant", 4, null).metrics();
        Metrics after = Simulator.simulate(slowLink, "sextant", 4, null).metrics();
        assertThat(after.attemptsTo[eu][eu1]).as("eu's attempts at eu-1, %d with the link as configured",
                before.attemptsTo[eu][eu1]).isLessThan(before.attemptsTo[eu][eu1] / 3);
        assertThat(after.attemptsTo[0][eu1]).as("us's link to gpu-eu is as configured")
                .isGreaterThanOrEqualTo(before.attemptsTo[0][eu1] / 2);

        double nearestBefore = Simulator.simulate(normal, "nearest", 4, null).metrics().ttft.getValueAtPercentile(99);
        double nearestAfter = Simulator.simulate(slowLink, "nearest", 4, null).metrics().ttft.getValueAtPercentile(99);
        assertThat(nearestAfter - nearestBefore).as("µs: nearest goes to gpu-eu2, 13 ms farther than gpu-eu was")
                .isGreaterThan(5_000);
    }

    @Test
    void workloadShift_scalesTheTokensOfTheTurnsItsGatewaySends_andNoOtherGatewaysTurns() throws Exception {
        Scenario normal = calm(null);
        Scenario shifted = calm("{kind: workload_shift, at_s: 0, duration_s: 40, gateway: us, factor: 3, "
                + "prompt_factor: 2}");
        // nearest keeps each gateway's turns in its own region: us on us-1 and us-2, eu on eu-1
        Simulation before = Simulator.simulate(normal, "nearest", 5, null).simulation();
        Simulation after = Simulator.simulate(shifted, "nearest", 5, null).simulation();
        double[] output = new double[2];
        double[] prompt = new double[2];
        for (int j : new int[] {0, 2}) {
            dev.sextant.signal.EngineMetrics b = before.engines.get(j).metrics();
            dev.sextant.signal.EngineMetrics a = after.engines.get(j).metrics();
            output[j / 2] = (a.generationTokens() / a.successCount()) / (b.generationTokens() / b.successCount());
            prompt[j / 2] = (a.promptTokens() / a.successCount()) / (b.promptTokens() / b.successCount());
        }
        assertThat(output[0]).as("us-1: output tokens per request against the calm run").isBetween(2.7, 3.3);
        assertThat(prompt[0]).as("us-1: prompt tokens per request (the context holds the longer answers too)")
                .isGreaterThan(1.8);
        assertThat(output[1]).as("eu-1: output tokens per request against the calm run").isBetween(0.9, 1.1);
        assertThat(prompt[1]).as("eu-1: prompt tokens per request against the calm run").isBetween(0.9, 1.1);
    }

    @ParameterizedTest
    @MethodSource("policies")
    void crashOfAnEngine_failsOrRetriesItsRequests_andOthersCarryOn(String policy) throws Exception {
        Simulator.Run run = Simulator.simulate(faulty(), policy, 9, null);
        EngineSim eu1 = run.simulation().engines.get(2);
        assertThat(eu1.isUp()).isTrue(); // recovered at 18 s
        assertThat(run.metrics().retries + run.metrics().failed).isGreaterThan(0);
    }
}
