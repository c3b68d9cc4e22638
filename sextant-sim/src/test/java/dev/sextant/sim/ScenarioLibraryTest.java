package dev.sextant.sim;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** A short run of every scenario in examples/scenarios under Sextant and one baseline. */
class ScenarioLibraryTest {
    @ParameterizedTest
    @CsvSource({
        "talk-example.yaml, 20, nearest",
        "oscillation.yaml, 20, legacy-feedback",
        "regional-failure.yaml, 20, waterfall",
        "overload.yaml, 20, least-request",
        "large-fleet.yaml, 4, prefix-aware",
        "keyless-shared-prompts.yaml, 20, prefix-aware",
    })
    void shortRun_endsEveryRequest_andRespectsResidency(String file, int seconds, String baseline) throws Exception {
        Scenario s = ScenarioLoader.load(ScenarioLoaderTest.SCENARIOS.resolve(file)).withDuration(seconds * 1000.0);
        for (String policy : new String[] {"sextant", baseline}) {
            Simulator.Run run = Simulator.simulate(s, policy, 1, null);
            Metrics m = run.metrics();
            assertThat(m.generated).as(policy).isGreaterThan(50);
            assertThat(m.completed + m.shed + m.failed).as(policy).isEqualTo(m.generated);
            assertThat(m.residencyViolations).as(policy).isZero();
            assertThat(m.completed).as(policy).isGreaterThan(m.generated / 2);
        }
    }

    /**
     * Keyless clients whose first turns share system prompts across the classes of a gateway that serves two models:
     * a prompt one model's engine caches is no reason to send another model's request there, under any policy.
     */
    @Test
    void keylessClientsOfTwoModels_everyPolicyKeepsEachClassOnItsAllowedEngines() throws Exception {
        Scenario s = ScenarioLoader.load(ScenarioLoaderTest.SCENARIOS.resolve("multi-model.yaml"))
                .withDuration(30_000.0).withClients(new Clients(1500, 4, 0.2));
        for (String policy : SimPolicies.ALL) {
            Metrics m = Simulator.simulate(s, policy, 1, null).metrics();
            assertThat(m.generated).as(policy).isGreaterThan(1000);
            assertThat(m.residencyViolations).as(policy).isZero();
        }
    }
}
