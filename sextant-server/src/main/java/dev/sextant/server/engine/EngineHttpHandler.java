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
final class EngineHttpHandler extends SimpleChannelInboundHandler<FullHttpRequest> implements ChoicesSink.Handler {
    private static final Logger LOG = Logger.getLogger(EngineHttpHandler.class.getName());

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
                case "/admin/faults" -> { // who may ask was decided on the head (EngineEmulator.adminRefusal)
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
            "crash_after_tokens", "corrupt_stream", "stall");

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
                    bool(body, "hang", now.hang()),
                    (int) number(body, "crash_after_tokens", now.crashAfterTokens()),
                    corruption(body.get("corrupt_stream"), now.corruptStream()),
                    bool(body, "stall", now.stall()));
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

    private static boolean bool(JsonNode body, String field, boolean current) {
        JsonNode n = body.get(field);
        if (n == null) {
            return current;
        }
        if (!n.isBoolean()) {
            throw OpenAiErrors.badRequest("'" + field + "' must be a boolean.");
        }
        return n.asBoolean();
    }

    private ObjectNode faultsJson(Faults f) {
        return json.createObjectNode().put("error_rate", f.errorRate()).put("slowdown", f.slowdown())
                .put("hang", f.hang()).put("crash_after_tokens", f.crashAfterTokens())
                .put("corrupt_stream", f.corruptStream().label()).put("stall", f.stall());
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
                ? new ChoicesSink.Streamed(this, engine, ctx, keepAlive && !closeDelimited, g, id, created,
                        faults.corruptStream(), events, requestId)
                : new ChoicesSink.Whole(this, engine, ctx, keepAlive, g, id, created, events, requestId);
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

    // ---- writing ----

    private void error(ChannelHandlerContext ctx, boolean keepAlive, OpenAiErrors.ApiError e) {
        try {
            respond(ctx, keepAlive, e.status, "application/json", json.writeValueAsBytes(OpenAiErrors.body(json, e)),
                    e.allow);
        } catch (JsonProcessingException x) {
            throw new IllegalStateException("a JSON tree always serializes", x);
        }
    }

    @Override
    public void respond(ChannelHandlerContext ctx, boolean keepAlive, HttpResponseStatus status, JsonNode body) {
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

    @Override
    public ChannelFutureListener afterResponse(boolean keepAlive) {
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
