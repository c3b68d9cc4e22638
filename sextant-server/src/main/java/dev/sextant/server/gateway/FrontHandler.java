package dev.sextant.server.gateway;

import dev.sextant.request.DataPlane;
import dev.sextant.request.Decision;
import dev.sextant.request.HttpFields;
import dev.sextant.request.Refusal;
import dev.sextant.request.RequestMeta;
import dev.sextant.server.internal.HeadCheck;
import dev.sextant.server.internal.Http;
import dev.sextant.server.tenants.PresentedKey;
import dev.sextant.server.tenants.Tenant;
import dev.sextant.server.tenants.TenantLimits;
import dev.sextant.server.internal.OversizedAwareAggregator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.codec.http.TooLongHttpContentException;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.util.ReferenceCountUtil;
import java.time.Duration;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The client side of the gateway: one request at a time per connection (the next is handled only after the answer
 * was written; one that arrives sooner waits), routed to the proxy, {@code /v1/models}, {@code /metrics},
 * {@code /healthz} or the probes {@code /livez} and {@code /readyz}. Every problem becomes an OpenAI-shaped error
 * response; nothing escapes the event loop.
 */
final class FrontHandler extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = Logger.getLogger(FrontHandler.class.getName());

    private final Gateway gw;
    /** The connection's (or stream's) key check, which found the request's tenant on its head. */
    private final KeyCheck keys;
    private Exchange current;
    /** Most requests held back while one is answered (HTTP pipelining); more close the connection. */
    static final int MAX_PIPELINED = 16;
    /** The Responses API's path, proxied as the others are; its event streams end in their own way. */
    static final String RESPONSES = "/v1/responses";
    /** The longest client {@code x-request-id} passed on; a longer one is replaced by the gateway's own. */
    static final int MAX_REQUEST_ID = 200;
    // requests that arrived in the same read as one being proxied; answers go out in request order
    private final java.util.ArrayDeque<FullHttpRequest> pipelined = new java.util.ArrayDeque<>(2);
    // the request being answered, for the access-log line of an answer made here (not by an exchange); its path is
    // worked out only then, off the path of every request
    private String answeringMethod = "-";
    private String answeringUri = "-";

    /** Without a key check of its own on the pipeline: a request's tenant is looked up when it arrives whole. */
    FrontHandler(Gateway gw) {
        this(gw, new KeyCheck(gw));
    }

    /** With the pipeline's {@code keys}, which found each request's tenant on its head (and refused unknown keys). */
    FrontHandler(Gateway gw, KeyCheck keys) {
        this.gw = gw;
        this.keys = keys;
    }

    /** Whether {@code path} (raw, origin form) is a model endpoint, proxied to an engine (POST only). */
    static boolean proxied(String path) {
        return switch (path) {
            case "/v1/chat/completions", "/v1/completions", "/v1/embeddings", RESPONSES -> true;
            default -> false;
        };
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        ctx.read();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof FullHttpRequest req)) {
            ReferenceCountUtil.release(msg);
            return;
        }
        if (current != null || !pipelined.isEmpty() && pipelined.peekFirst() != req) {
            if (pipelined.size() < MAX_PIPELINED) {
                pipelined.addLast(req);
            } else {
                req.release();
                ctx.close();
            }
            return;
        }
        if (pipelined.peekFirst() == req) {
            pipelined.pollFirst();
        }
        boolean keepAlive = HttpUtil.isKeepAlive(req) && !gw.draining();
        answeringMethod = req.method().name();
        answeringUri = req.uri();
        try {
            if (req.decoderResult().isFailure()) {
                Throwable cause = req.decoderResult().cause();
                req.release();
                malformed(ctx, cause);
                return;
            }
            String target = originForm(req.uri());
            if (!target.equals(req.uri())) {
                req.setUri(target); // what is routed, logged and sent to the engine
            }
            // the raw path, not a decoded one: /v1%2Fchat%2Fcompletions or /metrics/../x name no endpoint (404), and
            // what is classified is exactly what the engine is sent
            answeringUri = req.uri();
            String path = new QueryStringDecoder(req.uri()).rawPath();
            if (proxied(path)) {
                if (req.method() != HttpMethod.POST) {
                    req.release();
                    notAllowed(ctx, req.method(), path, "POST", keepAlive);
                    return;
                }
                proxy(ctx, req, path, keepAlive); // takes ownership of req
                return;
            }
            switch (path) {
                case "/v1/models", "/metrics", "/healthz", "/livez", "/readyz" -> {
                    req.release();
                    if (!Http.reads(req.method())) {
                        notAllowed(ctx, req.method(), path, "GET, HEAD", keepAlive);
                    } else if (path.equals("/livez")) {
                        answer(ctx, gw.probes.liveness(System.nanoTime()), keepAlive);
                    } else if (path.equals("/readyz")) {
                        answer(ctx, gw.readiness().response(), keepAlive); // a probe's 503 is no refused request
                    } else if (path.equals("/v1/models")) {
                        Tenant tenant = listingTenant(req);
                        if (listingRefused(ctx, req, path, tenant, keepAlive)) {
                            return;
                        }
                        reply(ctx, gw.plane() == null ? noSnapshot() : Http.json(HttpResponseStatus.OK,
                                gw.modelsJson(tenant)), keepAlive);
                    } else if (path.equals("/metrics")) {
                        reply(ctx, Http.response(HttpResponseStatus.OK, "text/plain; version=0.0.4; charset=utf-8",
                                gw.metrics.scrape()), keepAlive);
                    } else {
                        reply(ctx, Http.json(HttpResponseStatus.OK, gw.healthJson()), keepAlive);
                    }
                }
                default -> {
                    String method = req.method().name();
                    req.release();
                    if (path.startsWith(MODELS_PREFIX) && path.length() > MODELS_PREFIX.length()) {
                        Tenant tenant = listingTenant(req);
                        if (!listingRefused(ctx, req, path, tenant, keepAlive)) {
                            retrieveModel(ctx, req.method(), path, tenant, keepAlive);
                        }
                        return;
                    }
                    gw.metrics.request(null, null, 404);
                    reply(ctx, error(HttpResponseStatus.NOT_FOUND, "invalid_request_error", "unknown_url",
                            "unknown path: " + method + " " + path), keepAlive);
                }
            }
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "internal error handling " + req.uri(), e);
            ReferenceCountUtil.safeRelease(req); // no-op when already released
            reply(ctx, error(HttpResponseStatus.INTERNAL_SERVER_ERROR, "server_error", "internal_error",
                    "internal error: " + e), false);
        }
    }

    /**
     * A request the HTTP decoder refused (a head over the limit, conflicting lengths, a bad chunk…): an error and a
     * closed connection, since where the next request would start is unknown. The decoder reads nothing after it.
     */
    private void malformed(ChannelHandlerContext ctx, Throwable cause) {
        HttpResponseStatus status;
        String code;
        if (cause instanceof TooLongHttpContentException) {
            // in its turn after earlier pipelined answers; the connection closes once the rest of the body is dropped
            gw.metrics.request(null, null, 413);
            FullHttpResponse r = logged(ctx, OversizedAwareAggregator.refusal(cause.getMessage()));
            ctx.writeAndFlush(r).addListener((ChannelFutureListener) f -> {
                releasePipelined();
                OversizedAwareAggregator.closeAfterRefusal(ctx, f.isSuccess());
            });
            return;
        }
        if (cause instanceof HeadCheck.BodyBudgetExceeded) {
            // its body was never read (the rest is dropped): 503 in its turn, then the connection closes
            gw.metrics.request(null, null, 503);
            reply(ctx, Http.error(HttpResponseStatus.SERVICE_UNAVAILABLE, "server_error", "overloaded",
                    cause.getMessage(), java.time.Duration.ofSeconds(1)), false);
            return;
        }
        if (cause instanceof TooLongHttpHeaderException) {
            status = HttpResponseStatus.REQUEST_HEADER_FIELDS_TOO_LARGE;
            code = "headers_too_large";
        } else if (cause instanceof TooLongHttpLineException) {
            status = HttpResponseStatus.REQUEST_URI_TOO_LONG;
            code = "request_line_too_long";
        } else {
            status = HttpResponseStatus.BAD_REQUEST;
            code = "malformed_request";
        }
        gw.metrics.request(null, null, status.code());
        reply(ctx, error(status, "invalid_request_error", code, "malformed HTTP request: " + cause.getMessage()), false);
    }

    private void proxy(ChannelHandlerContext ctx, FullHttpRequest req, String path, boolean keepAlive) {
        long received = System.nanoTime();
        // admission sheds by a hash of the request's id, so that id is always the gateway's own: with the client's,
        // one sending (or retrying with) the same id would be shed always or never, whatever the shed fraction
        String ownId = gw.newRequestId();
        String clientId = req.headers().get("x-request-id");
        String requestId = usableRequestId(clientId) ? clientId : ownId;
        Tenant tenant = null;
        if (gw.tenancy.closed()) { // who it is first: a request without a valid key learns nothing else
            tenant = keys.tenantOf(req);
            if (tenant == null) { // no key check refused its head (none on this pipeline, or the key revoked since)
                req.release();
                reply(ctx, unauthorized(gw, ctx.channel(), path, requestId,
                        PresentedKey.of(req.headers()).ambiguous()), keepAlive);
                return;
            }
            gw.metrics.tenantRequest(tenant.name());
        }
        DataPlane plane = gw.plane();
        if (plane == null) {
            req.release();
            gw.metrics.request(null, null, 503);
            FullHttpResponse resp = noSnapshot();
            gw.accessLog(ctx.channel(), req.method().name(), path, 503, null, null, 0, null, -1, 0, 0, false, requestId,
                    "no snapshot yet");
            resp.headers().set("x-request-id", requestId);
            reply(ctx, resp, keepAlive);
            return;
        }
        String coding = compressed(req.headers().getAll(HttpHeaderNames.CONTENT_ENCODING));
        if (coding != null) {
            req.release();
            gw.metrics.request(null, null, 415);
            String says = "content-encoding: " + coding + " is not supported (expected: an uncompressed body)";
            gw.accessLog(ctx.channel(), req.method().name(), path, 415, null, null, 0, null, -1, 0, 0, false, requestId,
                    says);
            FullHttpResponse resp = Http.error(HttpResponseStatus.UNSUPPORTED_MEDIA_TYPE, "invalid_request_error",
                    "unsupported_content_encoding", says, null);
            resp.headers().set(HttpHeaderNames.ACCEPT_ENCODING, HttpHeaderValues.IDENTITY);
            resp.headers().set("x-request-id", requestId);
            reply(ctx, resp, keepAlive);
            return;
        }
        RequestBody body;
        try {
            body = RequestBody.parse(req.content());
        } catch (RequestBody.Invalid e) {
            req.release();
            gw.metrics.request(null, null, 400);
            gw.accessLog(ctx.channel(), req.method().name(), path, 400, null, null, 0, null, -1, 0, 0, false, requestId,
                    e.getMessage());
            FullHttpResponse resp = Http.error(HttpResponseStatus.BAD_REQUEST, "invalid_request_error",
                    "invalid_request", e.param(), e.getMessage(), null);
            resp.headers().set("x-request-id", requestId);
            reply(ctx, resp, keepAlive);
            return;
        }
        String tenantName = tenant == null ? null : tenant.name();
        if (tenant != null && !tenant.allows(body.model())) {
            req.release();
            tenantRefusal(ctx, path, keepAlive, requestId, tenantName, "model_not_allowed",
                    HttpResponseStatus.FORBIDDEN, "invalid_request_error", "model_not_allowed", "tenant '" + tenantName + "' may not use the model '"
                            + body.model() + "'", 0);
            return;
        }
        // headers may only narrow: what the tenant and this gateway cluster allow, within what every header asks
        java.util.List<String> residencyHeaders = req.headers().getAll(HttpFields.RESIDENCY_HEADER);
        java.util.List<String> residency = gw.tenancy.residency(tenant, residencyHeaders);
        if (residency != null && residency.isEmpty()) {
            req.release();
            tenantRefusal(ctx, path, keepAlive, requestId, tenantName, "residency_not_allowed",
                    HttpResponseStatus.FORBIDDEN, "invalid_request_error", "residency_not_allowed", gw.tenancy.residencyRefusal(tenant,
                            residencyHeaders), 0);
            return;
        }
        int priority = gw.tenancy.priority(tenant, req.headers().getAll(HttpFields.PRIORITY_HEADER));
        long tokens = 0;
        if (tenant != null) {
            tokens = Tenancy.tokens(req.content().readableBytes(), body.maxTokens());
            TenantLimits.Refusal over = gw.tenancy.limits.take(tenant, tokens);
            if (over != null) {
                req.release();
                tenantRefusal(ctx, path, keepAlive, requestId, tenantName, over.limit(),
                        HttpResponseStatus.TOO_MANY_REQUESTS,
                        "rate_limit_error", "rate_limit_exceeded", over.message(), over.retryAfterNanos());
                return;
            }
        }
        HttpFields fields = new HttpFields(body.model(), null, null, body.promptCacheKey(),
                req.headers().get(HttpFields.SESSION_HEADER), body.user(), body.prompt(), ownId);
        RequestMeta meta = fields.toMeta();
        Decision d = plane.route(meta.scoped(residency == null ? java.util.List.of() : residency, priority,
                tenantName, tenant == null ? 1 : tenant.weight()));
        gw.metrics.decision(d.reason());
        // demand is what arrives, counted on arrival: counted when answered, it would lag behind a surge by the
        // answers' latency and stay capped by what the engines complete, so the control plane would not see the
        // overload it has to shed
        gw.reporter.request(d.classId(), meta.affinityKey(), req.content().readableBytes());
        if (!d.routed()) {
            req.release();
            if (tenant != null) {
                gw.tenancy.limits.release(tenant);
                gw.metrics.tenantRefused(tenantName, d.refusal().word());
            }
            refuse(ctx, d, path, keepAlive, requestId);
            return;
        }
        if (tenant != null) {
            gw.metrics.tenantAdmitted(tenantName, tokens);
        }
        Exchange x = new Exchange(gw, this, ctx, req, path, keepAlive, requestId, received, body.stream(),
                body.end(), tenant, meta.affinityKey());
        current = x;
        gw.exchangeStarted();
        x.start(d);
    }

    /**
     * The answer to a model request without a tenant's key, or with different keys ({@code ambiguous}): 401
     * {@code invalid_api_key}, counted for the tenant {@link Tenancy#UNKNOWN} (reason {@code invalid_api_key} or
     * {@code ambiguous_api_key}) and logged; the message never shows a key. {@code requestId}: see {@link #requestId}.
     */
    static FullHttpResponse unauthorized(Gateway gw, Channel client, String path, String requestId,
                                         boolean ambiguous) {
        gw.metrics.tenantRequest(Tenancy.UNKNOWN);
        return refusal(gw, client, path, requestId, Tenancy.UNKNOWN, ambiguous ? "ambiguous_api_key"
                        : "invalid_api_key", HttpResponseStatus.UNAUTHORIZED, "invalid_request_error",
                "invalid_api_key", ambiguous ? AMBIGUOUS_KEYS : INCORRECT_KEY, 0);
    }

    private static final String INCORRECT_KEY = "Incorrect API key provided: send a key of this gateway's tenants as"
            + " Authorization: Bearer <key> or api-key: <key>";
    private static final String AMBIGUOUS_KEYS = "Ambiguous API key: the request's Authorization and api-key headers"
            + " present different keys (expected: one key, the same in every header that carries it)";

    /** The id a request is known by: the client's {@code x-request-id} when {@link #usableRequestId}, else a new one. */
    static String requestId(Gateway gw, String clientId) {
        return usableRequestId(clientId) ? clientId : gw.newRequestId();
    }

    /**
     * A request its tenant may not send (403 for a model or residency not allowed, 429 over a limit), refused before
     * the data plane sees it: counted for its tenant (null on an open gateway), logged, answered in OpenAI's shape.
     */
    private void tenantRefusal(ChannelHandlerContext ctx, String path, boolean keepAlive, String requestId,
                               String tenant, String reason, HttpResponseStatus status, String type, String code,
                               String message, long retryAfterNanos) {
        reply(ctx, refusal(gw, ctx.channel(), path, requestId, tenant, reason, status, type, code, message,
                retryAfterNanos), keepAlive);
    }

    /** {@link #tenantRefusal}'s answer, counted and logged; the message never shows the key. */
    private static FullHttpResponse refusal(Gateway gw, Channel client, String path, String requestId,
                                            String tenant, String reason, HttpResponseStatus status, String type,
                                            String code, String message, long retryAfterNanos) {
        if (tenant != null) { // an open gateway has no tenant to count it for
            gw.metrics.tenantRefused(tenant, reason);
        }
        gw.metrics.request(null, null, status.code());
        gw.accessLog(client, "POST", path, status.code(), null, null, 0, null, -1, 0, 0, false, requestId, message);
        FullHttpResponse resp = Http.error(status, type, code, null, message,
                retryAfterNanos > 0 ? Duration.ofNanos(retryAfterNanos) : null);
        resp.headers().set("x-request-id", requestId);
        if (status == HttpResponseStatus.UNAUTHORIZED) {
            resp.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer");
        }
        return resp;
    }

    private void refuse(ChannelHandlerContext ctx, Decision d, String path, boolean keepAlive, String requestId) {
        Refusal r = d.refusal();
        if (r == Refusal.SHED || r == Refusal.ENGINE_LIMIT) {
            gw.metrics.shed(d.classId());
        }
        gw.metrics.request(d.classId(), null, r.status());
        gw.accessLog(ctx.channel(), "POST", path, r.status(), d.classId(), null, 0, d.reason(), -1, 0, 0, false, requestId,
                d.message());
        long ra = d.retryAfterNanos();
        String type = r.status() == 429 ? "rate_limit_error" : r.status() < 500 ? "invalid_request_error" : "server_error";
        // the model is the one body field a refusal can be about; residency comes from a header, which is no param
        FullHttpResponse resp = Http.error(HttpResponseStatus.valueOf(r.status()), type, r.code(),
                r == Refusal.UNKNOWN_MODEL ? "model" : null, d.message(), ra > 0 ? Duration.ofNanos(ra) : null);
        resp.headers().set("x-sextant-snapshot-version", Long.toString(d.snapshotVersion()));
        resp.headers().set("x-sextant-attempts", "0");
        resp.headers().set(DecisionReasons.HEADER, d.reason());
        resp.headers().set("x-request-id", requestId);
        if (r == Refusal.SHED || r == Refusal.ENGINE_LIMIT) {
            resp.headers().set("x-sextant-overloaded", "true");
        }
        reply(ctx, resp, keepAlive);
    }

    private static final String MODELS_PREFIX = "/v1/models/";

    /**
     * On a closed gateway the model list is a tenant's, as OpenAI's is a key's and vLLM's with {@code --api-key}: a
     * request without a valid key ({@code tenant} null) gets the 401 a model request gets (true: answered), one with a
     * key the models its tenant may use ({@link #listingTenant}). An open gateway lists every model it routes to anyone.
     */
    private boolean listingRefused(ChannelHandlerContext ctx, FullHttpRequest req, String path, Tenant tenant,
                                   boolean keepAlive) {
        if (!gw.tenancy.closed() || tenant != null) {
            return false;
        }
        reply(ctx, unauthorized(gw, ctx.channel(), path, requestId(gw, req.headers().get("x-request-id")),
                PresentedKey.of(req.headers()).ambiguous()), keepAlive);
        return true;
    }

    /** The tenant whose key a listing request presents; null on an open gateway or without a valid key. */
    private Tenant listingTenant(FullHttpRequest req) {
        return gw.tenancy.closed() ? keys.tenantOf(req) : null;
    }

    /**
     * OpenAI's "retrieve model", {@code GET /v1/models/{model}}: the model's entry when this gateway routes it, else
     * 404 {@code model_not_found}. A model id may hold a {@code /} (Hugging Face names such as
     * {@code meta-llama/Llama-3.1-8B-Instruct}), sent as is or percent-encoded: both are accepted.
     */
    private void retrieveModel(ChannelHandlerContext ctx, HttpMethod method, String path, Tenant tenant,
                               boolean keepAlive) {
        if (!Http.reads(method)) {
            notAllowed(ctx, method, path, "GET, HEAD", keepAlive);
            return;
        }
        String id;
        try {
            id = QueryStringDecoder.decodeComponent(path.substring(MODELS_PREFIX.length()));
        } catch (IllegalArgumentException e) { // a broken percent-escape
            reply(ctx, Http.error(HttpResponseStatus.BAD_REQUEST, "invalid_request_error", "invalid_model", "model",
                    "model id in " + path + ": " + e.getMessage(), null), keepAlive);
            return;
        }
        if (gw.plane() == null) {
            reply(ctx, noSnapshot(), keepAlive);
            return;
        }
        String json = gw.modelJson(id, tenant);
        if (json == null) {
            reply(ctx, Http.error(HttpResponseStatus.NOT_FOUND, "invalid_request_error", Refusal.UNKNOWN_MODEL.code(),
                    "model", "The model '" + id + "' is not routed by this gateway (GET /v1/models lists those it routes)",
                    null), keepAlive);
            return;
        }
        reply(ctx, Http.json(HttpResponseStatus.OK, json), keepAlive);
    }

    /**
     * The answer to a model request before the gateway's first snapshot (it listens before it has one): 503, to be
     * tried again in a second, when the snapshot source or the snapshot cache will likely have given one.
     */
    private FullHttpResponse noSnapshot() {
        return Http.error(HttpResponseStatus.SERVICE_UNAVAILABLE, "server_error", "no_snapshot", "gateway cluster "
                + gw.config.gatewayCluster() + " has no routing snapshot yet: it is starting", Duration.ofSeconds(1));
    }

    private void notAllowed(ChannelHandlerContext ctx, HttpMethod method, String path, String allow, boolean keepAlive) {
        reply(ctx, Http.methodNotAllowed(method, path, allow), keepAlive);
    }

    /**
     * The first content coding other than {@code identity} among a request's {@code Content-Encoding} values, or null
     * when its body is as sent. The gateway reads the body to route it and forwards it as it came, so a compressed body
     * is refused with 415 and {@code Accept-Encoding: identity} (RFC 9110 §15.5.16, RFC 7694) rather than read as
     * malformed JSON.
     */
    static String compressed(java.util.List<String> values) {
        for (String v : values) {
            for (String c : v.split(",")) {
                String t = c.trim();
                if (!t.isEmpty() && !t.equalsIgnoreCase("identity")) {
                    return t;
                }
            }
        }
        return null;
    }

    private static FullHttpResponse error(HttpResponseStatus status, String type, String code, String message) {
        return Http.error(status, type, code, message, null);
    }

    /**
     * {@code r}, when it refuses the request and no exchange or refusal path logged it already (they set the
     * request id), with a request id of its own and an access-log line: every refusal a client sees can be found.
     */
    private FullHttpResponse logged(ChannelHandlerContext ctx, FullHttpResponse r) {
        if (r.status().code() >= 400 && !r.headers().contains("x-request-id")) {
            String id = gw.newRequestId();
            r.headers().set("x-request-id", id);
            String message;
            try {
                message = Http.JSON.readTree(new io.netty.buffer.ByteBufInputStream(r.content().duplicate()))
                        .path("error").path("message").asText(r.status().reasonPhrase());
            } catch (java.io.IOException e) {
                message = r.status().reasonPhrase();
            }
            gw.accessLog(ctx.channel(), answeringMethod, new QueryStringDecoder(answeringUri).rawPath(),
                    r.status().code(), null, null, 0, null, -1, 0, 0, false, id, message);
        }
        return r;
    }

    private void reply(ChannelHandlerContext ctx, FullHttpResponse r, boolean keepAlive) {
        answer(ctx, logged(ctx, r), keepAlive);
    }

    /** Writes {@code r} without an access-log line (a probe's answer), then reads the next request or closes. */
    private void answer(ChannelHandlerContext ctx, FullHttpResponse r, boolean keepAlive) {
        HttpUtil.setKeepAlive(r, keepAlive);
        ctx.writeAndFlush(r).addListener((ChannelFutureListener) f -> exchangeWritten(ctx, keepAlive && f.isSuccess()));
    }

    /** The answer to the current request was written: read the next request, or close. */
    void exchangeWritten(ChannelHandlerContext ctx, boolean keepAlive) {
        if (keepAlive && ctx.channel().isActive()) {
            if (current != null) {
                return; // an earlier answer finished writing while a later request is proxied: it reads on
            }
            FullHttpRequest next = pipelined.peekFirst();
            if (next != null) {
                channelRead(ctx, next);
            } else {
                ctx.read();
            }
        } else {
            releasePipelined();
            ctx.close();
        }
    }

    private void releasePipelined() {
        for (FullHttpRequest r; (r = pipelined.pollFirst()) != null; ) {
            r.release();
        }
    }

    void exchangeEnded(Exchange x) {
        if (current == x) {
            current = null;
        }
        gw.exchangeEnded();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        Exchange x = current;
        if (x != null) {
            x.cancel();
        }
        releasePipelined();
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        LOG.log(Level.FINE, "client connection error", cause);
        ctx.close();
    }

    /**
     * A request target in absolute form ({@code http://host/v1/models?x}, which RFC 9112 §3.2.2 says a server must
     * accept, though clients send it only to forward proxies) as its origin form ({@code /v1/models?x}); any other
     * target unchanged. The host part is not used: a gateway serves its own gateway cluster whatever it is called.
     */
    static String originForm(String target) {
        int scheme = target.regionMatches(true, 0, "http://", 0, 7) ? 7
                : target.regionMatches(true, 0, "https://", 0, 8) ? 8 : -1;
        if (scheme < 0) {
            return target;
        }
        int slash = target.indexOf('/', scheme);
        int query = target.indexOf('?', scheme);
        if (slash < 0 || (query >= 0 && query < slash)) {
            return query < 0 ? "/" : "/" + target.substring(query);
        }
        return target.substring(slash);
    }

    /**
     * Whether a client's {@code x-request-id} is passed on (to the engine and in the answer): 1 to
     * {@value #MAX_REQUEST_ID} printable ASCII characters (spaces included, not only spaces). Any other (absent,
     * blank, 12 KB that the engine would refuse as too large a header, a tab or bytes beyond ASCII that an engine's
     * HTTP parser may refuse) is replaced by the gateway's own id.
     */
    static boolean usableRequestId(String id) {
        if (id == null || id.isBlank() || id.length() > MAX_REQUEST_ID) {
            return false;
        }
        for (int i = 0; i < id.length(); i++) {
            char c = id.charAt(i);
            if (c < 0x20 || c > 0x7e) {
                return false;
            }
        }
        return true;
    }
}
