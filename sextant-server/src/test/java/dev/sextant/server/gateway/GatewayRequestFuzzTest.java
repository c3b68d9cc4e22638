package dev.sextant.server.gateway;

import dev.sextant.server.internal.RequestGuard;
import dev.sextant.server.internal.ClientLimits;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.internal.Http;
import dev.sextant.server.internal.OversizedAwareAggregator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpRequestDecoder;
import io.netty.handler.codec.http.HttpRequestEncoder;
import io.netty.handler.codec.http.HttpResponseDecoder;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.LongAdder;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * Fuzzes the gateway's request path with the real pipeline ({@link HttpServerCodec}, {@link RequestGuard}, the body
 * aggregator, {@link FrontHandler}, {@link Exchange}) in an {@link EmbeddedChannel}: valid OpenAI requests (chat,
 * completions, embeddings; streaming or not; with {@code prompt_cache_key}, {@code user}, session and residency
 * headers; small and large bodies; Content-Length or chunked; pipelined), generated with jqwik, then mutated at the
 * JSON level or byte for byte (request line, headers, chunk framing included), and delivered in random segments.
 * Engines are {@link UpstreamHandler}s on embedded channels in the gateway's pool, answering 200 (JSON or SSE) or 400.
 *
 * <p>Properties, for every input: no answer is a 5xx (the engines never send one, so any 5xx would be caused by
 * the input); no exception reaches the end of the
 * pipeline and nothing is logged as an internal error; every answer on the wire is a whole HTTP response; an open
 * connection has answered every request that arrived whole, exactly once, and a closed one said
 * {@code connection: close}; what reaches an engine is one well-formed request with only the forwarded headers, no
 * CR/LF/NUL in a value, and a JSON object body. Leaks: Netty's detector at PARANOID over the whole run.
 *
 * <p>Size: {@code -Dsextant.fuzz.tries=N} inputs (default 1,500: a few seconds on an idle machine), seed
 * {@code -Dsextant.fuzz.seed}; a progress line every 10,000 inputs.
 * The nightly-size run (docs/reliability-hostile.md):
 * {@code mvn -B -pl sextant-server -am test -Dtest=GatewayRequestFuzzTest -Dsurefire.failIfNoSpecifiedTests=false
 * -Dsextant.fuzz.tries=100000}
 */
class GatewayRequestFuzzTest {
    static final int TRIES = Integer.getInteger("sextant.fuzz.tries", 1500);
    static final long SEED = Long.getLong("sextant.fuzz.seed", 20261129L);
    private static final int MAX_BODY = 8192;
    private static final int MAX_HEAD = 4096;
    /** Headers the gateway may send to an engine (the last its own, naming its gateway cluster). */
    private static final Set<String> FORWARDED = Set.of("content-type", "accept", "authorization", "user-agent",
            "x-request-id", "host", "content-length", "x-sextant-gateway-cluster");

    private static LeakWatch leaks;
    private static Fleet fleet;
    private static Gateway gw;
    private static final List<String> internalErrors = new CopyOnWriteArrayList<>();
    private static final Handler errorLog = new Handler() {
        @Override
        public void publish(LogRecord r) {
            if (r.getLevel().intValue() >= Level.WARNING.intValue() && r.getLoggerName() != null
                    && r.getLoggerName().startsWith("dev.sextant.server.gateway.FrontHandler")) {
                internalErrors.add(r.getMessage() + " " + r.getThrown());
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    @BeforeContainer
    static void start() {
        leaks = LeakWatch.paranoid();
        fleet = new Fleet(1);
        gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false).withMaxBodyBytes(MAX_BODY)
                        .withClientLimits(new ClientLimits(Duration.ofSeconds(10), Duration.ofSeconds(10), MAX_HEAD)),
                SnapshotSource.fixed(fleet.snapshot()), 1);
        Logger.getLogger("dev.sextant.server.gateway").addHandler(errorLog);
    }

    @AfterContainer
    static void stop() {
        Logger.getLogger("dev.sextant.server.gateway").removeHandler(errorLog);
        gw.close();
        fleet.close();
        leaks.assertNoLeakThenClose();
    }

    // ---- inputs ----

    /** One OpenAI request as a client would send it. */
    record Req(String path, String method, boolean stream, String model, String cacheKey, String user, String session,
               String residency, String priority, String requestId, int promptChars, boolean chunked,
               boolean keepAlive, boolean expectContinue, List<String> extraHeaders) {
        String json() {
            String prompt = "p".repeat(promptChars);
            StringBuilder b = new StringBuilder("{\"model\":").append(model == null ? "null" : quote(model));
            b.append(",\"stream\":").append(stream);
            if (cacheKey != null) {
                b.append(",\"prompt_cache_key\":").append(quote(cacheKey));
            }
            if (user != null) {
                b.append(",\"user\":").append(quote(user));
            }
            switch (path) {
                case "/v1/chat/completions" -> b.append(",\"max_tokens\":4,\"messages\":[{\"role\":\"system\",\"content\":"
                        + "\"be brief\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":").append(quote(prompt))
                        .append("}]}]");
                case "/v1/completions" -> b.append(",\"max_tokens\":4,\"prompt\":").append(quote(prompt));
                default -> b.append(",\"input\":[").append(quote(prompt)).append(",\"second\"]");
            }
            return b.append(",\"temperature\":0.5,\"n\":1}").toString();
        }

        byte[] bytes(String body) {
            byte[] content = body.getBytes(StandardCharsets.UTF_8);
            StringBuilder h = new StringBuilder(method).append(' ').append(path).append(" HTTP/1.1\r\nHost: gw\r\n");
            h.append("Content-Type: application/json\r\nAccept: */*\r\nUser-Agent: fuzz/1.0\r\n");
            h.append("Authorization: Bearer sk-test\r\n");
            header(h, "x-request-id", requestId);
            header(h, "x-sextant-session", session);
            header(h, "x-sextant-residency", residency);
            header(h, "x-sextant-priority", priority);
            if (!keepAlive) {
                h.append("Connection: close\r\n");
            }
            if (expectContinue) {
                h.append("Expect: 100-continue\r\n");
            }
            extraHeaders.forEach(x -> h.append(x).append("\r\n"));
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            if (chunked) {
                h.append("Transfer-Encoding: chunked\r\n\r\n");
                out.writeBytes(h.toString().getBytes(StandardCharsets.ISO_8859_1));
                for (int off = 0; off < content.length; off += 700) {
                    int n = Math.min(700, content.length - off);
                    out.writeBytes((Integer.toHexString(n) + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
                    out.write(content, off, n);
                    out.writeBytes("\r\n".getBytes(StandardCharsets.ISO_8859_1));
                }
                out.writeBytes("0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
            } else {
                h.append("Content-Length: ").append(content.length).append("\r\n\r\n");
                out.writeBytes(h.toString().getBytes(StandardCharsets.ISO_8859_1));
                out.writeBytes(content);
            }
            return out.toByteArray();
        }

        private static void header(StringBuilder h, String name, String value) {
            if (value != null) {
                h.append(name).append(": ").append(value).append("\r\n");
            }
        }

        private static String quote(String s) {
            return Http.JSON.getNodeFactory().textNode(s).toString();
        }
    }

    /** One edit of a byte array: which kind, where (a fraction of the length), how many, and a byte to use. */
    record Edit(int kind, double where, int length, byte value) {
        byte[] apply(byte[] in) {
            int at = Math.min(in.length, (int) (where * in.length));
            ByteArrayOutputStream out = new ByteArrayOutputStream(in.length + 64);
            switch (kind) {
                case 0 -> { // replace a byte
                    out.write(in, 0, in.length);
                    byte[] b = out.toByteArray();
                    if (at < b.length) {
                        b[at] = value;
                    }
                    return b;
                }
                case 1 -> { // insert a byte
                    out.write(in, 0, at);
                    out.write(value);
                    out.write(in, at, in.length - at);
                }
                case 2 -> { // delete a range
                    out.write(in, 0, at);
                    int from = Math.min(in.length, at + length);
                    out.write(in, from, in.length - from);
                }
                case 3 -> { // duplicate a range
                    int to = Math.min(in.length, at + length);
                    out.write(in, 0, to);
                    out.write(in, at, to - at);
                    out.write(in, to, in.length - to);
                }
                case 4 -> { // insert a token that means something to an HTTP or JSON parser
                    out.write(in, 0, at);
                    out.writeBytes(TOKENS[Math.floorMod(value, TOKENS.length)].getBytes(StandardCharsets.ISO_8859_1));
                    out.write(in, at, in.length - at);
                }
                default -> out.write(in, 0, at); // truncate
            }
            return out.toByteArray();
        }
    }

    static final String[] TOKENS = {"\r\n", "\n", "\r", "\0", ":", " ", "\t", "\r\n ", "\r\n\r\n", "\"", "\\", "{",
            "}", "[", "]", ",", "null", "true", "1e999", "-0", "\uFFFF", "\u00ff", "%2e%2e/", "/../", "%00", "?",
            "#", "Transfer-Encoding: chunked\r\n", "Content-Length: 0\r\n", "Content-Length: 99999999\r\n",
            "Connection: close\r\n", "Expect: 100-continue\r\n", "Host: a\r\n", "0\r\n\r\n", "ffffffff\r\n",
            "GET /healthz HTTP/1.1\r\n\r\n", "HTTP/1.0", "x-sextant-residency: us-east\r\n", "\"model\":\"m\"",
            "\"stream\":true", "\"prompt_cache_key\":7", "\"messages\":{}", "\"user\":[]", "\uD83D\uDE00", "\\u0000",
            "\\ud800"};

    static Arbitrary<Req> requests() {
        Arbitrary<String> path = Arbitraries.of("/v1/chat/completions", "/v1/completions", "/v1/embeddings");
        Arbitrary<String> text = Arbitraries.oneOf(Arbitraries.strings().ofMaxLength(24),
                Arbitraries.strings().alpha().numeric().ofMinLength(1).ofMaxLength(12), Arbitraries.just(" "));
        Arbitrary<String> maybeText = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(3, Arbitraries.just((String) null)), net.jqwik.api.Tuple.of(2, text));
        Arbitrary<String> model = Arbitraries.frequencyOf(net.jqwik.api.Tuple.of(8, Arbitraries.just("m")),
                net.jqwik.api.Tuple.of(1, text), net.jqwik.api.Tuple.of(1, Arbitraries.just((String) null)));
        Arbitrary<String> residency = Arbitraries.of(null, "eu-west", "us-east", "eu-west, us-east", " , ,",
                "mars", "EU-WEST");
        Arbitrary<String> priority = Arbitraries.of(null, "0", "5", "-1", "99999999999", " 2 ", "high");
        Arbitrary<String> headerValue = Arbitraries.strings().withCharRange(' ', '~').ofMaxLength(40);
        Arbitrary<String> extra = Arbitraries.of("Connection: keep-alive, Upgrade", "Upgrade: h2c", "TE: trailers",
                "Keep-Alive: timeout=5", "Proxy-Authorization: Basic eA==", "Trailer: x", "X-Forwarded-For: 1.2.3.4",
                "Forwarded: for=evil", "Proxy-Connection: keep-alive", "Cookie: a=b", "Host: evil.example");
        Arbitrary<Integer> prompt = Arbitraries.frequencyOf(net.jqwik.api.Tuple.of(8, Arbitraries.integers().between(0, 300)),
                net.jqwik.api.Tuple.of(2, Arbitraries.integers().between(301, 12000)));
        return Combinators.combine(
                Combinators.combine(path, Arbitraries.frequency(net.jqwik.api.Tuple.of(18, "POST"), net.jqwik.api.Tuple.of(1, "GET"),
                        net.jqwik.api.Tuple.of(1, "PUT")), Arbitraries.of(true, false),
                        model, maybeText, maybeText, maybeText, residency).as((p, m, s, mo, k, u, se, r) ->
                        new Object[] {p, m, s, mo, k, u, se, r}),
                Combinators.combine(priority, headerValue.injectNull(0.5), prompt, Arbitraries.of(true, false),
                        Arbitraries.frequency(net.jqwik.api.Tuple.of(9, true), net.jqwik.api.Tuple.of(1, false)),
                        Arbitraries.frequency(net.jqwik.api.Tuple.of(1, true), net.jqwik.api.Tuple.of(19, false)),
                        extra.list().ofMaxSize(3)).as((pr, id, n, ch, ka, ec, x) -> new Object[] {pr, id, n, ch, ka, ec, x}))
                .as((a, b) -> new Req((String) a[0], (String) a[1], (Boolean) a[2], (String) a[3], (String) a[4],
                        (String) a[5], (String) a[6], (String) a[7], (String) b[0], (String) b[1], (Integer) b[2],
                        (Boolean) b[3], (Boolean) b[4], (Boolean) b[5], castList(b[6])));
    }

    @SuppressWarnings("unchecked")
    private static List<String> castList(Object o) {
        return (List<String>) o;
    }

    static Arbitrary<Edit> edits() {
        return Combinators.combine(Arbitraries.integers().between(0, 5), Arbitraries.doubles().between(0, 1),
                Arbitraries.integers().between(1, 24), Arbitraries.bytes()).as(Edit::new);
    }

    /** A whole input: 1–3 pipelined requests, edits at the JSON or the byte level, and where the bytes are cut. */
    record Input(List<Req> requests, int level, List<Edit> jsonEdits, List<Edit> byteEdits, List<Double> cuts) {
        byte[] bytes() {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            for (Req r : requests) {
                byte[] body = r.json().getBytes(StandardCharsets.UTF_8);
                if (level == 1) {
                    for (Edit e : jsonEdits) {
                        body = e.apply(body);
                    }
                }
                out.writeBytes(r.bytes(new String(body, StandardCharsets.UTF_8)));
            }
            byte[] raw = out.toByteArray();
            if (level == 2) {
                for (Edit e : byteEdits) {
                    raw = e.apply(raw);
                }
            }
            return raw;
        }
    }

    static Arbitrary<Input> inputs() {
        return Combinators.combine(requests().list().ofMinSize(1).ofMaxSize(3), Arbitraries.integers().between(0, 2),
                edits().list().ofMinSize(1).ofMaxSize(3), edits().list().ofMinSize(1).ofMaxSize(4),
                Arbitraries.doubles().between(0, 1).list().ofMaxSize(3)).as(Input::new);
    }

    // ---- the run ----

    @Example
    void fuzzedRequests_getOneWholeAnswerEach_neverA5xxOrAnEscapedException_andEnginesSeeCleanRequests() {
        Random random = new Random(SEED);
        net.jqwik.api.RandomGenerator<Input> gen = inputs().generator(100);
        Map<Integer, Integer> statuses = new java.util.TreeMap<>();
        long started = System.nanoTime();
        for (int i = 0; i < TRIES; i++) {
            if (i > 0 && i % 10_000 == 0) {
                System.out.printf("request fuzz: %d inputs in %.1f s, answers by status %s%n", i,
                        (System.nanoTime() - started) / 1e9, statuses);
            }
            Input input = gen.next(random).value();
            byte[] raw = input.bytes();
            try {
                runOne(input, raw, statuses);
            } catch (Exception | AssertionError e) {
                throw new AssertionError("input " + i + " (seed " + SEED + "): " + e.getMessage() + "\nbytes: "
                        + shown(raw), e);
            }
        }
        System.out.printf("request fuzz: %d inputs in %.1f s, answers by status %s%n", TRIES,
                (System.nanoTime() - started) / 1e9, statuses);
        assertThat(internalErrors).as("internal errors logged").isEmpty();
        assertThat(gw.inFlight()).isZero();
    }

    private static void runOne(Input input, byte[] raw, Map<Integer, Integer> statuses) {
        // one idle embedded "connection" per engine in this thread's pool (the embedded loop runs on it)
        Map<EmbeddedChannel, String> engines = new LinkedHashMap<>();
        fleet.engines.values().forEach(e -> {
            EmbeddedChannel up = new EmbeddedChannel(new UpstreamHandler());
            engines.put(up, "http://127.0.0.1:" + e.port());
            gw.pool.release(engines.get(up), up);
        });
        RequestGuard guard = new RequestGuard(gw.config.clientLimits(), gw.config.idleTimeout());
        Counter counter = new Counter();
        EmbeddedChannel front = new EmbeddedChannel(guard.bytesIn(),
                new HttpServerCodec(new HttpDecoderConfig().setMaxInitialLineLength(MAX_HEAD).setMaxHeaderSize(MAX_HEAD)),
                counter, guard, new OversizedAwareAggregator(MAX_BODY, new LongAdder()), new FrontHandler(gw));
        front.config().setAutoRead(false);
        EmbeddedChannel client = new EmbeddedChannel(new HttpResponseDecoder(), new HttpObjectAggregator(1 << 24));
        List<FullHttpResponse> answers = new ArrayList<>();
        try {
            int from = 0;
            List<Double> cuts = new ArrayList<>(input.cuts());
            cuts.add(1.0);
            cuts.sort(null);
            for (double cut : cuts) {
                int to = Math.max(from, (int) (cut * raw.length));
                if (to > from && front.isOpen()) {
                    front.writeInbound(Unpooled.wrappedBuffer(raw, from, to - from));
                }
                from = to;
                answerEngines(engines);
            }
            front.checkException();
            for (Object o; (o = front.readOutbound()) != null; ) {
                client.writeInbound(o);
            }
            for (Object o; (o = client.readInbound()) != null; ) {
                answers.add((FullHttpResponse) o);
            }
            boolean open = front.isOpen();
            List<FullHttpResponse> finals = answers.stream().filter(r -> r.status().code() >= 200).toList();
            for (FullHttpResponse r : answers) {
                assertThat(r.decoderResult().isSuccess()).as("a well-formed answer").isTrue();
                int code = r.status().code();
                statuses.merge(code, 1, Integer::sum);
                if (code >= 500) {
                    String body = r.content().toString(StandardCharsets.UTF_8);
                    assertThat(code).as("a 5xx with no engine 5xx behind it: " + code + " " + body).isLessThan(500);
                }
            }
            assertThat(finals.size()).as("answers ≤ requests begun").isLessThanOrEqualTo(counter.begun);
            if (open) {
                assertThat(finals.size()).as("every request that arrived whole is answered").isGreaterThanOrEqualTo(
                        counter.whole);
            } else {
                assertThat(finals).as("a closed connection answered first").isNotEmpty();
                assertThat(HttpUtil.isKeepAlive(finals.get(finals.size() - 1))).as("and said connection: close")
                        .isFalse();
            }
        } finally {
            answers.forEach(ReferenceCountUtil::release);
            front.finishAndReleaseAll();
            client.finishAndReleaseAll();
            engines.keySet().forEach(EmbeddedChannel::finishAndReleaseAll);
            // empty this thread's pool: the next input brings its own connections
            for (String endpoint : new java.util.HashSet<>(engines.values())) {
                for (io.netty.channel.Channel c; (c = gw.pool.pollIdle(endpoint)) != null; ) {
                    c.close();
                }
            }
        }
    }

    /** Answers every request an engine received, after checking it; until no engine has one left. */
    private static void answerEngines(Map<EmbeddedChannel, String> engines) {
        for (int round = 0; round < 10; round++) {
            boolean any = false;
            for (EmbeddedChannel up : engines.keySet()) {
                for (FullHttpRequest req; (req = nextRequest(up)) != null; ) {
                    any = true;
                    boolean stream;
                    boolean refuse = req.content().readableBytes() % 10 == 0; // one in ten: the engine's own 400
                    try {
                        stream = checkForwarded(req);
                    } finally {
                        req.release();
                    }
                    answer(up, stream, refuse);
                }
            }
            if (!any) {
                return;
            }
        }
    }

    /**
     * The next request written to an engine connection, whole: its head and the parts of its body (the gateway writes a
     * body in parts, {@code Exchange}), or null when none is left.
     */
    private static FullHttpRequest nextRequest(EmbeddedChannel up) {
        Object first = up.readOutbound();
        if (first == null) {
            return null;
        }
        HttpRequest head = (HttpRequest) first;
        io.netty.buffer.CompositeByteBuf body = Unpooled.compositeBuffer();
        for (Object part = up.readOutbound(); ; part = up.readOutbound()) {
            assertThat(part).as("the body of the request, to its last part").isInstanceOf(HttpContent.class);
            body.addComponent(true, ((HttpContent) part).content());
            if (part instanceof LastHttpContent) {
                return new DefaultFullHttpRequest(head.protocolVersion(), head.method(),
                        head.uri(), body, head.headers(), ((LastHttpContent) part).trailingHeaders());
            }
        }
    }

    /** What an engine gets: the forwarded headers only, clean values, one request on the wire, a JSON object body. */
    private static boolean checkForwarded(FullHttpRequest req) {
        req.headers().forEach(h -> {
            assertThat(FORWARDED).as("header forwarded to the engine").contains(h.getKey().toLowerCase());
            assertThat(h.getValue()).as("value of " + h.getKey()).doesNotContain("\r").doesNotContain("\n")
                    .doesNotContain("\0");
        });
        assertThat(req.headers().getAll("x-sextant-gateway-cluster")).as("the gateway's cluster").containsExactly("gw");
        EmbeddedChannel enc = new EmbeddedChannel(new HttpRequestEncoder());
        EmbeddedChannel dec = new EmbeddedChannel(new HttpRequestDecoder(), new HttpObjectAggregator(1 << 24));
        try {
            enc.writeOutbound(req.retainedDuplicate());
            for (Object b; (b = enc.readOutbound()) != null; ) {
                dec.writeInbound(b);
            }
            FullHttpRequest parsed = dec.readInbound();
            assertThat(parsed).as("the bytes sent to the engine parse as a request").isNotNull();
            try {
                assertThat(parsed.decoderResult().isSuccess()).isTrue();
                assertThat(parsed.headers().size()).isEqualTo(req.headers().size());
                assertThat((Object) dec.readInbound()).as("and as exactly one").isNull();
            } finally {
                parsed.release();
            }
        } finally {
            enc.finishAndReleaseAll();
            dec.finishAndReleaseAll();
        }
        assertThat(HttpUtil.getContentLength(req, -1L)).isEqualTo(req.content().readableBytes());
        try {
            com.fasterxml.jackson.databind.JsonNode body = Http.JSON.readTree(req.content().toString(StandardCharsets.UTF_8));
            assertThat(body.isObject()).as("the body the gateway parsed is what the engine gets").isTrue();
            return body.path("stream").asBoolean(false);
        } catch (java.io.IOException e) {
            throw new AssertionError("the engine got a body that is not JSON", e);
        }
    }

    /** Answers as the HTTP client codec in front of {@link UpstreamHandler} delivers: a head, then content parts. */
    private static void answer(EmbeddedChannel up, boolean stream, boolean clientError) {
        DefaultHttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1,
                clientError ? HttpResponseStatus.BAD_REQUEST : HttpResponseStatus.OK);
        if (stream && !clientError) {
            head.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream");
            HttpUtil.setTransferEncodingChunked(head, true);
            feed(up, head);
            feed(up, new DefaultHttpContent(Unpooled.copiedBuffer("data: {\"x\":1}\n\n", StandardCharsets.UTF_8)));
            feed(up, new DefaultLastHttpContent(Unpooled.copiedBuffer("data: [DONE]\n\n", StandardCharsets.UTF_8)));
            return;
        }
        ByteBuf body = Unpooled.copiedBuffer(clientError ? Http.errorBody("engine says no", "invalid_request_error", null)
                : "{\"object\":\"chat.completion\"}", StandardCharsets.UTF_8);
        head.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json");
        HttpUtil.setContentLength(head, body.readableBytes());
        feed(up, head);
        feed(up, new DefaultLastHttpContent(body));
    }

    /** An engine's message, unless the gateway closed that connection meanwhile (client gone, stream cut). */
    private static void feed(EmbeddedChannel up, Object msg) {
        if (up.isOpen()) {
            up.writeInbound(msg);
        } else {
            ReferenceCountUtil.release(msg);
        }
    }

    /** Counts requests the decoder began and those that arrived whole (or were refused whole by the decoder). */
    static final class Counter extends ChannelInboundHandlerAdapter {
        int begun;
        int whole;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof HttpRequest r) {
                begun++;
                if (r.decoderResult().isFailure()) {
                    whole++;
                }
            } else if (msg instanceof LastHttpContent || msg instanceof HttpContent c && c.decoderResult().isFailure()) {
                whole++;
            }
            ctx.fireChannelRead(msg);
        }
    }

    /** The input for a failure message: CR and LF shown, long runs of the prompt filler shortened. */
    static String shown(byte[] raw) {
        String s = new String(raw, StandardCharsets.ISO_8859_1).replaceAll("p{20,}", "p…")
                .replace("\r", "\\r").replace("\n", "\\n\n");
        return s.length() > 4000 ? s.substring(0, 4000) + "…" : s;
    }
}
