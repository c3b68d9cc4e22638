package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sextant.request.PromptKey;
import dev.sextant.request.PromptKeys;
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

    /** A body's prompt keys against the keys of an equivalent prompt fed to {@link PromptKeys} directly. */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            chat messages                   | {"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]} | system:be brief;user:hi
            role after content              | {"model":"m","messages":[{"content":"be brief","role":"system"},{"content":"hi","role":"user"}]} | system:be brief;user:hi
            content parts                   | {"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"b"}]}]} | user:ab
            later turns are not read        | {"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"user","content":"more"}]} | user:hi
            completion prompt               | {"model":"m","prompt":"once upon"} | raw:once upon
            prompt list                     | {"model":"m","prompt":["one ","two"]} | raw:one two
            token ids                       | {"model":"m","prompt":[101,7,2023]} | ids:101 7 2023
            token-id batch                  | {"model":"m","prompt":[[101,7],[9]]} | ids:101 7 9
            embedding batch                 | {"model":"m","input":["vector ","me"]} | raw:vector me
            response input string           | {"model":"m","input":"hi"} | user:hi
            response input items            | {"model":"m","input":[{"role":"developer","content":"rules"},{"role":"user","content":"hi"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":" yo"}]}]} | developer:rules;user:hi
            tool output before the user     | {"model":"m","input":[{"type":"function_call_output","call_id":"c","output":"42"},{"role":"user","content":"hi"}]} | function_call_output:42;user:hi
            instructions after the input    | {"input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"model":"m","instructions":"be brief"} | system:be brief;user:hi
            messages win over prompt        | {"prompt":"p","messages":[{"role":"user","content":"m"}],"model":"m"} | user:m
            unknown nested fields skipped   | {"tools":[{"model":"no","messages":"no"}],"model":"m","messages":[{"role":"user","content":"ok","name":{"x":[1]}}]} | user:ok
            """)
    void prompt_keysByTheRequestPathRules(String name, String json, String expected) throws Exception {
        RequestBody b = parse(json);
        assertThat(b.model()).isEqualTo("m");
        assertThat(b.prompt()).isEqualTo(keys(expected));
    }

    /** {@code role:content;role:content}, {@code raw:text} or {@code ids:1 2 3} fed to {@link PromptKeys}. */
    static PromptKey keys(String spec) {
        PromptKeys k = new PromptKeys();
        for (String part : spec.split(";")) {
            String[] rc = part.split(":", 2);
            switch (rc[0]) {
                case "raw" -> {
                    k.beginRaw();
                    k.text(rc[1]);
                }
                case "ids" -> {
                    k.beginRaw();
                    for (String id : rc[1].split(" ")) {
                        k.token(Long.parseLong(id));
                    }
                }
                default -> {
                    k.beginMessage();
                    k.text(rc[1]);
                    k.endMessage(rc[0]);
                }
            }
        }
        return k.result();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            stream and keys        | {"model":"m","stream":true,"prompt_cache_key":"k","user":"u"} | true  | k | u
            nulls are absent       | {"model":"m","stream":null,"prompt_cache_key":null,"user":null} | false | | 
            others may repeat      | {"model":"m","temperature":1,"tools":[{"user":"x"}],"temperature":0,"tools":[]} | false | | 
            """)
    void fields(String name, String json, boolean stream, String key, String user) throws Exception {
        RequestBody b = parse(json);
        assertThat(b.stream()).isEqualTo(stream);
        assertThat(b.promptCacheKey()).isEqualTo(key);
        assertThat(b.user()).isEqualTo(user);
        assertThat(b.prompt()).isNull();
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
            model twice        | {"model":"a","model":"b"}           | model: given twice            | model
            stream twice       | {"model":"m","stream":false,"tools":[],"stream":true} | stream: given twice | stream
            max_tokens twice   | {"model":"m","max_tokens":5,"max_tokens":null} | max_tokens: given twice | max_tokens
            messages twice     | {"model":"m","messages":[],"messages":[]} | messages: given twice | messages
            """)
    void invalid_namesTheField(String name, String json, String says, String param) {
        assertThatThrownBy(() -> parse(json)).isInstanceOf(RequestBody.Invalid.class).hasMessageContaining(says)
                .satisfies(e -> assertThat(((RequestBody.Invalid) e).param()).isEqualTo(param))
                .message().doesNotContain("Source:").doesNotContain("\n");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            none                   | {"model":"m"}                                          | -1
            max_tokens             | {"model":"m","max_tokens":5}                           | 5
            the largest of three   | {"model":"m","max_completion_tokens":7,"max_tokens":3,"max_output_tokens":4} | 7
            beyond a long          | {"model":"m","max_tokens":99999999999999999999}        | 9223372036854775807
            far below zero         | {"model":"m","max_tokens":-99999999999999999999}       | -1
            not an integer         | {"model":"m","max_tokens":2.5}                         | -1
            """)
    void maxTokens_theMostAnyFieldAsks_andANumberBeyondALongIsNotMalformed(String name, String json, long expected)
            throws Exception {
        assertThat(parse(json).maxTokens()).isEqualTo(expected);
    }

    @org.junit.jupiter.api.Test
    void nestingTooDeep_saysSo_withoutNamingTheParsersSetting() {
        String json = "{\"model\":\"m\",\"x\":" + "[".repeat(1001) + "]".repeat(1001) + "}";
        assertThatThrownBy(() -> parse(json)).isInstanceOf(RequestBody.Invalid.class)
                .hasMessage("malformed JSON body: Document nesting depth (1001) exceeds the maximum allowed (1000)");
    }

    @org.junit.jupiter.api.Test
    void aConversation_hasOneKey_whetherChatOrResponsesCarriesIt() throws Exception {
        PromptKey chat = parse("{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
                + "{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":\"yo\"}]}").prompt();
        PromptKey response = parse("{\"model\":\"m\",\"instructions\":\"be brief\",\"input\":[{\"role\":\"user\","
                + "\"content\":\"hi\"},{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
                + "\"text\":\"yo\"}]}]}").prompt();
        assertThat(response).isEqualTo(chat).isEqualTo(PromptKey.ofMessages("system", "be brief", "user", "hi"));
    }

    @org.junit.jupiter.api.Test
    void longSystemPrompt_isHashedWhole_conversationsDifferByTheirFirstUserMessage() throws Exception {
        String system = "s".repeat(5000);
        PromptKey a = parse("{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"" + system + "\"},"
                + "{\"role\":\"user\",\"content\":\"one\"}]}").prompt();
        PromptKey b = parse("{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"" + system + "\"},"
                + "{\"role\":\"user\",\"content\":\"two\"}]}").prompt();
        PromptKey c = parse("{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"" + system + "x\"},"
                + "{\"role\":\"user\",\"content\":\"one\"}]}").prompt();
        assertThat(a.prefix()).isEqualTo(b.prefix()).isNotEqualTo(c.prefix());
        assertThat(a.conversation()).isNotEqualTo(b.conversation()).isNotEqualTo(c.conversation());
    }
}
