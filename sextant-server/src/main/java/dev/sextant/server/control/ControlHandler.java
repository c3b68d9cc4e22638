package dev.sextant.server.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sextant.config.Json;
import dev.sextant.control.EngineEstimate;
import dev.sextant.control.Estimates;
import dev.sextant.control.GatewayReport;
import dev.sextant.control.Step;
import dev.sextant.server.auth.BearerToken;
import dev.sextant.server.auth.Principal;
import dev.sextant.server.internal.Http;
import dev.sextant.server.internal.LogText;
import dev.sextant.server.internal.OversizedAwareAggregator;
import dev.sextant.server.internal.Versions;
import dev.sextant.snapshot.Snapshot;
import io.netty.buffer.ByteBufInputStream;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/** The control plane's HTTP endpoints; every problem becomes an OpenAI-shaped error response. */
final class ControlHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
    private static final Logger LOG = Logger.getLogger(ControlHandler.class.getName());

    private final ControlPlane cp;
    /**
     * Who sent the request being read, as its head's token says ({@link #admit}); null before a head passed. One request
     * is read at a time on a connection, and its head is admitted before its whole request arrives here.
     */
    private Principal principal;

    ControlHandler(ControlPlane cp) {
        this.cp = cp;
    }

    /**
     * Decides on a request's head, before any of its body is read ({@link dev.sextant.server.internal.HeadCheck}):
     * 401 for a token this control plane does not know on an endpoint behind one, 403 for a gateway cluster's token
     * asking for an operator's endpoint or another cluster's snapshot view, else null (and the principal is kept for
     * the request: a report's gateway cluster is in its body, checked once it is read).
     */
    FullHttpResponse admit(HttpRequest head) {
        principal = null;
        QueryStringDecoder q = new QueryStringDecoder(head.uri());
        String path = q.path();
        if (!Access.guarded(path)) {
            return null;
        }
        BearerToken.Presented presented = BearerToken.Presented.of(head.headers().getAll(HttpHeaderNames.AUTHORIZATION));
        if (presented.ambiguous()) {
            return cp.access.ambiguous();
        }
        String authorization = presented.authorization();
        Principal p = cp.access.authenticate(authorization);
        if (p == null) {
            return cp.access.unauthorized(authorization);
        }
        if (path.equals("/v1/explain") && !p.operator()) {
            return cp.access.forbidden("operator_only", "explain takes an operator's token; this one is "
                    + p + "'s");
        }
        String gw = path.equals("/v1/snapshot") ? Http.query(q, "gateway") : null;
        if (gw != null && !p.mayActFor(gw)) {
            return otherCluster(p, "read the snapshot view of", gw);
        }
        principal = p;
        return null;
    }

    private FullHttpResponse otherCluster(Principal p, String what, String gw) {
        return cp.access.forbidden("other_gateway_cluster", "this token is " + p + "'s; it may not " + what
                + " gateway cluster " + gw);
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
        boolean keepAlive = HttpUtil.isKeepAlive(req);
        if (req.decoderResult().isFailure()) {
            refuseMalformed(ctx, req.decoderResult().cause());
            return;
        }
        try {
            QueryStringDecoder q = new QueryStringDecoder(req.uri());
            String path = q.path();
            // the bearer token was checked on the head, before any body was read (admit)
            if (!allowed(req.method(), path)) {
                Http.send(ctx, Http.methodNotAllowed(req.method(), path, path.equals("/v1/reports") ? "POST" : "GET, HEAD"),
                        keepAlive);
                return;
            }
            switch (path) {
                case "/healthz" -> Http.send(ctx, Http.json(HttpResponseStatus.OK, health()), keepAlive);
                case "/readyz" -> ready(ctx, keepAlive);
                case "/metrics" -> Http.send(ctx, Http.response(HttpResponseStatus.OK,
                        "text/plain; version=0.0.4; charset=utf-8", cp.registry.scrape()), keepAlive);
                case "/v1/snapshot" -> snapshot(ctx, req, q, keepAlive);
                case "/v1/explain" -> explain(ctx, req, q, keepAlive);
                case "/v1/reports" -> report(ctx, req, keepAlive);
                default -> Http.send(ctx, Http.error(HttpResponseStatus.NOT_FOUND, "invalid_request_error",
                        "unknown_url", "unknown path: " + req.method() + " " + path, null), keepAlive);
            }
        } catch (IllegalArgumentException e) {
            Http.send(ctx, Http.error(HttpResponseStatus.BAD_REQUEST, "invalid_request_error", "invalid_request",
                    e.getMessage(), null), keepAlive);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "internal error handling " + LogText.oneLine(req.uri()), e);
            Http.send(ctx, Http.error(HttpResponseStatus.INTERNAL_SERVER_ERROR, "server_error", "internal_error",
                    "internal error: " + e, null), false);
        }
    }

    /** The version in an ETag of ours ({@link Http#etag}: {@code "<version>-<hash prefix>"}), or -1. */
    static long heldVersion(String etag) {
        int dash = etag.indexOf('-');
        if (!etag.startsWith("\"") || dash < 2) {
            return -1;
        }
        try {
            return Long.parseLong(etag.substring(1, dash));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private void snapshot(ChannelHandlerContext ctx, FullHttpRequest req, QueryStringDecoder q, boolean keepAlive) {
        String gw = Http.query(q, "gateway");
        if (gw == null) {
            throw new IllegalArgumentException("gateway: missing (expected: ?gateway=ID"
                    + (principal.operator() ? ", one of " + cp.current().routes().keySet() : "") + ")");
        }
        if (!principal.mayActFor(gw)) { // admitted on its head already; said again where the view is given out
            Http.send(ctx, otherCluster(principal, "read the snapshot view of", gw), keepAlive);
            return;
        }
        if (!cp.current().routes().containsKey(gw)) {
            unknownGateway(ctx, gw, keepAlive);
            return;
        }
        String waitText = Http.query(q, "wait");
        Duration requested = waitText == null ? Duration.ZERO : Http.duration("wait", waitText);
        Duration wait = requested.compareTo(cp.config.maxWait()) > 0 ? cp.config.maxWait() : requested;
        String ifNoneMatch = req.headers().get(HttpHeaderNames.IF_NONE_MATCH);
        // the view is made off this event loop (on a large fleet it takes tens of ms), then answered on it
        whenView(ctx, gw, keepAlive, view -> answer(ctx, gw, view, ifNoneMatch, wait, keepAlive));
    }

    /** Runs {@code then} on the channel's event loop with the gateway cluster's current view, or answers the error. */
    private void whenView(ChannelHandlerContext ctx, String gw, boolean keepAlive,
                          java.util.function.Consumer<ControlPlane.GatewayView> then) {
        cp.view(gw).whenComplete((view, err) -> ctx.executor().execute(() -> {
            if (!ctx.channel().isActive()) {
                return;
            }
            if (err != null) {
                LOG.log(Level.WARNING, "could not make the snapshot view of gateway cluster " + gw, err);
                Http.send(ctx, Http.error(HttpResponseStatus.INTERNAL_SERVER_ERROR, "server_error", "internal_error",
                        "internal error: " + err, null), false);
            } else if (view == null) { // the snapshot no longer routes this gateway cluster
                unknownGateway(ctx, gw, keepAlive);
            } else {
                then.accept(view);
            }
        }));
    }

    private void unknownGateway(ChannelHandlerContext ctx, String gw, boolean keepAlive) {
        // a gateway cluster's token learns nothing of the others
        Http.send(ctx, Http.error(HttpResponseStatus.NOT_FOUND, "invalid_request_error", "unknown_gateway",
                "gateway: " + gw + " (expected: " + (principal != null && principal.operator()
                        ? "one of " + cp.current().routes().keySet() : "a gateway cluster the snapshot routes") + ")",
                null), keepAlive);
    }

    private void answer(ChannelHandlerContext ctx, String gw, ControlPlane.GatewayView view, String ifNoneMatch,
                        Duration wait, boolean keepAlive) {
        long version = view.snapshot().version();
        // "*" matches whatever is current (RFC 9110 §13.1.2): 304, or with `wait` the next publication
        boolean current = ifNoneMatch != null && (ifNoneMatch.equals(view.etag()) || ifNoneMatch.strip().equals("*"));
        if (!current) { // an ETag that is not the current one is never answered 304: the poller's copy is not ours
            long held = ifNoneMatch == null ? -1 : heldVersion(ifNoneMatch);
            if (held >= version && Versions.adoptable(held)) {
                // the gateway holds a version this control plane has not published: it restarted and lost its
                // count, and the gateway would refuse everything it sends until the count caught up. Republish
                // above it, and answer this poll with whatever is current once that is done.
                cp.catchUp(held).whenComplete((done, err) -> ctx.executor().execute(() -> whenView(ctx, gw, keepAlive,
                        now -> sendSnapshot(ctx, now, keepAlive))));
                return;
            }
            if (held > Versions.MAX_ADOPTED) {
                cp.publication.refusedVersion(held);
            }
            sendSnapshot(ctx, view, keepAlive);
            return;
        }
        if (wait.isZero()) {
            notModified(ctx, view, keepAlive);
            return;
        }
        // long-poll: answer at the next publication or after `wait`, whichever comes first (on this event loop)
        boolean[] done = {false};
        ScheduledFuture<?>[] timer = {null};
        Runnable[] callback = {null};
        callback[0] = () -> ctx.executor().execute(() -> {
            if (done[0]) {
                return;
            }
            done[0] = true;
            if (timer[0] != null) {
                timer[0].cancel(false);
            }
            whenView(ctx, gw, keepAlive, next -> sendSnapshot(ctx, next, keepAlive));
        });
        timer[0] = ctx.executor().schedule(() -> {
            if (done[0]) {
                return;
            }
            done[0] = true;
            cp.publisher.cancel(callback[0]);
            // a publication that raced the timer is sent, not hidden behind a 304
            whenView(ctx, gw, keepAlive, now -> {
                if (!now.etag().equals(view.etag())) {
                    sendSnapshot(ctx, now, keepAlive);
                } else {
                    notModified(ctx, view, keepAlive);
                }
            });
        }, wait.toNanos(), TimeUnit.NANOSECONDS);
        ctx.channel().closeFuture().addListener(f -> cp.publisher.cancel(callback[0]));
        cp.publisher.onNext(version, callback[0]);
    }

    private static void sendSnapshot(ChannelHandlerContext ctx, ControlPlane.GatewayView view, boolean keepAlive) {
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK,
                io.netty.buffer.Unpooled.wrappedBuffer(view.json()));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json");
        HttpUtil.setContentLength(r, view.json().length);
        r.headers().set(HttpHeaderNames.ETAG, view.etag());
        r.headers().set(HttpHeaderNames.CACHE_CONTROL, "no-cache");
        Http.send(ctx, r, keepAlive);
    }

    private static void notModified(ChannelHandlerContext ctx, ControlPlane.GatewayView view, boolean keepAlive) {
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.NOT_MODIFIED);
        r.headers().set(HttpHeaderNames.ETAG, view.etag());
        HttpUtil.setContentLength(r, 0);
        Http.send(ctx, r, keepAlive);
    }

    private void explain(ChannelHandlerContext ctx, FullHttpRequest req, QueryStringDecoder q, boolean keepAlive) {
        String gw = Http.query(q, "gateway");
        String cls = Http.query(q, "class");
        if (gw == null || cls == null) {
            throw new IllegalArgumentException("gateway and class: both required (e.g. ?gateway=east&class=chat)");
        }
        String format = Http.query(q, "format");
        if (format != null && !format.equals("json") && !format.equals("text")) {
            throw new IllegalArgumentException("format: '" + format + "' (expected: json or text)");
        }
        Snapshot s = cp.current();
        if (s.route(gw, cls) == null) {
            Http.send(ctx, Http.error(HttpResponseStatus.NOT_FOUND, "invalid_request_error", "unknown_route",
                    "no route for gateway " + gw + " and class " + cls + " in snapshot " + s.version(), null), keepAlive);
            return;
        }
        String accept = req.headers().get(HttpHeaderNames.ACCEPT, "");
        boolean text = "text".equals(format) || (format == null && accept.startsWith("text/plain"));
        // off the event loop (a large fleet's explanation solves two baselines), answered back on it
        cp.explain(gw, cls, text).whenComplete((body, err) -> ctx.executor().execute(() -> {
            if (!ctx.channel().isActive()) {
                return;
            }
            if (err != null) {
                Throwable cause = err instanceof java.util.concurrent.CompletionException && err.getCause() != null
                        ? err.getCause() : err;
                if (cause instanceof IllegalArgumentException) {
                    Http.send(ctx, Http.error(HttpResponseStatus.BAD_REQUEST, "invalid_request_error",
                            "invalid_request", cause.getMessage(), null), keepAlive);
                } else {
                    LOG.log(Level.WARNING, "internal error explaining " + gw + "/" + cls, cause);
                    Http.send(ctx, Http.error(HttpResponseStatus.INTERNAL_SERVER_ERROR, "server_error",
                            "internal_error", "internal error: " + cause, null), false);
                }
            } else if (text) {
                Http.send(ctx, Http.response(HttpResponseStatus.OK, Http.TEXT, body), keepAlive);
            } else {
                Http.send(ctx, Http.json(HttpResponseStatus.OK, body), keepAlive);
            }
        }));
    }

    private void report(ChannelHandlerContext ctx, FullHttpRequest req, boolean keepAlive) {
        JsonNode body;
        try (ByteBufInputStream in = new ByteBufInputStream(req.content().duplicate())) {
            body = Http.JSON.readTree((java.io.InputStream) in);
        } catch (java.io.IOException e) {
            // Jackson's own words without the location it appends on further lines
            throw new IllegalArgumentException("malformed JSON report: " + Json.message(
                    e instanceof com.fasterxml.jackson.core.JsonProcessingException j ? j.getOriginalMessage()
                            : e.getMessage()));
        }
        if (body == null || !body.isObject()) {
            throw new IllegalArgumentException("report: expected a JSON object");
        }
        // checked whole here, on the event loop; given to the control loop on its signal thread
        GatewayReport report = ReportParser.parse(body, cp.topology(), cp.ticker.nanos());
        if (!principal.mayActFor(report.gateway())) { // nothing of it is taken
            Http.send(ctx, otherCluster(principal, "report for", report.gateway()), keepAlive);
            return;
        }
        if (!cp.report(report)) {
            Http.send(ctx, Http.error(HttpResponseStatus.SERVICE_UNAVAILABLE, "server_error", "overloaded",
                    "reports arrive faster than the control loop takes them; this one was dropped", null), keepAlive);
            return;
        }
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.NO_CONTENT);
        Http.send(ctx, r, keepAlive);
    }

    /**
     * A request the HTTP decoder refused: a body over the limit gets the 413 in OpenAI's shape, and the connection
     * closes once the rest of the body was drained (so that the client reads the answer, not a reset); anything else
     * (a bad head) a 400, or 431 or 414 for a header block or request line over {@code max_header_bytes}, closing the
     * connection, since where the next request would start is unknown.
     */
    private static void refuseMalformed(ChannelHandlerContext ctx, Throwable cause) {
        if (cause instanceof io.netty.handler.codec.http.TooLongHttpContentException) {
            ctx.writeAndFlush(OversizedAwareAggregator.refusal(cause.getMessage())).addListener(
                    (io.netty.channel.ChannelFutureListener) f -> OversizedAwareAggregator.closeAfterRefusal(ctx,
                            f.isSuccess()));
            return;
        }
        HttpResponseStatus status = cause instanceof io.netty.handler.codec.http.TooLongHttpHeaderException
                ? HttpResponseStatus.REQUEST_HEADER_FIELDS_TOO_LARGE
                : cause instanceof io.netty.handler.codec.http.TooLongHttpLineException
                        ? HttpResponseStatus.REQUEST_URI_TOO_LONG : HttpResponseStatus.BAD_REQUEST;
        Http.send(ctx, Http.error(status, "invalid_request_error", status == HttpResponseStatus.BAD_REQUEST
                ? "malformed_request" : "request_head_too_large", "malformed HTTP request: " + cause.getMessage()
                + (status == HttpResponseStatus.BAD_REQUEST ? "" : " (max_header_bytes)"), null), false);
    }

    /** Whether {@code path}, when it is one of ours, takes {@code method}: reports are posted, the rest read. */
    private static boolean allowed(HttpMethod method, String path) {
        return switch (path) {
            case "/healthz", "/readyz", "/metrics", "/v1/snapshot", "/v1/explain" -> Http.reads(method);
            case "/v1/reports" -> method == HttpMethod.POST;
            default -> true; // 404 below
        };
    }

    /**
     * Kubernetes' readiness: 200 {@code ready} while the policy path works, 503 {@code policy failing} and the reason
     * while it fails (the gateways serve on from their snapshot; an operator is told rather than left with a policy
     * that silently stopped moving).
     */
    private void ready(ChannelHandlerContext ctx, boolean keepAlive) {
        String failing = cp.policyError();
        Http.send(ctx, failing == null ? Http.response(HttpResponseStatus.OK, Http.TEXT, "ready\n")
                : Http.response(HttpResponseStatus.SERVICE_UNAVAILABLE, Http.TEXT, "policy failing\n" + failing + "\n"),
                keepAlive);
    }

    private String health() {
        ObjectNode root = Http.JSON.createObjectNode();
        Snapshot s = cp.current();
        String failing = cp.policyError();
        root.put("status", failing != null ? "policy_failing" : cp.topologyError() == null ? "ok" : "topology_invalid");
        if (failing == null) {
            root.putNull("policy_error");
        } else {
            root.put("policy_error", failing);
        }
        root.put("role", cp.role());
        root.put("snapshot_version", s.version());
        root.put("snapshot_hash", s.hash());
        root.put("topology_file", cp.config.topologyFile().toString());
        if (cp.topologyError() == null) {
            root.putNull("topology_error");
        } else {
            root.put("topology_error", cp.topologyError());
        }
        root.put("registered_engines", cp.registeredEngines().size());
        ObjectNode refused = root.putObject("refused_registrations");
        for (RegisteredEngines.Refusal r : cp.refusedRegistrations()) {
            refused.put(r.id(), r.reason().label() + ": " + r.why());
        }
        if (cp.config.credentials() != null) { // the file's path and problems, never a token nor a digest
            root.put("credentials_file", cp.config.credentials().file().toString());
            if (cp.access.credentialsError() == null) {
                root.putNull("credentials_error");
            } else {
                root.put("credentials_error", cp.access.credentialsError());
            }
        }
        Step last = cp.lastStep();
        root.set("last_step", Http.JSON.valueToTree(lastStep(last)));
        Estimates e = cp.estimates();
        ObjectNode engines = root.putObject("engines");
        for (EngineEstimate x : new java.util.TreeMap<>(e.engines()).values()) {
            ObjectNode n = engines.putObject(x.engine());
            n.put("condition", ControlPlane.label(x.condition()));
            n.put("healthy", !x.condition().outOfService());
            number(n, "health", x.health());
            number(n, "capacity_rps", x.capacityRps());
            number(n, "configured_rps", x.configuredRps());
            number(n, "slowdown", x.slowdown());
            n.put("why", x.conditionWhy());
            n.put("capacity_why", x.capacityWhy());
            n.put("speed_why", x.speedWhy());
            EngineProbes.ScrapeState scrape = cp.scrapes().get(x.engine());
            n.put("missed_scrapes", scrape == null ? 0 : scrape.misses());
            if (scrape == null || scrape.error() == null) {
                n.putNull("scrape_error");
            } else {
                n.put("scrape_error", scrape.error());
            }
        }
        return root.toString();
    }

    /**
     * The last step for {@code /healthz}: published (with the version) or not, why, and the gain against the
     * threshold.
     */
    private static java.util.Map<String, Object> lastStep(Step last) {
        if (last == null) {
            return null;
        }
        java.util.Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("published", last.published());
        m.put("version", last.published() ? last.snapshot().version() : null);
        m.put("reason", last.reason());
        m.put("gain_ms", Double.isFinite(last.gainMs()) ? last.gainMs() : null);
        m.put("threshold_ms", Double.isFinite(last.thresholdMs()) ? last.thresholdMs() : null);
        return m;
    }

    /** A number, or null when it is not finite (JSON has no NaN). */
    private static void number(ObjectNode n, String field, double v) {
        if (Double.isFinite(v)) {
            n.put(field, v);
        } else {
            n.putNull(field);
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        LOG.log(Level.FINE, "control plane connection error", cause);
        ctx.close();
    }
}
