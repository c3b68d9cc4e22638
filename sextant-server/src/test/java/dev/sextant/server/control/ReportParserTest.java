package dev.sextant.server.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sextant.config.TopologyLoader;
import dev.sextant.control.GatewayReport;
import dev.sextant.control.GatewayReport.EngineOutcomes;
import dev.sextant.control.GatewayReport.Mean;
import dev.sextant.control.GatewayReport.RoundTrip;
import dev.sextant.request.ReuseTimes;
import dev.sextant.server.internal.Http;
import dev.sextant.topology.Topology;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** A gateway's report, read into the control loop's record: every field, and the first bad one named. */
class ReportParserTest {
    private final Topology talk;

    ReportParserTest() throws Exception {
        talk = TopologyLoader.load(Path.of("..", "examples", "talk.yaml"));
    }

    private GatewayReport parse(String json) throws Exception {
        return ReportParser.parse(Http.JSON.readTree(json), talk, 42);
    }

    @Test
    void aFullReport_becomesTheLoopsRecord_fieldForField() throws Exception {
        GatewayReport r = parse("""
                {"gateway": "east", "instance": "3f9c1a07b2e4", "interval_seconds": 5.0,
                 "demand_rps": {"chat": 44.8}, "arrivals": {"chat": 224},
                 "engines": {"east-1": {
                     "requests": 120, "successes": 110, "errors": 4,
                     "connect_errors": 1, "timeouts": 2, "server_errors": 1, "busy": 3, "overloaded": 2, "cancelled": 1,
                     "ttft_ms": 9.7, "ttft_count": 118, "tbt_ms": 8.4, "tbt_count": 3500,
                     "e2e_ms": 310.0, "e2e_count": 110, "connect_ms": 0.4, "connect_count": 2,
                     "probes": 3, "probe_failures": 1}},
                 "rtt_ms": {"gpu-east": {"min": 2.1, "mean": 2.4, "count": 3}}}""");

        assertThat(r).isEqualTo(new GatewayReport("east", "3f9c1a07b2e4", 42, 5.0, Map.of("chat", 224L),
                Map.of("east-1", new EngineOutcomes(120, 110, 1, 2, 1, 5, new Mean(9.7, 118), new Mean(8.4, 3500),
                        new Mean(310.0, 110), new Mean(0.4, 2), 3, 1)),
                Map.of("gpu-east", new RoundTrip(2.1, 2.4, 3))));
    }

    @Test
    void reuseTimes_areReadPerClassOfTheTopology_andOptional() throws Exception {
        String counts = "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]";
        GatewayReport r = parse("{\"gateway\":\"east\",\"interval_seconds\":5,\"reuse\":{\"chat\":" + counts
                + ",\"batch\":" + counts + "}}");

        assertThat(r.reuse()).containsOnlyKeys("chat");
        assertThat(r.reuse().get("chat")).hasSize(ReuseTimes.BUCKETS).startsWith(0, 1, 2).endsWith(16, 17);
        assertThat(parse("{\"gateway\":\"east\",\"interval_seconds\":5}").reuse()).isEmpty();
    }

    @Test
    void requestsInFlight_areReadPerEngineOfTheTopology_andAbsentMeansNotReported() throws Exception {
        GatewayReport r = parse("{\"gateway\":\"east\",\"interval_seconds\":5,\"in_flight\":{\"east-1\":7,"
                + "\"gone-7\":2}}");

        assertThat(r.inFlight()).containsExactly(Map.entry("east-1", 7L));
        assertThat(parse("{\"gateway\":\"east\",\"interval_seconds\":5,\"in_flight\":{}}").inFlight()).isEmpty();
        assertThat(parse("{\"gateway\":\"east\",\"interval_seconds\":5}").inFlight()).isNull();
    }

    @Test
    void withoutArrivals_theyFollowFromDemandAndInterval_rounded() throws Exception {
        GatewayReport r = parse("{\"gateway\":\"west\",\"interval_seconds\":2.5,\"demand_rps\":{\"chat\":10.3}}");

        assertThat(r.arrivals()).containsExactly(Map.entry("chat", 26L));
        assertThat(r.instance()).as("a gateway that names no instance: its cluster's only one").isEmpty();
        assertThat(r.engines()).isEmpty();
        assertThat(r.roundTrips()).isEmpty();
    }

    @Test
    void classesEnginesAndClustersTheTopologyDoesNotHave_areSkipped_andTheRestCounts() throws Exception {
        GatewayReport r = parse("{\"gateway\":\"east\",\"interval_seconds\":5,\"arrivals\":{\"chat\":9,\"batch\":4},"
                + "\"engines\":{\"gone-7\":{\"requests\":5},\"east-1\":{\"requests\":5,\"successes\":5}},"
                + "\"rtt_ms\":{\"gpu-mars\":{\"min\":1,\"mean\":1,\"count\":1}}}");

        assertThat(r.arrivals()).containsOnlyKeys("chat");
        assertThat(r.engines()).containsOnlyKeys("east-1");
        assertThat(r.roundTrips()).isEmpty();
    }

    @Test
    void aMeanWithoutObservations_isNone_evenWhenAValueIsSent() throws Exception {
        GatewayReport r = parse("{\"gateway\":\"east\",\"interval_seconds\":5,"
                + "\"engines\":{\"east-1\":{\"requests\":1,\"cancelled\":1,\"ttft_ms\":30}}}");

        assertThat(r.engines().get("east-1").ttft()).isEqualTo(Mean.NONE);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            not an object        | [1, 2]                                                                              | report: [1,2] (expected: a JSON object)
            no gateway           | {"interval_seconds":5}                                                              | gateway: missing (expected: a gateway cluster id)
            gateway a number     | {"gateway":7,"interval_seconds":5}                                                  | gateway: 7 (expected: a gateway cluster id)
            unknown gateway      | {"gateway":"mars","interval_seconds":5}                                             | gateway: 'mars' (expected: a gateway cluster of the topology)
            instance with space  | {"gateway":"east","instance":"a b","interval_seconds":5}                            | instance: "a b" (expected: an id of 1 to 64 letters
            instance empty       | {"gateway":"east","instance":"","interval_seconds":5}                               | instance: "" (expected:
            instance a number    | {"gateway":"east","instance":12,"interval_seconds":5}                               | instance: 12 (expected:
            no interval          | {"gateway":"east"}                                                                  | interval_seconds: missing (expected: a finite number > 0)
            zero interval        | {"gateway":"east","interval_seconds":0}                                             | interval_seconds: 0 (expected: a finite number > 0)
            negative demand      | {"gateway":"east","interval_seconds":5,"demand_rps":{"chat":-1}}                    | demand_rps.chat: -1 (expected: a finite number >= 0)
            infinite demand      | {"gateway":"east","interval_seconds":5,"demand_rps":{"chat":1e999}}                 | demand_rps.chat:
            demand as text       | {"gateway":"east","interval_seconds":5,"demand_rps":{"chat":"9"}}                   | demand_rps.chat: "9" (expected: a finite number >= 0)
            demand not an object | {"gateway":"east","interval_seconds":5,"demand_rps":9}                              | demand_rps: 9 (expected: an object of class id → req/s)
            huge demand          | {"gateway":"east","interval_seconds":5,"demand_rps":{"chat":1e300}}                 | demand_rps.chat: 1.0E300 (expected: at most 1000000000000 requests
            fractional arrivals  | {"gateway":"east","interval_seconds":5,"arrivals":{"chat":2.5}}                     | arrivals.chat: 2.5 (expected: a whole number >= 0)
            huge arrivals        | {"gateway":"east","interval_seconds":5,"arrivals":{"chat":99999999999999}}          | arrivals.chat: 99999999999999 (expected: a whole number >= 0, at most 1000000000000)
            bad arrivals, known  | {"gateway":"east","interval_seconds":5,"arrivals":{"batch":-1}}                     | arrivals.batch: -1 (expected: a whole number >= 0)
            negative requests    | {"gateway":"east","interval_seconds":5,"engines":{"east-1":{"requests":-5}}}        | engines.east-1.requests: -5 (expected: a whole number >= 0)
            fractional errors    | {"gateway":"east","interval_seconds":5,"engines":{"east-1":{"errors":1.5}}}         | engines.east-1.errors: 1.5 (expected: a whole number >= 0)
            unknown engine, bad  | {"gateway":"east","interval_seconds":5,"engines":{"gone-7":{"busy":-1}}}            | engines.gone-7.busy: -1 (expected: a whole number >= 0)
            ttft not a number    | {"gateway":"east","interval_seconds":5,"engines":{"east-1":{"ttft_ms":"x"}}}        | engines.east-1.ttft_ms: "x" (expected: a finite number >= 0)
            mean missing         | {"gateway":"east","interval_seconds":5,"engines":{"east-1":{"requests":2,"successes":2,"tbt_count":3}}} | engines.east-1.tbt_ms: missing (expected: a finite number >= 0 when tbt_count is 3)
            outcomes over total  | {"gateway":"east","interval_seconds":5,"engines":{"east-1":{"requests":3,"successes":2,"timeouts":2}}} | engines.east-1.requests: 3 (expected: >= 4, the sum of successes
            probe failures       | {"gateway":"east","interval_seconds":5,"engines":{"east-1":{"probes":1,"probe_failures":2}}} | engines.east-1.probe_failures: 2 (expected: <= probes, 1)
            engine not an object | {"gateway":"east","interval_seconds":5,"engines":{"east-1":3}}                      | engines.east-1: 3 (expected: an object)
            rtt without mean     | {"gateway":"east","interval_seconds":5,"rtt_ms":{"gpu-east":{"min":1,"count":1}}}   | rtt_ms.gpu-east.mean: missing (expected: a finite number >= 0)
            rtt mean below min   | {"gateway":"east","interval_seconds":5,"rtt_ms":{"gpu-east":{"min":3,"mean":2,"count":1}}} | rtt_ms.gpu-east.mean: 2 (expected: >= min 3)
            rtt count zero       | {"gateway":"east","interval_seconds":5,"rtt_ms":{"gpu-east":{"min":1,"mean":1,"count":0}}} | rtt_ms.gpu-east.count: 0 (expected: a whole number >= 1)
            rtt not an object    | {"gateway":"east","interval_seconds":5,"rtt_ms":{"gpu-east":2}}                     | rtt_ms.gpu-east: 2 (expected: an object of min, mean, count)
            reuse not an object  | {"gateway":"east","interval_seconds":5,"reuse":[1]}                                 | reuse: [1] (expected: an object of class id → 18 counts)
            reuse too short      | {"gateway":"east","interval_seconds":5,"reuse":{"chat":[1,2]}}                      | reuse.chat: [1,2] (expected: an array of 18 whole numbers >= 0)
            reuse negative count | {"gateway":"east","interval_seconds":5,"reuse":{"chat":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,-3,0]}} | reuse.chat[16]: -3 (expected: a whole number >= 0)
            reuse null count     | {"gateway":"east","interval_seconds":5,"reuse":{"chat":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,null,0]}} | reuse.chat[16]: null (expected: a whole number >= 0)
            in flight negative   | {"gateway":"east","interval_seconds":5,"in_flight":{"east-1":-1}}                   | in_flight.east-1: -1 (expected: a whole number >= 0)
            in flight fraction   | {"gateway":"east","interval_seconds":5,"in_flight":{"east-1":1.5}}                  | in_flight.east-1: 1.5 (expected: a whole number >= 0)
            in flight null       | {"gateway":"east","interval_seconds":5,"in_flight":{"east-1":null}}                 | in_flight.east-1: null (expected: a whole number >= 0)
            in flight not object | {"gateway":"east","interval_seconds":5,"in_flight":[3]}                             | in_flight: [3] (expected: an object of engine id → requests in flight)
            """)
    void aBadField_isRefusedNamingIt(String name, String json, String says) {
        assertThatThrownBy(() -> parse(json)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining(says);
    }

    @Test
    void aLongValue_isCutShortInTheMessage() {
        String id = "x".repeat(100);
        assertThatThrownBy(() -> parse("{\"gateway\":\"east\",\"instance\":\"" + id + "\",\"interval_seconds\":5}"))
                .hasMessageStartingWith("instance: \"" + "x".repeat(39) + "…")
                .hasMessageNotContaining("x".repeat(41));
    }
}
