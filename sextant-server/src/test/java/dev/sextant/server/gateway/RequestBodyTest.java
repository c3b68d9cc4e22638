package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RequestBodyTest {

    private static RequestBody parse(String json) throws RequestBody.Invalid {
        ByteBuf buf = Unpooled.copiedBuffer(json, StandardCharsets.UTF_8);
        try {
            RequestBody b = RequestBody.parse(buf);
            assertThat(buf.readerIndex()).as("the body is left as it was, to be forwarded").isZero();
            return b;
        } finally {
            buf.release();
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            chat messages in order          | {"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]} | be briefhi
            content parts                   | {"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"b"}]}]} | ab
            completion prompt               | {"model":"m","prompt":"once upon"} | once upon
            prompt list                     | {"model":"m","prompt":["one ","two"]} | one two
            token ids                       | {"model":"m","prompt":[101,7,2023]} | '101 7 2023 '
            token-id batch                  | {"model":"m","prompt":[[101,7],[9]]} | '101 7 9 '
            embedding input                 | {"model":"m","input":"vector me"} | vector me
            response input items            | {"model":"m","input":[{"role":"user","content":"hi"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":" yo"}]},{"type":"function_call","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":" 42"}]} | hi yo 42
            instructions before the input   | {"input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"model":"m","instructions":"be brief"} | be briefhi
            messages win over prompt        | {"prompt":"p","messages":[{"content":"m"}],"model":"m"} | m
            unknown nested fields skipped   | {"tools":[{"model":"no","messages":"no"}],"model":"m","messages":[{"content":"ok","name":{"x":[1]}}]} | ok
            """)
    void promptText_followsTheRequestPathRules(String name, String json, String text) throws Exception {
        RequestBody b = parse(json);
        assertThat(b.model()).isEqualTo("m");
        assertThat(b.promptText()).isEqualTo(text);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            stream and keys        | {"model":"m","stream":true,"prompt_cache_key":"k","user":"u"} | true  | k | u
            nulls are absent       | {"model":"m","stream":null,"prompt_cache_key":null,"user":null} | false | | 
            """)
    void fields(String name, String json, boolean stream, String key, String user) throws Exception {
        RequestBody b = parse(json);
        assertThat(b.stream()).isEqualTo(stream);
        assertThat(b.promptCacheKey()).isEqualTo(key);
        assertThat(b.user()).isEqualTo(user);
        assertThat(b.promptText()).isNull();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            blank model        | {"model":"  "}                      | model: "  "                   | model
            model array        | {"model":["m"]}                     | model: an array               | model
            message not object | {"model":"m","messages":["hi"]}     | messages: an element is "hi"  | messages
            truncated          | {"model":"m","messages":[            | malformed JSON                |
            unclosed object    | {"model":"m","stream":true           | (opened on line 1)            |
            trailing word      | {"model":"m"} x                      | malformed JSON body: Unrecognized token 'x' |
            trailing number    | {"model":"m"} 5                      | content after the object, on line 1 |
            two objects        | {"model":"m"}{"model":"n"}           | content after the object      |
            not an object      | [{"model":"m"}]                      | body: an array                |
            input a number     | {"model":"m","input":5}              | input: 5 (expected: a string or an array) | input
            instructions array | {"model":"m","input":"x","instructions":["a"]} | instructions: an array (expected: a string) | instructions
            """)
    void invalid_namesTheField(String name, String json, String says, String param) {
        assertThatThrownBy(() -> parse(json)).isInstanceOf(RequestBody.Invalid.class).hasMessageContaining(says)
                .satisfies(e -> assertThat(((RequestBody.Invalid) e).param()).isEqualTo(param))
                .message().doesNotContain("Source:").doesNotContain("\n");
    }

    @org.junit.jupiter.api.Test
    void aConversation_hasOnePromptText_whetherChatOrResponsesCarriesIt() throws Exception {
        String chat = parse("{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
                + "{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":\"yo\"}]}").promptText();
        String response = parse("{\"model\":\"m\",\"instructions\":\"be brief\",\"input\":[{\"role\":\"user\","
                + "\"content\":\"hi\"},{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
                + "\"text\":\"yo\"}]}]}").promptText();
        assertThat(response).isEqualTo(chat).isEqualTo("be briefhiyo");
    }

    @org.junit.jupiter.api.Test
    void longInstructions_leaveNoRoomForTheInput_within1024Characters() throws Exception {
        String text = parse("{\"model\":\"m\",\"input\":\"late\",\"instructions\":\"" + "i".repeat(2000) + "\"}")
                .promptText();
        assertThat(text).isEqualTo("i".repeat(RequestBody.PROMPT_CHARS));
    }

    @org.junit.jupiter.api.Test
    void longPrompt_isCutAt1024Characters() throws Exception {
        String json = "{\"model\":\"m\",\"messages\":[{\"content\":\"" + "a".repeat(1000) + "\"},{\"content\":\""
                + "b".repeat(1000) + "\"}]}";
        String text = parse(json).promptText();
        assertThat(text).hasSize(RequestBody.PROMPT_CHARS).startsWith("a".repeat(1000)).endsWith("b".repeat(24));
    }
}
