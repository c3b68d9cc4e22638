package dev.sextant.server.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.gateway.LeakWatch;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * What every fault case checks after its traffic, and Netty's leak detector at {@code PARANOID} around each class
 * (a leaked buffer anywhere in the gateway, the engines or the control plane fails the class).
 */
abstract class FaultCase {
    /** The data plane's default limit of attempts per request. */
    static final int MAX_ATTEMPTS = 3;

    private static LeakWatch leaks;

    @BeforeAll
    static void watchLeaks() {
        leaks = LeakWatch.paranoid();
    }

    @AfterAll
    static void noLeaks() {
        leaks.assertNoLeakThenClose();
    }

    /**
     * Prints the tally's row, then: every request ended in a complete answer or an explicit error (none lost, none
     * past its deadline), none was answered outside its allowed set, no request for model {@code m} reached the
     * decoy engine x-1 (which serves another model) on any attempt, no request took more than 3 attempts, and the
     * gateway's retries (its own counter, which the attempts it reported must match) stayed within the retry budget.
     *
     * @param retriesBefore {@link Rig#resentTotal()} before the case's traffic
     * @param admitted      requests the gateway admitted since it started (the case's and any warm-up)
     */
    static void assertSound(Rig rig, Tally tally, long retriesBefore, long admitted) throws Exception {
        tally.print();
        tally.assertSound(MAX_ATTEMPTS);
        assertThat(rig.received("x-1")).as(tally.name + ": requests that reached the decoy of another model").isZero();
        assertThat(rig.resentTotal() - retriesBefore).as(tally.name + ": retries the gateway counted vs attempts it reported")
                .isGreaterThanOrEqualTo(tally.retriesReported());
        assertThat((double) rig.retriesTotal()).as(tally.name + ": retries within the retry budget")
                .isLessThanOrEqualTo(rig.retryBound(admitted));
        assertThat(dev.sextant.server.gateway.Fleet.await(() -> rig.gateway.inFlight() == 0, java.time.Duration.ofSeconds(5)))
                .as(tally.name + ": no request left in flight at the gateway").isTrue();
    }
}
