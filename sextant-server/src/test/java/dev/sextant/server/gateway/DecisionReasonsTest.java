package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class DecisionReasonsTest {

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            key                              | key
            key,fallback                     | key
            spill:bounded-load               | spill:bounded-load
            spill:overload,fallback          | spill:overload
            spaced:prefill                   | spaced:prefill
            spaced:full-batch,fallback       | spaced:full-batch
            recent,fallback                  | recent
            spill:ejected                    | spill:ejected
            least-full,fallback              | least-full
            spill:limit                      | spill:limit
            retry:connect-error,key          | retry:connect-error
            retry:timeout,nearest-healthy    | retry:timeout
            retry:engine-busy,same-engine,fallback | retry:engine-busy
            refused:shed                     | refused:shed
            """)
    void label_isTheFirstWord_keepingARetrysOutcome(String reason, String label) {
        assertThat(DecisionReasons.label(reason)).isEqualTo(label);
        assertThat(DecisionReasons.labels()).as("a label the counter knows from the start").contains(label);
    }

    @Test
    void labels_areBounded_byTheDataPlanesWordsOutcomesAndRefusals() {
        assertThat(DecisionReasons.labels()).hasSize(27).doesNotHaveDuplicates()
                .contains("nearest", "skip:ejected", "skip:limit", "retry:server-error", "refused:unknown-model",
                        "refused:engine-limit", "refused:attempts-exhausted", "refused:no-engine-in-service")
                .noneMatch(l -> l.contains(","));
    }
}
