package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.request.DataPlaneOptions;
import dev.sextant.server.internal.Http;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * An engine that answers anything: a valid answer (JSON, an event stream chunked or to the connection's end, a 500, a
 * 429, chunked JSON) with one to three random edits (bytes deleted, doubled, changed or inserted, among them header
 * lines, CRs and LFs, chunk sizes, SSE events; the text cut; the status or a number replaced), sent in two writes,
 * then the connection closed, kept, or held silent. Through a gateway with short timeouts, streaming and not, over
 * HTTP/2 and HTTP/1.1, every request must end within its deadline in an answer or, only where the engine's own answer
 * was not whole and well framed, in the reset of an answer already begun; an error the gateway makes (5xx) is
 * OpenAI-shaped, and an event stream ends in {@code data: [DONE]} or an error event. Afterwards the gateway serves a
 * good answer and no buffer leaked. A seeded loop ({@code -Dsextant.fuzz.seed=N}, {@code -Dsextant.fuzz.tries=N},
 * default 60, about 20 s): each try costs real sockets and timeouts.
 */
class EngineAnswerFuzzTest {
    static final String JSON_BODY = "{\"id\":\"c1\",\"object\":\"chat.completion\",\"model\":\"m\",\"choices\":[{\"index\":0,"
            + "\"message\":{\"role\":\"assistant\",\"content\":\"hello there\"},\"finish_reason\":\"stop\"}],"
            + "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}";
    static final String EVENT = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
            + "\"delta\":{\"content\":\"tok\"}}]}\n\n";

    static String chunk(String s) {
        return Integer.toHexString(s.length()) + "\r\n" + s + "\r\n";
    }

    static String base(int kind) {
        return switch (kind) {
            case 0 -> "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: " + JSON_BODY.length()
                    + "\r\n\r\n" + JSON_BODY;
            case 1 -> "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                    + chunk(EVENT) + chunk(EVENT) + chunk("data: [DONE]\n\n") + "0\r\n\r\n";
            case 2 -> "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
                    + EVENT + EVENT + "data: [DONE]\n\n";
            case 3 -> "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: 47\r\n\r\n"
                    + "{\"error\":{\"message\":\"boom\",\"type\":\"internal\"}}";
            case 4 -> "HTTP/1.1 429 Too Many Requests\r\nretry-after: 1\r\ncontent-length: 0\r\n\r\n";
            default -> "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
                    + chunk(JSON_BODY.substring(0, 40)) + chunk(JSON_BODY.substring(40)) + "0\r\n\r\n";
        };
    }

    static final String[] INSERTS = {"\r\n", "\n", "\r", ":", " ", "0", "f", "\0", "\u00ff", "-1", "99999999999",
        "content-length: 5\r\n", "transfer-encoding: chunked\r\n", "content-length: 0\r\n", "x: y\r\n",
        "data: [DONE]\n\n", "data: {\"error\":{}}\n\n", "event: x\n", "\r\n\r\n", "HTTP/1.1 200 OK\r\n",
        "content-encoding: gzip\r\n", "data: not json\n\n", "FFFFFFFF\r\n", "content-type: text/html\r\n"};

    static String mutate(String s, SplittableRandom r) {
        int n = 1 + r.nextInt(3);
        for (int i = 0; i < n && !s.isEmpty(); i++) {
            int at = r.nextInt(s.length() + 1);
            switch (r.nextInt(7)) {
                case 0 -> { // delete a range
                    int end = Math.min(s.length(), at + 1 + r.nextInt(20));
                    s = s.substring(0, Math.min(at, end)) + s.substring(end);
                }
                case 1 -> { // duplicate a range
                    int end = Math.min(s.length(), at + 1 + r.nextInt(40));
                    s = s.substring(0, end) + s.substring(Math.min(at, end), end) + s.substring(end);
                }
                case 2 -> s = s.substring(0, at) + INSERTS[r.nextInt(INSERTS.length)] + s.substring(at);
                case 3 -> s = s.substring(0, at); // truncate
                case 4 -> { // status code
                    String[] codes = {"100", "101", "204", "205", "304", "999", "0", "200", "201", "400", "404", "413", "500",
                        "502", "503", "504", "2000", "abc"};
                    s = s.replaceFirst("HTTP/1.1 \\d+", "HTTP/1.1 " + codes[r.nextInt(codes.length)]);
                }
                case 5 -> { // a number changed
                    java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?<=: )\\d+|^[0-9a-f]+(?=\\r\\n)",
                            java.util.regex.Pattern.MULTILINE).matcher(s);
                    if (m.find(Math.min(at, s.length())) || m.find(0)) {
                        String[] nums = {"0", "1", "-1", "5", "99999999", "18446744073709551616", "ffffffffffff", "x"};
                        s = s.substring(0, m.start()) + nums[r.nextInt(nums.length)] + s.substring(m.end());
                    }
                }
                default -> { // a byte changed
                    if (at < s.length()) {
                        s = s.substring(0, at) + (char) r.nextInt(256) + s.substring(at + 1);
                    }
                }
            }
        }
        return s;
    }

    /** Whether the answer is one whole, well-framed HTTP/1.1 response. */
    static String complete(String a, boolean close, boolean hang) {
        int headEnd = a.indexOf("\r\n\r\n");
        if (headEnd < 0) {
            return "no-head";
        }
        String head = a.substring(0, headEnd).toLowerCase();
        String body = a.substring(headEnd + 4);
        if (java.util.regex.Pattern.compile("(?m)^transfer-encoding: *chunked *$").matcher(head).find()) {
            int i = 0;
            while (true) {
                int eol = body.indexOf("\r\n", i);
                if (eol < 0) {
                    return "chunk-cut";
                }
                int n;
                try {
                    n = Integer.parseInt(body.substring(i, eol).trim(), 16);
                } catch (NumberFormatException e) {
                    return "chunk-bad";
                }
                if (n == 0) {
                    return body.startsWith("\r\n", eol + 2) ? "yes" : "trailer-bad";
                }
                i = eol + 2 + n;
                if (i + 2 > body.length() || !body.startsWith("\r\n", i)) {
                    return "chunk-cut";
                }
                i += 2;
            }
        }
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^content-length: *(\\d+) *$").matcher(head);
        if (m.find()) {
            return new java.math.BigInteger(m.group(1)).compareTo(java.math.BigInteger.valueOf(body.length())) <= 0
                    ? "yes" : "cl-short";
        }
        return close && !hang ? "yes-close" : "open-ended";
    }

    @Test
    void anyEngineAnswer_endsInAnAnswerOrTheResetOfOneAlreadyBegun_andTheGatewayServesOn() throws Exception {
        long seed = Long.getLong("sextant.fuzz.seed", 20261206);
        int tries = Integer.getInteger("sextant.fuzz.tries", 60);
        SplittableRandom r = new SplittableRandom(seed);
        Map<String, Integer> outcomes = new TreeMap<>();
        HttpClient http1 = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5)).build();
        LeakWatch leaks = LeakWatch.paranoid();
        try (Fleet fleet = new Fleet(1); RawEngine engine = new RawEngine("", true)) {
            GatewayConfig config = GatewayConfig.defaults("gw").withAccessLog(false)
                    .withTimeouts(Duration.ofMillis(500), Duration.ofMillis(800), Duration.ofMillis(800),
                            Duration.ofSeconds(3))
                    .withOptions(DataPlaneOptions.builder().consecutiveFailures(1_000_000).build());
            try (Gateway gw = Gateway.start(config, SnapshotSource.fixed(engine.behindEveryEngine(fleet.snapshot())),
                    2)) {
                for (int t = 0; t < tries; t++) {
                    int kind = r.nextInt(6);
                    String answer = r.nextInt(8) == 0 ? base(kind) : mutate(base(kind), r);
                    boolean closeAfter = r.nextBoolean();
                    boolean holdAfter = r.nextInt(10) == 0;
                    engine.answer(answer, closeAfter, holdAfter);
                    boolean stream = kind == 1 || kind == 2 ? r.nextInt(5) > 0 : r.nextInt(5) == 0;
                    boolean h2 = r.nextBoolean();
                    String framing = complete(answer, closeAfter, holdAfter);
                    String context = String.format("try %d (seed %d), %s, stream %s, engine %s, its answer (%s):%n%s",
                            t, seed, h2 ? "HTTP/2" : "HTTP/1.1", stream, closeAfter ? "closes"
                                    : holdAfter ? "holds the connection" : "keeps alive", framing, answer);
                    HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gw.port()
                                    + "/v1/chat/completions")).timeout(Duration.ofSeconds(15))
                            .header("content-type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString(Fleet.chat("k" + t, stream, 3))).build();
                    HttpResponse<String> resp;
                    try {
                        resp = h2 ? Fleet.send(request, HttpResponse.BodyHandlers.ofString())
                                : http1.send(request, HttpResponse.BodyHandlers.ofString());
                    } catch (HttpTimeoutException e) {
                        throw new AssertionError("no answer within 15 s: " + context, e);
                    } catch (IOException e) {
                        assertThat(framing).as("the client's %s, on %s", e, context).doesNotStartWith("yes");
                        outcomes.merge("reset", 1, Integer::sum);
                        continue;
                    }
                    int code = resp.statusCode();
                    outcomes.merge(Integer.toString(code), 1, Integer::sum);
                    assertThat(code).as(context).isBetween(100, 599);
                    if (code >= 500) {
                        assertThat(Http.JSON.readTree(resp.body()).path("error").path("message").asText())
                                .as("the gateway's error, OpenAI-shaped: %s; %s", resp.body(), context).isNotBlank();
                    }
                    if (code == 200 && resp.headers().firstValue("content-type").orElse("")
                            .startsWith("text/event-stream")) {
                        assertThat(resp.body()).as(context).containsAnyOf("data: [DONE]", "data: {\"error\"");
                    }
                }
                engine.answer(base(0), false, false);
                HttpResponse<String> ok = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("after", false, 3));
                assertThat(ok.statusCode()).as("a good answer after %s", outcomes).isEqualTo(200);
                assertThat(ok.body()).isEqualTo(JSON_BODY);
            }
            System.out.println("engine answer fuzz, " + tries + " tries: " + outcomes);
            leaks.assertNoLeakReported();
        } finally {
            leaks.close();
        }
    }
}
