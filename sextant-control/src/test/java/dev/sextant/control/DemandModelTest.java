package dev.sextant.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.topology.Topology;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DemandModelTest {
    private static final long S = 1_000_000_000L;

    /** A 5-s report of gateway process {@code instance} of cluster "gw": {@code n} arrivals of "chat". */
    private static GatewayReport arrivals(String instance, long atSeconds, long n) {
        return new GatewayReport("gw", instance, atSeconds * S, 5, Map.of("chat", n), Map.of(), Map.of());
    }

    private static double chat(Map<String, Map<String, DemandEstimate>> d) {
        return d.get("gw").get("chat").rps();
    }

    @Test
    void processesOfOneCluster_addUp_untilOneIsSilentLongerThanTheExpiry() {
        Topology t = Fleets.oneCluster(2, 50, 10);
        DemandModel d = new DemandModel(ControlOptions.defaults());
        for (long at = 5; at <= 60; at += 5) {
            d.report(arrivals("a", at, 50), t);
            d.report(arrivals("b", at, 50), t);
            d.planned(t, at * S);
        }
        assertThat(chat(d.reported(t, 60 * S))).as("10 req/s from each process").isCloseTo(20, within(1e-9));

        for (long at = 65; at <= 90; at += 5) {
            d.report(arrivals("a", at, 50), t);
            d.planned(t, at * S);
        }
        assertThat(chat(d.reported(t, 90 * S))).as("b's last report 30 s before a's newest: it still counts")
                .isCloseTo(20, within(1e-9));

        d.report(arrivals("a", 95, 50), t);
        assertThat(chat(d.reported(t, 95 * S))).as("35 s: b no longer counts")
                .isCloseTo(10, within(1e-9));
        assertThat(chat(d.planned(t, 95 * S))).as("but the plan holds the level it just had")
                .isGreaterThan(15);
        assertThat(d.anyHeld()).isTrue();
    }

    @Test
    void aReportOfAClassTheTopologyDoesNotHave_movesNothing_andItsOwnClassesCountZero() {
        Topology t = Fleets.oneCluster(2, 50, 10);
        DemandModel d = new DemandModel(ControlOptions.defaults());
        boolean moved = d.report(new GatewayReport("gw", "a", 5 * S, 5, Map.of("other", 100L), Map.of(), Map.of()), t);
        assertThat(moved).as("no arrival of a class of the topology").isFalse();
        DemandEstimate e = d.reported(t, 5 * S).get("gw").get("chat");
        assertThat(e.reportedRps()).isZero();
    }

    /**
     * A held peak recurs when the reports came back to it after a fall below it twice within the hold; only then does
     * a solve that sheds keep part of it. Once (a surge after a lull) is not enough.
     */
    @Test
    void aHeldPeak_isCarriedInPart_onlyOnceItCameBackTwice() {
        Topology t = Fleets.oneCluster(2, 50, 100);
        DemandModel d = new DemandModel(ControlOptions.defaults());
        long at = 0;
        for (int minute = 0; minute < 3; minute++) {
            for (int i = 0; i < 12; i++) {
                at += 5;
                d.report(new GatewayReport("gw", "", at * S, 5, Map.of("chat", i < 2 ? 1250L : 500L), Map.of(),
                        Map.of()), t);
                d.planned(t, at * S);
            }
            Estimates est = new Estimates(at * S, Map.of(), d.planned(t, at * S), Map.of(), Map.of(), 0, "");
            assertThat(chat(est.demand())).as("minute %d: held at the bursts' level", minute).isGreaterThan(230);
            Estimates carried = d.carried(est, 60);
            if (minute < 2) {
                assertThat(carried).as("minute %d: the peak came back %d time(s)", minute, minute).isNull();
            } else {
                assertThat(chat(carried.demand())).as("minute 2: the peak less the 60 req/s shed")
                        .isCloseTo(chat(est.demand()) - 60, within(1e-6));
                assertThat(chat(d.unheld(est).demand())).isCloseTo(100, within(1e-6));
            }
        }
    }
}
