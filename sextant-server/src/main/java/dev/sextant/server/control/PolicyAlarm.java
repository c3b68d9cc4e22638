package dev.sextant.server.control;

import dev.sextant.request.Ticker;
import dev.sextant.snapshot.Snapshot;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The alarm of a failing policy path: raised when a step threw or found no snapshot (or a catch-up failed), said
 * in a SEVERE log line, the gauge {@code sextant_control_policy_failing}, {@code /healthz} and {@code /readyz}
 * until a step succeeds, which ends it saying for how long it lasted in an INFO line.
 */
final class PolicyAlarm {
    /** The control plane's logger: one name for operators to set, whichever part of it speaks. */
    private static final Logger LOG = Logger.getLogger(ControlPlane.class.getName());

    private final Ticker ticker;
    /** The snapshot the gateways keep meanwhile (null before the first). */
    private final Supplier<Snapshot> held;
    /** Why the policy path fails now, or null: said in /healthz, /readyz and a gauge until a step succeeds. */
    private volatile String policyError;
    private volatile long failingSinceNanos;

    PolicyAlarm(Ticker ticker, Supplier<Snapshot> held, MeterRegistry registry) {
        this.ticker = ticker;
        this.held = held;
        Gauge.builder("sextant.control.policy.failing", () -> policyError == null ? 0 : 1)
                .description("1 while the policy path fails (the last step found no snapshot or threw): gateways keep "
                        + "the held snapshot, /readyz answers 503").register(registry);
    }

    /** Why the policy path is failing now (the last step, or the catch-up, threw or found no snapshot), or null. */
    String error() {
        return policyError;
    }

    /** Says that the policy path failed, loudly: SEVERE log, gauge {@code sextant_control_policy_failing}, /readyz. */
    void failed(String why, Throwable cause) {
        if (policyError == null) {
            failingSinceNanos = ticker.nanos();
        }
        policyError = why;
        Snapshot s = held.get();
        LOG.log(Level.SEVERE, "POLICY FAILING: " + why + "; gateways keep snapshot "
                + (s == null ? "none" : s.version()) + " until a step succeeds", cause);
    }

    /** A step succeeded: ends the alarm, saying for how long it lasted (INFO, as every recovery is logged). */
    void recovered() {
        if (policyError != null) {
            LOG.info("policy steps succeed again after " + Duration.ofNanos(ticker.nanos() - failingSinceNanos)
                    .toSeconds() + " s of failures");
            policyError = null;
        }
    }
}
