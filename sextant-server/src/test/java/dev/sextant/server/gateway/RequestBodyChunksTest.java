package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link RequestBody#parse} over a body the aggregator assembled from several chunks (a composite buffer), as the
 * gateway sees it: the fields come out whole whichever byte a chunk boundary falls on, the buffer is read in place,
 * and the chunks are released when the body is.
 */
class RequestBodyChunksTest {
    private static final ByteBufAllocator ALLOC = PooledByteBufAllocator.DEFAULT;
    private static LeakWatch leaks;

    @BeforeAll
    static void paranoid() {
        leaks = LeakWatch.paranoid();
    }

    @AfterAll
    static void restore() {
        leaks.assertNoLeakThenClose();
    }

    // "é" and "→" are multi-byte in UTF-8, so some cuts fall inside a character
    private static final String CHAT = "{\"temperature\":0.5,\"model\":\"llama-é\",\"stream\":true,"
            + "\"prompt_cache_key\":\"tenant→42\",\"user\":\"u-7\",\"tools\":[{\"model\":\"not-this\"}],"
            + "\"messages\":[{\"role\":\"system\",\"content\":\"be brief → \"},"
            + "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"résumé please\"}]}]}";
    private static final String PROMPT_KEYS = "system:be brief → ;user:résumé please";

    /** The body cut into chunks of {@code chunk} bytes, each its own buffer, joined as the aggregator does. */
    private static CompositeByteBuf chunked(String json, int chunk, List<ByteBuf> parts) {
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
        CompositeByteBuf body = ALLOC.compositeBuffer(Integer.MAX_VALUE);
        for (int at = 0; at < bytes.length; at += chunk) {
            ByteBuf part = ALLOC.buffer(chunk).writeBytes(Arrays.copyOfRange(bytes, at, Math.min(bytes.length, at + chunk)));
            parts.add(part);
            body.addComponent(true, part);
        }
        return body;
    }

    @ParameterizedTest(name = "chunks of {0} bytes")
    @ValueSource(ints = {1, 2, 3, 7, 64, 4096})
    void fieldsAcrossChunkBoundaries_areReadWhole_andTheBodyIsLeftForForwarding(int chunk) throws Exception {
        List<ByteBuf> parts = new ArrayList<>();
        CompositeByteBuf body = chunked(CHAT, chunk, parts);
        int readable = body.readableBytes();
        RequestBody b;
        try {
            b = RequestBody.parse(body);
            assertThat(body.readerIndex()).isZero();
            assertThat(body.readableBytes()).isEqualTo(readable);
            assertThat(body.refCnt()).as("parsing takes no reference").isEqualTo(1);
        } finally {
            assertThat(body.release()).isTrue();
        }
        assertThat(parts).allSatisfy(p -> assertThat(p.refCnt()).isZero());

        assertThat(b.model()).isEqualTo("llama-é");
        assertThat(b.stream()).isTrue();
        assertThat(b.promptCacheKey()).isEqualTo("tenant→42");
        assertThat(b.user()).isEqualTo("u-7");
        assertThat(b.prompt()).isEqualTo(RequestBodyTest.keys(PROMPT_KEYS));
    }

    @ParameterizedTest(name = "chunks of {0} bytes")
    @ValueSource(ints = {1, 5, 100})
    void rawPromptKeys_areTheSame_whateverTheChunking(int chunk) throws Exception {
        String prompt = "abcdefghij".repeat(200);
        List<ByteBuf> parts = new ArrayList<>();
        CompositeByteBuf body = chunked("{\"prompt\":\"" + prompt + "\",\"model\":\"m\"}", chunk, parts);
        try {
            assertThat(RequestBody.parse(body).prompt()).isEqualTo(RequestBodyTest.keys("raw:" + prompt));
        } finally {
            body.release();
        }
        assertThat(parts).allSatisfy(p -> assertThat(p.refCnt()).isZero());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            missing model          | {"messages":[{"role":"user","content":"hi"}]} | model: missing
            null model             | {"model":null,"prompt":"hi"}                  | model: missing
            model a number         | {"model":12345}                               | model: 12345
            model an object        | {"model":{"id":"m"}}                          | model: an object
            stream a string        | {"model":"m","stream":"yes"}                  | stream: "yes"
            stream a number        | {"model":"m","stream":1}                      | stream: 1
            cache key a number     | {"model":"m","prompt_cache_key":7}            | prompt_cache_key: 7
            user an array          | {"model":"m","user":["u"]}                    | user: an array
            messages an object     | {"model":"m","messages":{"content":"x"}}      | messages: an object
            body an array          | [{"model":"m"}]                               | body: an array
            truncated mid-string   | {"model":"m","prompt":"unfinished             | malformed JSON
            """)
    void wrongOrMissingFields_areInvalid_andTheChunksAreStillReleasedByTheOwner(String name, String json, String says) {
        List<ByteBuf> parts = new ArrayList<>();
        CompositeByteBuf body = chunked(json, 3, parts);
        try {
            assertThatThrownBy(() -> RequestBody.parse(body))
                    .isInstanceOf(RequestBody.Invalid.class)
                    .hasMessageContaining(says);
            assertThat(body.refCnt()).isEqualTo(1);
        } finally {
            body.release();
        }
        assertThat(parts).allSatisfy(p -> assertThat(p.refCnt()).isZero());
    }
}
