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
}
