package dev.sextant.request;

import dev.sextant.snapshot.Snapshot;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ClassificationTest {

    /** chat in any region at priorities 0 and 10, chat restricted to the EU at 0 and 10, embed in the US only. */
    static Snapshot snapshot() {
        return new Fixtures.SnapshotBuilder("g")
                .rtt("us", 5).rtt("eu", 80).rtt("eu2", 90)
                .engine("us-1", "us", "us-east", 100, "chat", "embed")
                .engine("eu-1", "eu", "eu-west", 100, "chat")
                .engine("eu-2", "eu2", "eu-central", 100, "chat")
                .route("chat", "chat", List.of(), 0, 0, Map.of("us-1", 0.5, "eu-1", 0.5))
                .route("chat-high", "chat", List.of(), 10, 0, Map.of("us-1", 1.0))
                .route("chat-eu", "chat", List.of("eu-west", "eu-central"), 0, 0, Map.of("eu-1", 0.5, "eu-2", 0.5))
                .route("chat-eu-high", "chat", List.of("eu-west", "eu-central"), 10, 0, Map.of("eu-1", 1.0))
                .route("chat-euw", "chat", List.of("eu-west"), 0, 0, Map.of("eu-1", 1.0))
                .route("embed", "embed", List.of("us-east"), 0, 0, Map.of("us-1", 1.0))
                .build();
    }

    @ParameterizedTest(name = "model={0} residency={1} priority={2} -> {3}")
    @CsvSource(delimiter = '|', nullValues = "-", value = {
            // no residency: the unrestricted class; priority picks the highest not above the request's
            "chat  | -                    | -  | chat",
            "chat  | -                    | 0  | chat",
            "chat  | -                    | 5  | chat",
            "chat  | -                    | 10 | chat-high",
            "chat  | -                    | 99 | chat-high",
            "chat  | -                    | -3 | chat",
            "chat  | -                    | x  | chat",
            // residency: only classes restricted within it; the exact set first, then larger sets
            "chat  | eu-west,eu-central   | -  | chat-eu",
            "chat  | eu-central, eu-west  | 10 | chat-eu-high",
            "chat  | eu-west              | -  | chat-euw",
            "chat  | eu-west,eu-central,x | -  | chat-eu",
            "embed | -                    | -  | embed",
            "embed | us-east              | -  | embed",
    })
    void route_headers_classifyAsDocumented(String model, String residency, String priority, String expected) {
        DataPlane plane = DataPlane.create("g", snapshot(), new Fixtures.ManualTicker(), DataPlaneOptions.defaults());
        HttpFields f = new HttpFields(model, residency, priority, null, null, null, null, "req-1");
        Decision d = plane.route(f.toMeta());
        assertThat(d.routed()).as(d.toString()).isTrue();
        assertThat(d.classId()).isEqualTo(expected);
    }

    @Test
    void route_unknownModel_refuses404WithKnownModels() {
        DataPlane plane = DataPlane.create("g", snapshot(), new Fixtures.ManualTicker(), DataPlaneOptions.defaults());
        Decision d = plane.route(RequestMeta.of("gpt-9", 1, 1));
        assertThat(d.refusal()).isEqualTo(Refusal.UNKNOWN_MODEL);
        assertThat(d.refusal().status()).isEqualTo(404);
        assertThat(d.message()).contains("gpt-9").contains("[chat, embed]");
    }

    @Test
    void route_residencyNoClassFits_refuses400ResidencyNotServed() {
        DataPlane plane = DataPlane.create("g", snapshot(), new Fixtures.ManualTicker(), DataPlaneOptions.defaults());
        Decision d = plane.route(new RequestMeta("embed", List.of("eu-west"), RequestMeta.NO_PRIORITY, 1, 1));
        assertThat(d.refusal()).isEqualTo(Refusal.RESIDENCY_NOT_SERVED);
        assertThat(d.refusal().status()).isEqualTo(400);
        assertThat(d.message()).contains("embed").contains("eu-west");
        assertThat(d.retryAfterNanos()).isZero(); // asking again will not help
    }

    @Test
    void route_classWhoseWeightsNameOnlyDisallowedEngines_refusesNoAllowedEngine() {
        Snapshot s = new Fixtures.SnapshotBuilder("g").rtt("us", 5)
                .engine("us-1", "us", "us-east", 100, "chat")
                .route("chat-eu", "chat", List.of("eu-west"), 0, 0, Map.of("us-1", 1.0)) // a bad snapshot
                .build();
        DataPlane plane = DataPlane.create("g", s, new Fixtures.ManualTicker(), DataPlaneOptions.defaults());
        Decision d = plane.route(RequestMeta.of("chat", 1, 1));
        assertThat(d.refusal()).isEqualTo(Refusal.NO_ALLOWED_ENGINE);
        assertThat(d.message()).contains("chat-eu");
    }

    @Test
    void route_otherGatewayCluster_knowsNoModel() {
        DataPlane plane = DataPlane.create("elsewhere", snapshot(), new Fixtures.ManualTicker(),
                DataPlaneOptions.defaults());
        assertThat(plane.route(RequestMeta.of("chat", 1, 1)).refusal()).isEqualTo(Refusal.UNKNOWN_MODEL);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', nullValues = "-", value = {
            "prompt_cache_key wins  | pck | sess | u | text | prompt_cache_key:pck",
            "then the session       | -   | sess | u | text | session:sess",
            "then user              | -   | -    | u | text | user:u",
            "then the prompt        | -   | -    | - | text | prompt:text",
            "blank counts as absent | ' ' | ' '  | - | text | prompt:text",
            "else the request id    | -   | -    | - | -    | id:req-7",
    })
    void affinityKey_precedence(String name, String pck, String session, String user, String text, String expected) {
        HttpFields f = new HttpFields("m", null, null, pck, session, user,
                text == null ? null : PromptKey.ofMessages("user", text), "req-7");
        String[] kv = expected.split(":", 2);
        long want = switch (kv[0]) {
            case "prompt" -> PromptKey.ofMessages("user", kv[1]).conversation();
            case "id" -> Keys.of(kv[1]);
            default -> Keys.of(kv[0], kv[1]);
        };
        assertThat(f.affinityKey()).isEqualTo(want);
    }

    @Test
    void keys_kindIsPartOfTheKey() {
        assertThat(Keys.of("user", "42")).isNotEqualTo(Keys.of("session", "42"));
    }

    @Test
    void toMeta_explicitKey_carriesNoPrefixKey_promptKeys_carryTheirs() {
        PromptKey prompt = PromptKey.ofMessages("system", "be brief", "user", "hi");
        assertThat(new HttpFields("m", null, null, "k", null, null, prompt, "r").toMeta().prefixKey()).isZero();
        RequestMeta keyless = new HttpFields("m", null, null, null, null, null, prompt, "r").toMeta();
        assertThat(keyless.affinityKey()).isEqualTo(prompt.conversation());
        assertThat(keyless.prefixKey()).isEqualTo(prompt.prefix()).isNotZero();
    }

    @Test
    void httpFields_missingRequestId_isRejected() {
        assertThatThrownBy(() -> new HttpFields("m", null, null, null, null, null, null, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("requestId");
    }
}
