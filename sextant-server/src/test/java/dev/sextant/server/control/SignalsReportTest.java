package dev.sextant.server.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sextant.config.TopologyLoader;
import dev.sextant.server.internal.Http;
import dev.sextant.topology.Topology;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** A gateway's report is checked whole before any of it counts. */
class SignalsReportTest {
    private static final long MINUTE = 60_000_000_000L;

    private final Topology talk;
    private final Signals signals = new Signals(3);

    SignalsReportTest() throws Exception {
        talk = TopologyLoader.load(Path.of("..", "examples", "talk.yaml"));
    }

    private void report(String json) throws Exception {
        signals.report(Http.JSON.readTree(json), talk, 0);
    }

    private double observedChat() {
        return signals.demand(talk, "observed", 0, MINUTE).get("east").getOrDefault("chat", 0.0);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            negative demand      | {"gateway":"east","demand_rps":{"chat":-1}}                                    | demand_rps.chat: -1 (expected: a finite number >= 0)
            infinite demand      | {"gateway":"east","demand_rps":{"chat":1e999}}                                 | demand_rps.chat:
            demand as text       | {"gateway":"east","demand_rps":{"chat":"9"}}                                   | demand_rps.chat: "9"
            negative requests    | {"gateway":"east","demand_rps":{"chat":9},"engines":{"east-1":{"requests":-5}}} | engines.east-1.requests: -5 (expected: a whole number >= 0)
            fractional errors    | {"gateway":"east","demand_rps":{"chat":9},"engines":{"east-1":{"errors":1.5}}}  | engines.east-1.errors: 1.5
            ttft not a number    | {"gateway":"east","demand_rps":{"chat":9},"engines":{"east-1":{"ttft_ms":"x"}}} | engines.east-1.ttft_ms: "x" (expected: a finite number >= 0)
            engine not an object | {"gateway":"east","demand_rps":{"chat":9},"engines":{"east-1":3}}              | engines.east-1: 3 (expected: an object)
            """)
    void aBadField_isRefusedNamingIt_andNothingOfTheReportCounts(String name, String json, String says)
            throws Exception {
        report("{\"gateway\":\"east\",\"demand_rps\":{\"chat\":100}}");

        assertThatThrownBy(() -> report(json)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining(says);
        assertThat(observedChat()).as("the demand of the report before").isEqualTo(100.0);
    }

    @Test
    void anEngineTheTopologyDoesNotHave_isSkipped_andTheRestCounts() throws Exception {
        report("{\"gateway\":\"east\",\"demand_rps\":{\"chat\":42},"
                + "\"engines\":{\"gone-7\":{\"requests\":5},\"east-1\":{\"requests\":5,\"errors\":0,\"ttft_ms\":9.5}}}");

        assertThat(observedChat()).isEqualTo(42.0);
        Map<String, Map<String, Object>> engines = signals.describe();
        assertThat(engines).containsKey("east-1").doesNotContainKey("gone-7");
    }
}
