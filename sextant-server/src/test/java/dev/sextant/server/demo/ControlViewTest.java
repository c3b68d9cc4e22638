package dev.sextant.server.demo;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The live summary's engine lines, from a control plane's {@code /healthz}. */
class ControlViewTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static String engine(double capacity, String condition) {
        return "{\"condition\":\"" + condition + "\",\"capacity_rps\":" + capacity + ",\"configured_rps\":40,"
                + "\"slowdown\":1,\"why\":\"no answer\",\"capacity_why\":\"capacity " + capacity
                + " req/s, estimated from 3160 requests over 59 s (30 intervals of its engines); configured 40.0\"}";
    }

    @Test
    void enginesWhoseLinesReadAlike_shareOneLine_andOthersKeepTheirOwn() throws Exception {
        String health = "{\"engines\":{\"use-1\":" + engine(38.93, "healthy") + ",\"use-2\":" + engine(38.94, "healthy")
                + ",\"usw-1\":" + engine(36.5, "healthy") + ",\"usw-2\":" + engine(38.93, "down") + "}}";
        ControlView v = new ControlView(JSON.readTree(health), Map.of(), null);

        assertThat(v.engineLines()).hasSize(3);
        assertThat(v.engineLines().get(0)).startsWith("  use-1 use-2  healthy  38.9 req/s (configured 40)")
                .endsWith("estimated from 3160 requests over 59 s");
        assertThat(v.engineLines().get(1)).startsWith("  usw-1        healthy  36.5 req/s");
        assertThat(v.engineLines().get(2)).startsWith("  usw-2        down     38.9 req/s").endsWith("; no answer");
    }

    @Test
    void demand_observedOrHeldAtTheConfiguredFloor_eachOnShortWords() throws Exception {
        String explained = "{\"estimates\":{\"demand\":{"
                + "\"chat\":{\"rps\":100,\"configured_rps\":100,\"reported_rps\":28.61,\"why\":\"configured, until the "
                + "reports settle: 286 requests in 10 s of reports from 1 gateway process so far show 28.6 (a ramp, or too "
                + "few reports to tell one from a level)\"},"
                + "\"chat-eu\":{\"rps\":8.9,\"configured_rps\":30,\"reported_rps\":8.9,\"why\":\"observed: 89 requests "
                + "in 10 s of reports from 1 gateway process; configured 30.0\"}}}}";
        ControlView v = new ControlView(JSON.readTree("{}"), Map.of("east\u0000chat", JSON.readTree(explained)), null);

        assertThat(v.demand("east")).isEqualTo("chat 100 req/s configured, until the reports settle (they show 28.6); "
                + "chat-eu 8.9 req/s observed (configured 30)");
    }
}
