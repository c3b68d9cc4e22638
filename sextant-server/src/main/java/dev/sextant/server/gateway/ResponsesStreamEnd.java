package dev.sextant.server.gateway;

import io.netty.buffer.ByteBuf;
import java.nio.charset.StandardCharsets;

/**
 * Tells whether a Responses API event stream ({@code POST /v1/responses} with {@code stream: true}) got to its end. Such
 * a stream has no {@code data: [DONE]}: it is over with its terminal event, {@code response.completed},
 * {@code response.incomplete} or {@code response.failed}. An engine that ends the HTTP body cleanly before one cut the
 * stream short, and the client could not tell that from a complete answer.
 *
 * <p>The event's type is read where OpenAI and vLLM write it, in an {@code event:} line, and, for an engine that sends
 * only {@code data:} lines, in the data's {@code "type"} member when it is the JSON object's first member (OpenAI's
 * order) or its last (the order of vLLM's Python models). The lines are followed byte by byte across chunks, keeping
 * only a line's first and last {@value #KEPT} bytes: no allocation per chunk, and a delta's text cannot pass for a
 * terminal event (it is inside a data line, whose quotes JSON escapes).
 *
 * <p>One per streamed answer, used on its exchange's event loop only.
 */
final class ResponsesStreamEnd {
    /** What a stream that ends too soon lacks, for the error event and the log. */
    static final String MISSING = "a response.completed, response.incomplete or response.failed event";

    private static final byte[][] TERMINAL = {ascii("response.completed"), ascii("response.incomplete"),
        ascii("response.failed")};
    private static final byte[] EVENT = ascii("event:");
    private static final byte[] DATA = ascii("data:");
    private static final byte[] TYPE = ascii("{\"type\":");
    private static final byte[] TYPE_LAST = ascii("\"type\":");
    /** Longest part of a line's start and end kept: a field name, a type and a little JSON around it. */
    static final int KEPT = 48;

    private final byte[] head = new byte[KEPT];
    private final byte[] tail = new byte[KEPT]; // a ring: the line's last KEPT bytes end at (length − 1) % KEPT
    private final byte[] last = new byte[KEPT]; // the ring in order, when a data line ends
    private int length; // bytes of the current line so far
    private boolean afterCr; // a CR ended the last line: a LF right after it ends nothing more
    private boolean ended;

    /** Follows {@code content}'s readable bytes, leaving its indices as they are. */
    void feed(ByteBuf content) {
        for (int i = content.readerIndex(), end = content.writerIndex(); i < end && !ended; i++) {
            byte b = content.getByte(i);
            if (b == '\n' || b == '\r') {
                if (!(b == '\n' && afterCr)) {
                    endOfLine();
                }
                afterCr = b == '\r';
                continue;
            }
            afterCr = false;
            if (length < KEPT) {
                head[length] = b;
            }
            tail[length % KEPT] = b;
            length++;
        }
    }

    /** Whether the stream's terminal event has been seen. */
    boolean ended() {
        if (!ended && length > 0) { // a last line without its line end still says what it says
            endOfLine();
        }
        return ended;
    }

    private void endOfLine() {
        if (startsWith(EVENT)) {
            ended = isTerminal(head, valueStart(EVENT.length), Math.min(length, KEPT));
        } else if (startsWith(DATA)) {
            ended = typeFirst(valueStart(DATA.length)) || typeLast();
        }
        length = 0;
    }

    /** Where a field's value starts: after its colon and one optional space (the SSE rule). */
    private int valueStart(int afterColon) {
        return afterColon < Math.min(length, KEPT) && head[afterColon] == ' ' ? afterColon + 1 : afterColon;
    }

    private boolean startsWith(byte[] prefix) {
        return length >= prefix.length && regionEquals(head, 0, prefix);
    }

    /** {@code {"type":"<terminal>"} …} or with spaces after the colon, at {@code from} of the kept head. */
    private boolean typeFirst(int from) {
        int kept = Math.min(length, KEPT);
        if (from + TYPE.length > kept || !regionEquals(head, from, TYPE)) {
            return false;
        }
        int i = skipSpaces(head, from + TYPE.length, kept);
        if (i >= kept || head[i] != '"') {
            return false;
        }
        int close = indexOf(head, (byte) '"', i + 1, kept);
        return close > 0 && isTerminal(head, i + 1, close);
    }

    /** {@code … "type":"<terminal>"}} (spaces allowed around the colon's value) at the end of the line. */
    private boolean typeLast() {
        int n = Math.min(length, KEPT);
        for (int k = 0; k < n; k++) {
            last[k] = tail[(length - n + k) % KEPT];
        }
        int end = n;
        while (end > 0 && last[end - 1] == ' ') {
            end--;
        }
        if (end < 2 || last[end - 1] != '}' || last[end - 2] != '"') {
            return false;
        }
        int close = end - 2;
        int open = lastIndexOf(last, (byte) '"', close - 1);
        if (open < 0 || !isTerminal(last, open + 1, close)) {
            return false;
        }
        int colonEnd = open;
        while (colonEnd > 0 && last[colonEnd - 1] == ' ') {
            colonEnd--;
        }
        return colonEnd >= TYPE_LAST.length && regionEquals(last, colonEnd - TYPE_LAST.length, TYPE_LAST);
    }

    private static boolean isTerminal(byte[] line, int from, int to) {
        while (to > from && line[to - 1] == ' ') {
            to--;
        }
        for (byte[] t : TERMINAL) {
            if (to - from == t.length && regionEquals(line, from, t)) {
                return true;
            }
        }
        return false;
    }

    private static boolean regionEquals(byte[] line, int from, byte[] what) {
        if (from < 0 || from + what.length > line.length) {
            return false;
        }
        for (int k = 0; k < what.length; k++) {
            if (line[from + k] != what[k]) {
                return false;
            }
        }
        return true;
    }

    private static int skipSpaces(byte[] line, int from, int to) {
        while (from < to && line[from] == ' ') {
            from++;
        }
        return from;
    }

    private static int indexOf(byte[] line, byte b, int from, int to) {
        for (int k = from; k < to; k++) {
            if (line[k] == b) {
                return k;
            }
        }
        return -1;
    }

    private static int lastIndexOf(byte[] line, byte b, int from) {
        for (int k = from; k >= 0; k--) {
            if (line[k] == b) {
                return k;
            }
        }
        return -1;
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
