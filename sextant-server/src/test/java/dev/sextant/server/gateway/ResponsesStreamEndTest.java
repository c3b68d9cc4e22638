package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ResponsesStreamEndTest {
    private static final String DELTA = "event: response.output_text.delta\n"
            + "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":4,\"delta\":\"hi\"}\n\n";

    /** Feeds {@code stream} (with {@code \n} and {@code \r} escaped as written) in pieces of {@code piece} bytes. */
    private static boolean ended(String stream, int piece) {
        byte[] bytes = stream.replace("\\n", "\n").replace("\\r", "\r").getBytes(StandardCharsets.UTF_8);
        ResponsesStreamEnd end = new ResponsesStreamEnd();
        for (int from = 0; from < bytes.length; from += piece) {
            ByteBuf b = Unpooled.wrappedBuffer(bytes, from, Math.min(piece, bytes.length - from));
            int readable = b.readableBytes();
            end.feed(b);
            assertThat(b.readableBytes()).as("the bytes are left to be forwarded").isEqualTo(readable);
        }
        return end.ended();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            OpenAI's event line and data                | event: response.completed\\ndata: {"type":"response.completed","sequence_number":9,"response":{}}\\n\\n | true
            incomplete, ended by max_output_tokens      | event: response.incomplete\\ndata: {}\\n\\n | true
            failed                                      | event: response.failed\\ndata: {}\\n\\n | true
            no space after the colon, CRLF lines        | event:response.completed\\r\\ndata:{}\\r\\n\\r\\n | true
            data only, type first                       | data: {"type":"response.completed","response":{"status":"completed"}}\\n\\n | true
            data only, type first, Python's spacing     | data: {"type": "response.completed", "response": {}}\\n\\n | true
            data only, type last (vLLM's field order)   | data: {"response":{"output":[{"text":"a long answer that fills more than the kept bytes"}]},"sequence_number":9,"type":"response.completed"}\\n\\n | true
            data only, type last, Python's spacing      | data: {"response": {}, "sequence_number": 9, "type": "response.completed"}\\n\\n | true
            the last line without its line end          | event: response.completed\\ndata: {} | true
            deltas only: cut short                      | event: response.created\\ndata: {}\\n\\n | false
            data: [DONE] is no Responses end            | event: response.created\\ndata: {}\\n\\ndata: [DONE]\\n\\n | false
            a delta naming the event in its text        | data: {"type":"response.output_text.delta","delta":"event: response.completed"}\\n\\n | false
            a delta ending with the quoted type         | data: {"delta":"x \\"type\\":\\"response.completed\\"","type":"response.output_text.delta"}\\n\\n | false
            a delta whose text ends like a terminal one | data: {"type":"response.output_text.delta","delta":"\\"type\\":\\"response.completed\\"}"}\\n\\n | false
            another event named alike                   | event: response.completed.not\\ndata: {}\\n\\n | false
            """)
    void terminalEvent_isSeen_whateverTheChunksAre(String name, String stream, boolean ended) {
        for (int piece : new int[] {1, 3, 7, 64, 100_000}) {
            assertThat(ended(DELTA + stream, piece)).as("in pieces of %d bytes", piece).isEqualTo(ended);
        }
    }
}
