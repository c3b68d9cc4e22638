package dev.sextant.server.control;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.config.TopologyException;
import dev.sextant.config.TopologyFile;
import dev.sextant.config.TopologyLoader;
import dev.sextant.topology.Engine;
import dev.sextant.topology.ParametricProfile;
import dev.sextant.topology.PriorityScheduling;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RegisteredEnginesTest {
    /** Two engine clusters, one of them with no round trip from the gateway cluster; one listed engine. */
    static final String YAML = """
            gateway_clusters: [{id: east, region: us}]
            engine_clusters: [{id: c1, region: us}, {id: far, region: us}]
            network_rtt_ms: {east: {c1: 2}}
            models: [{id: m, output_tokens: 8}, {id: idle, output_tokens: 8}]
            hardware:
              h100: {capacity_rps: 100, max_num_seqs: 256, profile: {ttft_ms: 20, tbt_ms: 5}}
            engines:
              - {id: listed, cluster: c1, endpoint: 'http://127.0.0.1:9', models: [m], capacity_rps: 50, profile: {ttft_ms: 20, tbt_ms: 5}}
            classes: [{id: chat, model: m}]
            demand_rps: {east: {chat: 50}}
            """;

    static TopologyFile file() {
        try {
            return TopologyLoader.loadFile(YAML, "fleet.yaml");
        } catch (TopologyException e) {
            throw new IllegalStateException(e);
        }
    }

    static String registration(String cluster, String hardware, String models, String endpoint) {
        return new Registration("x", endpoint, cluster, hardware, List.of(models.split(" ")),
                PriorityScheduling.LOWER_FIRST, "/metrics").json();
    }

    @Test
    void merge_registeredEngine_joinsAfterTheFilesEngines_ratedByItsHardwareKind() {
        RegisteredEngines.Merged m = RegisteredEngines.merge(file(), EngineRegistry.Entries.of(1, Map.of(
                "r1", registration("c1", "h100", "m", "http://10.0.0.7:8000"),
                "r2", new Registration("r2", "http://10.0.0.8:8000", "far", "h100", List.of("idle"),
                        PriorityScheduling.NONE, null).json())));

        assertThat(m.refused()).isEmpty();
        assertThat(m.topology().engines()).extracting(Engine::id).containsExactly("listed", "r1", "r2");
        Engine r1 = m.topology().engines().get(1);
        assertThat(r1.capacityRps()).isEqualTo(100.0);
        assertThat(r1.profile()).isEqualTo(new ParametricProfile(20, 5, 1.0));
        assertThat(r1.endpoint()).isEqualTo("http://10.0.0.7:8000");
        assertThat(r1.priorityScheduling()).isEqualTo(PriorityScheduling.LOWER_FIRST);
        assertThat(r1.maxNumSeqs()).as("the kind's batch limit").isEqualTo(256);
        assertThat(m.topology().engines().get(0).maxNumSeqs()).as("the listed engine states none").isZero();
        assertThat(m.metricsPath()).containsEntry("r1", "/metrics").containsEntry("r2", null);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            duplicate of the file  | listed | c1    | h100 | m     | http://10.0.0.7:8000 | DUPLICATE        | the topology file lists an engine 'listed', which wins
            unknown cluster        | r      | north | h100 | m     | http://10.0.0.7:8000 | UNKNOWN_CLUSTER  | cluster: unknown engine cluster 'north' (expected one of [c1, far])
            unknown hardware       | r      | c1    | a100 | m     | http://10.0.0.7:8000 | UNKNOWN_HARDWARE | hardware: unknown hardware kind 'a100' (expected one of [h100])
            unknown model          | r      | c1    | h100 | m gpt | http://10.0.0.7:8000 | UNKNOWN_MODEL    | models: unknown model 'gpt'
            no round trip          | r      | far   | h100 | m     | http://10.0.0.7:8000 | NO_ROUND_TRIP    | network_rtt_ms.east: missing round trip to engine cluster 'far', which would serve class 'chat' demanded there
            """)
    void merge_registrationThatDoesNotFit_isRefusedWithWhy_andTheOthersAreTaken(String kind, String id, String cluster,
            String hardware, String models, String endpoint, RegisteredEngines.Reason reason, String why) {
        RegisteredEngines.Merged m = RegisteredEngines.merge(file(), EngineRegistry.Entries.of(1, Map.of(
                id, registration(cluster, hardware, models, endpoint),
                "good", registration("c1", "h100", "m", "http://10.0.0.9:8000"))));

        assertThat(m.refused()).as(kind).singleElement().satisfies(r -> {
            assertThat(r.id()).isEqualTo(id);
            assertThat(r.reason()).isEqualTo(reason);
            assertThat(r.why()).contains(why);
        });
        assertThat(m.topology().engines()).extracting(Engine::id).containsExactly("listed", "good");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            not JSON         | endpoint=http://x            | not JSON
            not an object    | [1]                          | not a JSON object
            bad endpoint     | '{"endpoint":"10.0.0.7:8000","cluster":"c1","hardware":"h100","models":["m"]}' | endpoint: '10.0.0.7:8000' (expected: an http:// or https:// URL
            no models        | '{"endpoint":"http://h:1","cluster":"c1","hardware":"h100","models":[]}'        | models: [] (expected: at least one model id)
            number for text  | '{"endpoint":"http://h:1","cluster":7,"hardware":"h100","models":["m"]}'        | cluster: 7 (expected: a string)
            bad scheduling   | '{"endpoint":"http://h:1","cluster":"c1","hardware":"h100","models":["m"],"priority_scheduling":"fifo"}' | priority_scheduling: 'fifo'
            relative metrics | '{"endpoint":"http://h:1","cluster":"c1","hardware":"h100","models":["m"],"metrics_path":"metrics"}'    | metrics_path: 'metrics' (expected: a path starting with /
            """)
    void merge_valueThatIsNotARegistration_isRefusedAsInvalid_namingTheField(String kind, String value, String why) {
        RegisteredEngines.Merged m = RegisteredEngines.merge(file(), EngineRegistry.Entries.of(1, Map.of("r", value)));

        assertThat(m.refused()).as(kind).singleElement().satisfies(r -> {
            assertThat(r.reason()).isEqualTo(RegisteredEngines.Reason.INVALID);
            assertThat(r.why()).contains(why);
        });
        assertThat(m.topology()).isEqualTo(file().topology());
    }

    @Test
    void registration_json_readsBackAsItself_andUnknownKeysAreIgnored() {
        Registration r = new Registration("e", "https://h:8443/api", "c1", "h100", List.of("m", "idle"),
                PriorityScheduling.HIGHER_FIRST, null);

        assertThat(Registration.parse("e", r.json())).isEqualTo(r);
        assertThat(Registration.parse("e", r.json().replace("{", "{\"gpus\":8,"))).isEqualTo(r);
        assertThat(Registration.parse("e", "{\"endpoint\":\"http://h:1\",\"cluster\":\"c\",\"hardware\":\"k\","
                + "\"models\":[\"m\"]}")).isEqualTo(new Registration("e", "http://h:1", "c", "k", List.of("m"),
                PriorityScheduling.NONE, "/metrics"));
    }
}
