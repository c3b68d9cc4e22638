package dev.sextant.server.engine;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sextant.config.Json;
import dev.sextant.server.internal.Http;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * One connection's HTTP/1.1 handling. Requests are answered one at a time in arrival order (a pipelined
 * request waits for the previous answer); the channel reads again only when the answer is written. Nothing
 * throws out of here: an unexpected error becomes a 500 in OpenAI's shape, a log line and a close.
 */
final class EngineHttpHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
    private static final Logger LOG = Logger.getLogger(EngineHttpHandler.class.getName());
    private static final String[] WORDS = {"the", "engine", "routes", "tokens", "to", "a", "near", "cluster",
        "while", "cache", "stays", "warm", "and", "latency", "low", "so"};

    private final EngineEmulator engine;
    private final ObjectMapper json;
    private final ArrayDeque<FullHttpRequest> pending = new ArrayDeque<>();
    private boolean busy;
    /** The request waiting out its network round trip, owned until handled, or released if the connection closes. */
    private FullHttpRequest delayed;
    private boolean http10;
    /** The sequences generating the answer in progress (one per choice), or null. */
    private Sequence[] current;

    EngineHttpHandler(EngineEmulator engine) {
        super(false);
        this.engine = engine;
        this.json = engine.json;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        ctx.read();
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
        if (busy) {
            pending.add(request);
            return;
        }
        busy = true;
        dispatch(ctx, request);
    }

    /** The paths a gateway's request reaches over the emulated network; the others are the operator's. */
    private static final java.util.Set<String> OVER_THE_NETWORK = java.util.Set.of("/v1/chat/completions",
            "/v1/completions", "/v1/responses", "/v1/embeddings", "/v1/models", "/health");

    /**
     * Handles {@code request} (owned, released here) now, or once the network round trip between this engine and the
     * request's gateway cluster has passed. The request "arrives" half a round trip late and every byte of its answer
     * reaches the client half a round trip after it left; starting the work a whole round trip late gives the client
     * the same first-token and end-to-end times and keeps the tokens' pacing. The engine's own clock (its metrics and
     * {@code engine_timing}) starts when the work does, as a real engine's would. A timer on the channel's event
     * loop, no thread held.
     */
    private void dispatch(ChannelHandlerContext ctx, FullHttpRequest request) {
        long rtt = OVER_THE_NETWORK.contains(pathOf(request.uri()))
                ? engine.networkRttNanos(request.headers().get(Http.GATEWAY_CLUSTER_HEADER)) : 0;
        if (rtt <= 0) {
            try {
                handle(ctx, request);
            } finally {
                request.release();
            }
            return;
        }
        delayed = request; // one at a time: the next request waits for this one's answer
        engine.delayed();
        try {
            ctx.executor().schedule(() -> {
                FullHttpRequest r = delayed;
                delayed = null;
                if (r == null) {
                    return; // the connection closed meanwhile, and released it
                }
                try {
                    handle(ctx, r);
                } finally {
                    r.release();
                }
            }, rtt, java.util.concurrent.TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) { // the engine is closing
            delayed = null;
            request.release();
            ctx.close();
        }
    }

    private static String pathOf(String uri) {
        int q = uri.indexOf('?');
        return q < 0 ? uri : uri.substring(0, q);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (current != null) {
            for (Sequence s : current) {
                engine.scheduler.cancel(s);
            }
            current = null;
        }
        FullHttpRequest r;
        while ((r = pending.poll()) != null) {
            r.release();
        }
        if (delayed != null) { // its timer finds nothing to do
            delayed.release();
            delayed = null;
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (!(cause instanceof IOException)) {
            LOG.log(Level.WARNING, "engine " + engine.config.engineId() + ": closing a connection", cause);
        }
        ctx.close();
    }

    /** The previous answer is written: take the next pipelined request, or read more. */
    private void done(ChannelHandlerContext ctx) {
        current = null;
        FullHttpRequest next = pending.poll();
        if (next == null) {
            busy = false;
            ctx.read();
            return;
        }
        dispatch(ctx, next);
    }

    private void handle(ChannelHandlerContext ctx, FullHttpRequest request) {
        boolean keepAlive = HttpUtil.isKeepAlive(request);
        http10 = request.protocolVersion().equals(HttpVersion.HTTP_1_0);
        try {
            if (!request.decoderResult().isSuccess()) {
                throw OpenAiErrors.badRequest("Malformed HTTP request.");
            }
            String path = pathOf(request.uri());
            HttpMethod method = request.method();
            switch (path) {
                case "/health" -> { // vLLM's (SGLang's and TGI's too): 200 and no body while the engine is up
                    expect(method, HttpMethod.GET);
                    respond(ctx, keepAlive, HttpResponseStatus.OK, null, new byte[0]);
                }
                case "/healthz" -> {
                    expect(method, HttpMethod.GET);
                    ObjectNode body = json.createObjectNode().put("status", "ok").put("engine_id", engine.config.engineId());
                    respond(ctx, keepAlive, HttpResponseStatus.OK, body);
                }
                case "/metrics" -> {
                    expect(method, HttpMethod.GET);
                    respond(ctx, keepAlive, HttpResponseStatus.OK, "text/plain; version=0.0.4; charset=utf-8",
                            engine.scheduler.meters().scrape().getBytes(StandardCharsets.UTF_8));
                }
                case "/v1/models" -> {
                    expect(method, HttpMethod.GET);
                    respond(ctx, keepAlive, HttpResponseStatus.OK, models());
                }
                case "/admin/faults" -> {
                    if (engine.adminToken != null
                            && !engine.adminToken.accepts(request.headers().get(HttpHeaderNames.AUTHORIZATION))) {
                        throw new OpenAiErrors.ApiError(HttpResponseStatus.UNAUTHORIZED, "invalid_request_error",
                                "unauthorized", "Missing or wrong bearer token.");
                    }
                    expect(method, HttpMethod.GET, HttpMethod.POST);
                    if (method.equals(HttpMethod.POST)) {
                        engine.setFaults(faultsFrom(parse(request.content()), engine.faults()));
                    }
                    respond(ctx, keepAlive, HttpResponseStatus.OK, faultsJson(engine.faults()));
                }
                case "/v1/chat/completions", "/v1/completions", "/v1/responses" -> {
                    engine.received();
                    expect(method, HttpMethod.POST);
                    JsonNode body = parse(request.content());
                    GenerationRequest.Api api = path.equals("/v1/chat/completions") ? GenerationRequest.Api.CHAT
                            : path.equals("/v1/completions") ? GenerationRequest.Api.COMPLETIONS
                            : GenerationRequest.Api.RESPONSES;
                    GenerationRequest g = GenerationRequest.parse(body, api, engine.config.defaultMaxTokens(),
                            engine.config.models(), engine.config.priorityScheduling());
                    generate(ctx, keepAlive, g, body, request.headers().get("x-request-id"));
                }
                case "/v1/embeddings" -> {
                    engine.received();
                    expect(method, HttpMethod.POST);
                    embed(ctx, keepAlive, parse(request.content()));
                }
                default -> throw OpenAiErrors.notFound("not_found", "No route for " + method + " " + path + ".");
            }
        } catch (OpenAiErrors.ApiError e) {
            error(ctx, keepAlive, e);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "engine " + engine.config.engineId() + ": request failed", e);
            error(ctx, false, new OpenAiErrors.ApiError(HttpResponseStatus.INTERNAL_SERVER_ERROR, "server_error",
                    null, "Internal error."));
        }
    }

    /**
     * Refuses any method but the {@code expected} ones (and HEAD wherever GET is) with a 405 that says what is allowed:
     * {@code Allow: GET, HEAD, POST} and "Use GET, HEAD or POST."
     */
    private static void expect(HttpMethod method, HttpMethod... expected) {
        java.util.List<String> allowed = new java.util.ArrayList<>();
        for (HttpMethod m : expected) {
            if (method.equals(m) || m.equals(HttpMethod.GET) && method.equals(HttpMethod.HEAD)) {
                return;
            }
            allowed.add(m.name());
            if (m.equals(HttpMethod.GET)) {
                allowed.add(HttpMethod.HEAD.name());
            }
        }
        String allow = String.join(", ", allowed);
        int last = allow.lastIndexOf(", ");
        String words = last < 0 ? allow : allow.substring(0, last) + " or " + allow.substring(last + 2);
        throw new OpenAiErrors.ApiError(HttpResponseStatus.METHOD_NOT_ALLOWED, "invalid_request_error",
                "method_not_allowed", "Use " + words + ".", allow);
    }

    private JsonNode parse(ByteBuf content) {
        if (!content.isReadable()) {
            throw OpenAiErrors.badRequest("The request body is empty; expected JSON.");
        }
        try (ByteBufInputStream in = new ByteBufInputStream(content.duplicate())) {
            return json.readTree((java.io.InputStream) in);
        } catch (JsonProcessingException e) {
            throw OpenAiErrors.badRequest("Malformed JSON: " + Json.message(e.getOriginalMessage()));
        } catch (IOException e) {
            throw OpenAiErrors.badRequest("Unreadable body: " + e.getMessage());
        }
    }

    static String model(JsonNode body, List<String> models) {
        JsonNode model = body.get("model");
        if (model == null || !model.isTextual() || model.asText().isEmpty()) {
            throw OpenAiErrors.badRequest("'model' must be a non-empty string.");
        }
        if (!models.contains(model.asText())) {
            throw OpenAiErrors.notFound("model_not_found", "The model `" + model.asText() + "` does not exist.");
        }
        return model.asText();
    }

    // ---- faults ----

    /**
     * Applies the faults that act before any work; returns false when the request must not be served (it hangs
     * or has been answered with an error).
     */
    private boolean admitPastFaults(ChannelHandlerContext ctx, boolean keepAlive, Faults faults) {
        boolean error = engine.drawError(faults);
        if (faults.hang()) {
            engine.hung();
            return false; // stay busy and never read again: the connection hangs
        }
        if (error) {
            error(ctx, keepAlive, new OpenAiErrors.ApiError(HttpResponseStatus.INTERNAL_SERVER_ERROR, "server_error",
                    "injected_fault", "The engine failed (injected fault)."));
            return false;
        }
        return true;
    }

    /** The fields of {@code POST /admin/faults}, as {@code GET} shows them. */
    private static final java.util.Set<String> FAULT_FIELDS = java.util.Set.of("error_rate", "slowdown", "hang",
            "crash_after_tokens", "corrupt_stream");

    private Faults faultsFrom(JsonNode body, Faults now) {
        if (body == null || !body.isObject()) {
            throw OpenAiErrors.badRequest("Faults must be a JSON object.");
        }
        // a misspelt knob ("error-rate") would otherwise be ignored in silence while the caller thinks it is set
        for (java.util.Iterator<String> it = body.fieldNames(); it.hasNext(); ) {
            String field = it.next();
            if (!FAULT_FIELDS.contains(field)) {
                throw OpenAiErrors.badRequest("unknown field '" + field + "' (expected one of: "
                        + new java.util.TreeSet<>(FAULT_FIELDS) + ")");
            }
        }
        // JSON's part of the check: a whole number that fits; its range is the Faults record's
        JsonNode crash = body.get("crash_after_tokens");
        if (crash != null && !crash.isNull() && !(crash.isIntegralNumber() && crash.canConvertToInt())) {
            throw OpenAiErrors.badRequest("crash_after_tokens: " + crash
                    + " (expected: a whole number of tokens >= 0, or -1 or null for no crash)");
        }
        try {
            return new Faults(
                    number(body, "error_rate", now.errorRate()),
                    number(body, "slowdown", now.slowdown()),
                    body.has("hang") ? bool(body.get("hang")) : now.hang(),
                    (int) number(body, "crash_after_tokens", now.crashAfterTokens()),
                    corruption(body.get("corrupt_stream"), now.corruptStream()));
        } catch (IllegalArgumentException e) {
            throw OpenAiErrors.badRequest(e.getMessage());
        }
    }

    private static double number(JsonNode body, String field, double current) {
        JsonNode n = body.get(field);
        if (n == null) {
            return current;
        }
        if (n.isNull()) {
            return field.equals("crash_after_tokens") ? -1 : current;
        }
        if (!n.isNumber()) {
            throw OpenAiErrors.badRequest("'" + field + "' must be a number.");
        }
        return n.asDouble();
    }

    private static Faults.Corruption corruption(JsonNode n, Faults.Corruption current) {
        if (n == null) {
            return current;
        }
        if (n.isNull()) {
            return Faults.Corruption.NONE;
        }
        if (!n.isTextual()) {
            throw OpenAiErrors.badRequest("'corrupt_stream' must be one of \"none\", \"truncate\", \"malformed\" or null.");
        }
        return Faults.Corruption.parse(n.asText());
    }

    private static boolean bool(JsonNode n) {
        if (!n.isBoolean()) {
            throw OpenAiErrors.badRequest("'hang' must be a boolean.");
        }
        return n.asBoolean();
    }

    private ObjectNode faultsJson(Faults f) {
        return json.createObjectNode().put("error_rate", f.errorRate()).put("slowdown", f.slowdown())
                .put("hang", f.hang()).put("crash_after_tokens", f.crashAfterTokens())
                .put("corrupt_stream", f.corruptStream().label());
    }

    // ---- endpoints ----

    private ObjectNode models() {
        ObjectNode root = json.createObjectNode().put("object", "list");
        ArrayNode data = root.putArray("data");
        for (String m : engine.config.models()) {
            data.addObject().put("id", m).put("object", "model").put("created", engine.createdSeconds())
                    .put("owned_by", "sextant-engine-emulator").put("root", m);
        }
        return root;
    }

    private void embed(ChannelHandlerContext ctx, boolean keepAlive, JsonNode body) {
        if (body == null || !body.isObject()) {
            throw OpenAiErrors.badRequest("The request body must be a JSON object.");
        }
        String model = model(body, engine.config.models());
        JsonNode input = body.get("input");
        List<String> texts;
        if (input != null && input.isTextual()) {
            texts = List.of(input.asText());
        } else if (input != null && input.isArray() && !input.isEmpty()) {
            texts = new java.util.ArrayList<>();
            for (JsonNode t : input) {
                if (!t.isTextual()) {
                    throw OpenAiErrors.badRequest("'input' must be a string or an array of strings.");
                }
                texts.add(t.asText());
            }
        } else {
            throw OpenAiErrors.badRequest("'input' must be a string or an array of strings.");
        }
        JsonNode format = body.get("encoding_format");
        boolean base64 = format != null && format.isTextual() && format.asText().equals("base64");
        if (format != null && !format.isNull() && !base64 && !(format.isTextual() && format.asText().equals("float"))) {
            throw OpenAiErrors.badRequest("'encoding_format' must be \"float\" or \"base64\".");
        }
        if (!admitPastFaults(ctx, keepAlive, engine.faults())) {
            return;
        }
        ObjectNode root = json.createObjectNode().put("object", "list");
        ArrayNode data = root.putArray("data");
        int tokens = 0;
        for (int i = 0; i < texts.size(); i++) {
            ObjectNode item = data.addObject().put("object", "embedding").put("index", i);
            double[] vector = EngineEmulator.embedding(texts.get(i), engine.config.embeddingDimensions());
            if (base64) {
                item.put("embedding", base64(vector));
            } else {
                ArrayNode floats = item.putArray("embedding");
                for (double v : vector) {
                    floats.add(v);
                }
            }
            tokens += GenerationRequest.tokens(texts.get(i));
        }
        root.put("model", model);
        root.putObject("usage").put("prompt_tokens", tokens).put("total_tokens", tokens);
        respond(ctx, keepAlive, HttpResponseStatus.OK, root);
    }

    /**
     * An embedding as OpenAI's {@code encoding_format: "base64"} gives it (and the OpenAI SDKs ask for by default): the
     * vector's float32 values, little-endian, in base64.
     */
    static String base64(double[] vector) {
        java.nio.ByteBuffer bytes = java.nio.ByteBuffer.allocate(4 * vector.length).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        for (double v : vector) {
            bytes.putFloat((float) v);
        }
        return java.util.Base64.getEncoder().encodeToString(bytes.array());
    }

    /**
     * Generates the answer to {@code g}, whose JSON is {@code body}; {@code requestId}: the request's
     * {@code x-request-id}, or null, what {@link EngineEmulator#generations} counts by.
     */
    private void generate(ChannelHandlerContext ctx, boolean keepAlive, GenerationRequest g, JsonNode body,
                          String requestId) {
        Faults faults = engine.faults();
        if (!admitPastFaults(ctx, keepAlive, faults)) {
            return;
        }
        String prefix = switch (g.api()) {
            case CHAT -> "chatcmpl-";
            case COMPLETIONS -> "cmpl-";
            case RESPONSES -> "resp_";
        };
        String id = prefix + engine.config.engineId() + "-" + engine.nextId();
        long created = engine.createdSeconds();
        ResponseEvents events = g.api() == GenerationRequest.Api.RESPONSES
                ? new ResponseEvents(json, g, body, id, created) : null;
        // an HTTP/1.0 client knows no chunked coding (RFC 9112 §6.1): its stream ends where the connection does
        boolean closeDelimited = g.stream() && http10;
        Sequence.Sink sink = g.stream()
                ? new StreamSink(ctx, keepAlive && !closeDelimited, g, id, created, faults.corruptStream(), events,
                        requestId)
                : new WholeSink(ctx, keepAlive, g, id, created, events, requestId);
        if (g.stream()) {
            HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
            head.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream")
                    .set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_CACHE)
                    .set(EngineEmulator.ENGINE_ID_HEADER, engine.config.engineId());
            if (closeDelimited) {
                head.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            } else {
                head.headers().set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
                if (!keepAlive) {
                    head.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                }
            }
            ctx.writeAndFlush(head); // the head at once, the first event with the first token: as vLLM streams
        }
        // each choice its own sequence in the batch, as vLLM's engine runs a request of n choices as n requests
        long arrival = engine.nanoTime();
        current = new Sequence[g.choices()];
        for (int c = 0; c < current.length; c++) {
            GenerationRequest.Prompt prompt = g.promptOf(c);
            current[c] = new Sequence(prompt.conversationKey(), prompt.tokens(), g.maxTokens(), g.maxTokensGiven(),
                    faults.crashAfterTokens(), sink, arrival, g.priority(), c);
        }
        for (Sequence s : current) {
            engine.scheduler.submit(s);
        }
        // a read pending while it generates, so that a client that goes away is seen at once and its sequence aborted,
        // as vLLM aborts a request whose connection closed; a request pipelined meanwhile waits its turn
        ctx.read();
    }

    /** A chunk of a stream for one choice, without its content and with a null {@code finish_reason}. */
    private ObjectNode chunk(GenerationRequest g, String id, long created, int choice) {
        ObjectNode root = json.createObjectNode().put("id", id)
                .put("object", g.chat() ? "chat.completion.chunk" : "text_completion")
                .put("created", created).put("model", g.model());
        ObjectNode c = root.putArray("choices").addObject().put("index", choice);
        if (!g.chat()) {
            c.putNull("logprobs");
        }
        c.putNull("finish_reason");
        return root;
    }

    static ObjectNode timingJson(ObjectMapper json, Sequence.Timing t) {
        return json.createObjectNode().put("queued_ms", t.queuedMs()).put("prefill_ms", t.prefillMs())
                .put("ttft_ms", t.ttftMs()).put("decode_ms", t.decodeMs()).put("cached_tokens", t.cachedTokens());
    }

    private ByteBuf sse(ChannelHandlerContext ctx, JsonNode event) {
        return sse(ctx, null, event);
    }

    /**
     * A Responses API event: its {@code type} also in an {@code event:} line before the data, as OpenAI and vLLM send
     * it.
     */
    private ByteBuf responseEvent(ChannelHandlerContext ctx, JsonNode event) {
        return sse(ctx, event.get("type").asText(), event);
    }

    /** A server-sent event: {@code event: <name>} when {@code name} is not null, then {@code data: <event>}. */
    private ByteBuf sse(ChannelHandlerContext ctx, String name, JsonNode event) {
        try {
            byte[] bytes = json.writeValueAsBytes(event);
            byte[] head = name == null ? new byte[0] : ("event: " + name + "\n").getBytes(StandardCharsets.UTF_8);
            ByteBuf buf = ctx.alloc().buffer(head.length + bytes.length + 8);
            buf.writeBytes(head).writeBytes(DATA).writeBytes(bytes).writeBytes(END);
            return buf;
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a JSON tree always serializes", e);
        }
    }

    private static final byte[] DATA = "data: ".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] END = "\n\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] GARBAGE = "zz-not-a-chunk-size\r\n{\"garbage\r\n".getBytes(StandardCharsets.US_ASCII);

    /**
     * What the sinks of one request share: its choices' timings and token counts, the answer's identity, and the
     * request id counted once when its first token is produced.
     */
    private abstract class ChoicesSink implements Sequence.Sink {
        final ChannelHandlerContext ctx;
        final boolean keepAlive;
        final GenerationRequest g;
        final String id;
        final long created;
        final ResponseEvents events; // a Responses API answer's, else null
        private final String requestId;
        private boolean started; // scheduler thread
        // the channel's loop only:
        final Sequence.Timing[] timings;
        int finishedChoices;
        int generated;

        ChoicesSink(ChannelHandlerContext ctx, boolean keepAlive, GenerationRequest g, String id, long created,
                    ResponseEvents events, String requestId) {
            this.ctx = ctx;
            this.keepAlive = keepAlive;
            this.g = g;
            this.id = id;
            this.created = created;
            this.events = events;
            this.requestId = requestId;
            this.timings = new Sequence.Timing[g.choices()];
        }

        /** Counts the request as generated once, whichever of its choices produced the first token. */
        final void started() {
            if (!started) {
                started = true;
                engine.generating(requestId);
            }
        }

        /** Token {@code index} of choice {@code choice}: the words differ between the choices of one prompt. */
        final String word(int choice, int index) {
            int offset = Math.floorMod(g.promptOf(choice).conversationKey().hashCode() + choice % g.n(), WORDS.length);
            String w = WORDS[(index + offset) % WORDS.length];
            return index == 0 ? w : " " + w;
        }

        /** Records a finished choice; true when it was the last. Channel's loop. */
        final boolean lastChoice(Sequence.Timing timing, int choice, int tokens) {
            timings[choice] = timing;
            generated += tokens;
            return ++finishedChoices == timings.length;
        }

        /** OpenAI's usage of the whole request: each prompt's tokens, and its cache hit, once; every choice's output. */
        final ObjectNode usage() {
            int cached = 0;
            for (int i = 0; i < timings.length; i += g.n()) {
                cached += timings[i].cachedTokens();
            }
            ObjectNode usage = json.createObjectNode().put("prompt_tokens", g.promptTokens())
                    .put("completion_tokens", generated).put("total_tokens", g.promptTokens() + generated);
            usage.putObject("prompt_tokens_details").put("cached_tokens", cached);
            return usage;
        }

        @Override
        public void crashed(Sequence sequence) {
            ctx.executor().execute(() -> ctx.close());
        }
    }

    /** Streams tokens as server-sent events: completion chunks, or a Responses stream's events. */
    private final class StreamSink extends ChoicesSink {
        private final Faults.Corruption corruption;
        private boolean corrupted; // touched on the channel's loop only

        StreamSink(ChannelHandlerContext ctx, boolean keepAlive, GenerationRequest g, String id, long created,
                   Faults.Corruption corruption, ResponseEvents events, String requestId) {
            super(ctx, keepAlive, g, id, created, events, requestId);
            this.corruption = corruption;
        }

        /**
         * A choice's first event, sent with its first token as vLLM does (its first output, after prefill): the
         * assistant role with empty content, or an empty completion text.
         */
        private ObjectNode firstEvent(int choice) {
            ObjectNode first = chunk(g, id, created, choice);
            ObjectNode c = (ObjectNode) first.get("choices").get(0);
            if (g.chat()) {
                c.putObject("delta").put("role", "assistant").put("content", "");
            } else {
                c.put("text", "");
            }
            return first;
        }

        /** Applies the stream corruption fault after the first token chunk; true when nothing more may be written. */
        private boolean corrupt() {
            if (corruption == Faults.Corruption.NONE) {
                return false;
            }
            if (corrupted) {
                return corruption == Faults.Corruption.TRUNCATE;
            }
            corrupted = true;
            if (corruption == Faults.Corruption.TRUNCATE) {
                ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT).addListener(afterResponse(keepAlive));
                return true;
            }
            // raw bytes written below the HTTP encoder (which would frame them as a chunk): a chunk-size line that
            // is not hexadecimal, in the middle of the body
            ctx.pipeline().firstContext().writeAndFlush(Unpooled.wrappedBuffer(GARBAGE));
            return false;
        }

        @Override
        public boolean writable() {
            return ctx.channel().isWritable();
        }

        @Override
        public void token(Sequence sequence, int index) {
            started();
            int choice = sequence.choice;
            ctx.executor().execute(() -> {
                if (!ctx.channel().isActive() || corrupted && corruption == Faults.Corruption.TRUNCATE) {
                    return;
                }
                if (events != null) {
                    if (index == 0) { // the opening events with the first token, as a chat stream's first event
                        for (ObjectNode e : events.opening()) {
                            ctx.write(new DefaultHttpContent(responseEvent(ctx, e)));
                        }
                    }
                    ctx.writeAndFlush(new DefaultHttpContent(responseEvent(ctx, events.delta(word(choice, index)))));
                    corrupt();
                    return;
                }
                ObjectNode c = chunk(g, id, created, choice);
                ObjectNode node = (ObjectNode) c.get("choices").get(0);
                if (g.chat()) {
                    node.putObject("delta").put("content", word(choice, index));
                } else {
                    node.put("text", word(choice, index));
                }
                ByteBuf out = sse(ctx, c);
                if (index == 0) { // one write: the choice's first event and its first token's
                    ByteBuf first = sse(ctx, firstEvent(choice));
                    out = ctx.alloc().compositeBuffer(2).addComponents(true, first, out);
                }
                ctx.writeAndFlush(new DefaultHttpContent(out));
                corrupt();
            });
        }

        @Override
        public void finished(Sequence sequence, String reason) {
            int tokens = sequence.generated;
            int choice = sequence.choice;
            Sequence.Timing timing = sequence.timing();
            ctx.executor().execute(() -> {
                if (!ctx.channel().isActive() || (corrupted && corruption == Faults.Corruption.TRUNCATE)) {
                    return;
                }
                boolean last = lastChoice(timing, choice, tokens);
                if (events != null) { // a Responses stream ends with its last event, no [DONE]
                    for (ObjectNode e : events.closing(reason, tokens, timing)) {
                        ctx.write(new DefaultHttpContent(responseEvent(ctx, e)));
                    }
                    ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT).addListener(afterResponse(keepAlive));
                    return;
                }
                ObjectNode end = chunk(g, id, created, choice);
                ObjectNode node = (ObjectNode) end.get("choices").get(0);
                if (g.chat()) {
                    node.putObject("delta");
                } else {
                    node.put("text", "");
                }
                node.put("finish_reason", reason);
                end.set("engine_timing", timingJson(json, timing));
                ctx.write(new DefaultHttpContent(sse(ctx, end)));
                if (!last) {
                    ctx.flush();
                    return;
                }
                if (g.includeUsage()) {
                    ObjectNode u = json.createObjectNode().put("id", id)
                            .put("object", g.chat() ? "chat.completion.chunk" : "text_completion")
                            .put("created", created).put("model", g.model());
                    u.putArray("choices");
                    u.set("usage", usage());
                    ctx.write(new DefaultHttpContent(sse(ctx, u)));
                }
                ctx.write(new DefaultHttpContent(Unpooled.wrappedBuffer(DONE)));
                ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT).addListener(afterResponse(keepAlive));
            });
        }
    }

    /** Collects tokens into one JSON completion or response. Touched on the channel's event loop only. */
    private final class WholeSink extends ChoicesSink {
        private final StringBuilder[] texts;
        private final String[] reasons;

        WholeSink(ChannelHandlerContext ctx, boolean keepAlive, GenerationRequest g, String id, long created,
                  ResponseEvents events, String requestId) {
            super(ctx, keepAlive, g, id, created, events, requestId);
            this.texts = new StringBuilder[g.choices()];
            this.reasons = new String[g.choices()];
            for (int i = 0; i < texts.length; i++) {
                texts[i] = new StringBuilder();
            }
        }

        @Override
        public boolean writable() {
            return true; // nothing is written before the end
        }

        @Override
        public void token(Sequence sequence, int index) {
            started();
            int choice = sequence.choice;
            ctx.executor().execute(() -> texts[choice].append(word(choice, index)));
        }

        @Override
        public void finished(Sequence sequence, String reason) {
            int tokens = sequence.generated;
            int choice = sequence.choice;
            Sequence.Timing timing = sequence.timing();
            ctx.executor().execute(() -> {
                reasons[choice] = reason;
                if (!lastChoice(timing, choice, tokens) || !ctx.channel().isActive()) {
                    return;
                }
                if (events != null) {
                    respond(ctx, keepAlive, HttpResponseStatus.OK, events.whole(texts[0].toString(), reason, tokens,
                            timing));
                    return;
                }
                ObjectNode root = json.createObjectNode().put("id", id)
                        .put("object", g.chat() ? "chat.completion" : "text_completion")
                        .put("created", created).put("model", g.model());
                ArrayNode choices = root.putArray("choices");
                for (int i = 0; i < texts.length; i++) {
                    ObjectNode c = choices.addObject().put("index", i);
                    if (g.chat()) {
                        c.putObject("message").put("role", "assistant").put("content", texts[i].toString());
                    } else {
                        c.put("text", texts[i].toString());
                    }
                    c.putNull("logprobs");
                    c.put("finish_reason", reasons[i]);
                }
                root.set("usage", usage());
                root.set("engine_timing", timingJson(json, timings[0]));
                respond(ctx, keepAlive, HttpResponseStatus.OK, root);
            });
        }
    }

    // ---- writing ----

    private void error(ChannelHandlerContext ctx, boolean keepAlive, OpenAiErrors.ApiError e) {
        try {
            respond(ctx, keepAlive, e.status, "application/json", json.writeValueAsBytes(OpenAiErrors.body(json, e)),
                    e.allow);
        } catch (JsonProcessingException x) {
            throw new IllegalStateException("a JSON tree always serializes", x);
        }
    }

    private void respond(ChannelHandlerContext ctx, boolean keepAlive, HttpResponseStatus status, JsonNode body) {
        try {
            respond(ctx, keepAlive, status, "application/json", json.writeValueAsBytes(body));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a JSON tree always serializes", e);
        }
    }

    private void respond(ChannelHandlerContext ctx, boolean keepAlive, HttpResponseStatus status, String contentType,
                         byte[] body) {
        respond(ctx, keepAlive, status, contentType, body, null);
    }

    private void respond(ChannelHandlerContext ctx, boolean keepAlive, HttpResponseStatus status, String contentType,
                         byte[] body, String allow) {
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
                Unpooled.wrappedBuffer(body));
        if (contentType != null) {
            response.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
        }
        response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.length)
                .set(EngineEmulator.ENGINE_ID_HEADER, engine.config.engineId());
        if (allow != null) {
            response.headers().set(HttpHeaderNames.ALLOW, allow);
        }
        if (!keepAlive) {
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        } else if (http10) {
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
        }
        ctx.writeAndFlush(response).addListener(afterResponse(keepAlive));
    }

    private ChannelFutureListener afterResponse(boolean keepAlive) {
        return future -> {
            ChannelHandlerContext ctx = future.channel().pipeline().context(this);
            if (!future.isSuccess() || !keepAlive || ctx == null) {
                future.channel().close();
            } else {
                done(ctx);
            }
        };
    }
}
