package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.errors.NotFoundException;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionCreateParams;
import com.openai.models.embeddings.CreateEmbeddingResponse;
import com.openai.models.embeddings.EmbeddingCreateParams;
import com.openai.models.models.Model;
import com.openai.models.responses.Response;
import com.openai.models.responses.ResponseCreateParams;
import com.openai.models.responses.ResponseOutputMessage;
import com.openai.models.responses.ResponseStatus;
import com.openai.models.responses.ResponseStreamEvent;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The official OpenAI Java SDK as the gateway's client, unchanged but for its base URL: chat completions and the
 * Responses API with and without streaming, legacy completions, embeddings, the model list, and a 404 for an unknown
 * model as the SDK's own {@link NotFoundException}.
 */
class OpenAiSdkTest {
    @RegisterExtension
    static final GatewayFixture GW = GatewayFixture.of(3, 1);
    static OpenAIClient client;

    @BeforeAll
    static void start() {
        client = OpenAIOkHttpClient.builder().baseUrl("http://127.0.0.1:" + GW.port() + "/v1").apiKey("unused")
                .timeout(Duration.ofSeconds(20)).maxRetries(0).build();
    }

    @AfterAll
    static void stop() {
        client.close();
    }

    @Test
    void chatCompletion_nonStreaming() {
        ChatCompletion c = client.chat().completions().create(ChatCompletionCreateParams.builder().model("m")
                .addUserMessage("hello").maxCompletionTokens(4).promptCacheKey("sdk-1").user("u-1").build());
        assertThat(c.model()).isNotEmpty();
        assertThat(c.choices()).hasSize(1);
        assertThat(c.choices().get(0).message().content()).hasValueSatisfying(t -> assertThat(t).isNotBlank());
        assertThat(c.usage()).hasValueSatisfying(u -> assertThat(u.completionTokens()).isEqualTo(4));
    }

    @Test
    void chatCompletion_streaming_deliversEveryTokenAsAChunk() {
        List<String> deltas = new ArrayList<>();
        List<String> finish = new ArrayList<>();
        try (StreamResponse<ChatCompletionChunk> s = client.chat().completions().createStreaming(
                ChatCompletionCreateParams.builder().model("m").addUserMessage("hello").maxCompletionTokens(6)
                        .promptCacheKey("sdk-stream").build())) {
            s.stream().forEach(chunk -> chunk.choices().forEach(ch -> {
                ch.delta().content().filter(t -> !t.isEmpty()).ifPresent(deltas::add);
                ch.finishReason().ifPresent(r -> finish.add(r.asString()));
            }));
        }
        assertThat(deltas).hasSize(6);
        assertThat(finish).containsExactly("length");
    }

    @Test
    void response_nonStreaming() {
        Response r = client.responses().create(ResponseCreateParams.builder().model("m").instructions("be brief")
                .input("hello").maxOutputTokens(4L).promptCacheKey("sdk-response").build());
        assertThat(r.status()).hasValue(ResponseStatus.INCOMPLETE); // max_output_tokens ended it
        assertThat(r.incompleteDetails()).hasValueSatisfying(d -> assertThat(d.reason()).isPresent());
        List<String> texts = r.output().stream().flatMap(item -> item.message().stream())
                .flatMap(m -> m.content().stream()).flatMap(c -> c.outputText().stream()).map(t -> t.text()).toList();
        assertThat(texts).singleElement().satisfies(t -> assertThat(t.split(" ")).hasSize(4));
        assertThat(r.usage()).hasValueSatisfying(u -> assertThat(u.outputTokens()).isEqualTo(4));
    }

    @Test
    void response_streaming_deliversEveryTokenAsADeltaEvent_andTheFinishedResponse() {
        List<String> deltas = new ArrayList<>();
        List<Response> finished = new ArrayList<>();
        try (StreamResponse<ResponseStreamEvent> s = client.responses().createStreaming(ResponseCreateParams.builder()
                .model("m").input("hello").maxOutputTokens(6L).build())) {
            s.stream().forEach(e -> {
                e.outputTextDelta().ifPresent(d -> deltas.add(d.delta()));
                e.incomplete().ifPresent(i -> finished.add(i.response()));
                e.completed().ifPresent(c -> finished.add(c.response()));
            });
        }
        assertThat(deltas).hasSize(6);
        assertThat(finished).singleElement().satisfies(r -> {
            assertThat(r.status()).hasValue(ResponseStatus.INCOMPLETE);
            assertThat(r.output()).singleElement().satisfies(item -> assertThat(item.message()
                    .map(ResponseOutputMessage::content).orElseThrow().get(0).outputText().orElseThrow().text())
                    .isEqualTo(String.join("", deltas)));
        });
    }

    @Test
    void completion_legacy() {
        Completion c = client.completions().create(CompletionCreateParams.builder()
                .model(CompletionCreateParams.Model.of("m")).prompt("once upon a time").maxTokens(3).build());
        assertThat(c.choices()).hasSize(1);
        assertThat(c.choices().get(0).text()).isNotBlank();
        assertThat(c.usage()).hasValueSatisfying(u -> assertThat(u.completionTokens()).isEqualTo(3));
    }

    @Test
    void embeddings() {
        CreateEmbeddingResponse r = client.embeddings().create(EmbeddingCreateParams.builder().model("m")
                .input("a sentence to embed").build());
        assertThat(r.data()).hasSize(1);
        assertThat(r.data().get(0).embedding()).isNotEmpty();
    }

    @Test
    void models_listsWhatTheSnapshotRoutes() {
        Set<String> ids = client.models().list().data().stream().map(Model::id).collect(Collectors.toSet());
        assertThat(ids).containsExactly("m");
    }

    @Test
    void models_retrieveARoutedOne_andAnUnknownOneIsTheSdksNotFoundException() {
        Model m = client.models().retrieve("m");
        assertThat(m.id()).isEqualTo("m");
        assertThat(m.ownedBy()).isEqualTo("sextant");
        assertThatThrownBy(() -> client.models().retrieve("no-such-model"))
                .isInstanceOf(NotFoundException.class).hasMessageContaining("no-such-model");
    }

    @Test
    void unknownModel_isTheSdksNotFoundException_withTheGatewaysMessage() {
        assertThatThrownBy(() -> client.chat().completions().create(ChatCompletionCreateParams.builder()
                .model("no-such-model").addUserMessage("hello").build()))
                .isInstanceOf(NotFoundException.class)
                .satisfies(e -> assertThat(((NotFoundException) e).statusCode()).isEqualTo(404))
                .hasMessageContaining("no-such-model");
    }
}
