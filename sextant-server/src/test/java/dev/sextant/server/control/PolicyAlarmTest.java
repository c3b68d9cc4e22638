package dev.sextant.server.control;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.gateway.LogCapture;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The policy path's alarm: raised loudly, and its end said once, at INFO, as every other recovery is. */
class PolicyAlarmTest {
    @Test
    void failing_isSevere_andItsEnd_isOneInfoLineSayingHowLongItLasted() {
        AtomicLong now = new AtomicLong(1_000_000_000L);
        PolicyAlarm alarm = new PolicyAlarm(now::get, () -> null, new SimpleMeterRegistry());
        try (LogCapture log = new LogCapture()) {
            alarm.recovered(); // nothing was failing: nothing to say
            alarm.failed("policy step threw: boom", null);
            assertThat(alarm.error()).isEqualTo("policy step threw: boom");
            now.addAndGet(12_000_000_000L);
            alarm.recovered();
            alarm.recovered();
            assertThat(alarm.error()).isNull();
            List<String> lines = log.lines().stream().filter(l -> l.contains(ControlPlane.class.getName())).toList();
            assertThat(lines).hasSize(2);
            assertThat(lines.get(0)).startsWith("SEVERE ").contains("POLICY FAILING: policy step threw: boom");
            assertThat(lines.get(1))
                    .isEqualTo("INFO " + ControlPlane.class.getName() + ": policy steps succeed again after 12 s of failures");
        }
    }
}
