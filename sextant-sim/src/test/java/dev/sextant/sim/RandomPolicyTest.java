package dev.sextant.sim;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class RandomPolicyTest {
    /** One gateway, four like engines, and a fifth the class may not use (another model). */
    private static final String FLEET = """
            name: four-alike
            duration_s: 30
            sample_s: 5
            hardware:
              small: {step_ms: 5, prefill_ms_per_token: 0.01, decode_ms_per_seq: 0.05, max_seqs: 16, kv_cache_tokens: 60000, chunk_tokens: 1024}
            workload:
              default: {turns_mean: 3, think_s: 2, first_prompt_tokens: 300, new_tokens_per_turn: 50, output_tokens: 40}
            topology:
              gateway_clusters:
                - {id: gw, region: us-east}
              engine_clusters:
                - {id: gpu, region: us-east}
              network_rtt_ms:
                gw: {gpu: 2}
              models:
                - {id: m, output_tokens: 40}
                - {id: other, output_tokens: 40}
              engines:
                - {id: e1, cluster: gpu, models: [m], hardware: small}
                - {id: e2, cluster: gpu, models: [m], hardware: small}
                - {id: e3, cluster: gpu, models: [m], hardware: small}
                - {id: e4, cluster: gpu, models: [m], hardware: small}
                - {id: x, cluster: gpu, models: [other], hardware: small}
              classes:
                - {id: chat, model: m, priority: 0}
              demand_rps:
                gw: {chat: 40}
            """;

    @Test
    void spreadsEvenlyOverTheEnginesTheClassMayUse_andNoneElse() throws Exception {
        Simulator.Run run = Simulator.simulate(ScenarioLoader.parse("four-alike.yaml", FLEET), "random", 3, null);
        assertThat(run.metrics().completed).isGreaterThan(800);
        double[] tokens = run.simulation().engines.stream().mapToDouble(e -> e.promptTokens).toArray();
        assertThat(tokens[4]).as("an engine of another model").isZero();
        double mean = (tokens[0] + tokens[1] + tokens[2] + tokens[3]) / 4;
        for (int i = 0; i < 4; i++) {
            // each request drawn alone: over ~1,000 requests an engine's share strays a few percent, not 20
            assertThat(tokens[i]).as("engine " + i).isBetween(0.8 * mean, 1.2 * mean);
        }
    }

    @Test
    void isNamedButNotInTheDefaultRuns() {
        assertThat(SimPolicies.ALL).contains("random");
        assertThat(SimPolicies.DEFAULT).doesNotContain("random");
        assertThat(SimPolicies.create("random", null).name()).isEqualTo("random");
    }
}
