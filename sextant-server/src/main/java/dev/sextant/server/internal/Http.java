package dev.sextant.server.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

/**
 * HTTP helpers shared by Sextant's servers: full responses, OpenAI-shaped errors, query parameters and
 * bearer-token checks. Not API: the servers' own packages use it.
 */
public final class Http {
    /** One mapper for the servers' small JSON documents; thread-safe once configured. */
    public static final ObjectMapper JSON = new ObjectMapper();

    /**
     * The header a gateway names its gateway cluster in, on every request it sends an engine (probes included), so
     * that an engine (or the engine emulator's network model) can tell where a request came from. A client's header
     * of this name is never forwarded: it cannot pass for another gateway cluster.
     */
    public static final String GATEWAY_CLUSTER_HEADER = "x-sextant-gateway-cluster";

    private Http() {
    }

    /** A full response with {@code body} of {@code contentType}; content-length set. */
    public static FullHttpResponse response(HttpResponseStatus status, String contentType, String body) {
        ByteBuf buf = Unpooled.copiedBuffer(body, StandardCharsets.UTF_8);
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, buf);
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
        HttpUtil.setContentLength(r, buf.readableBytes());
        return r;
    }

    /** A JSON response. */
    public static FullHttpResponse json(HttpResponseStatus status, String body) {
        return response(status, "application/json", body);
    }

    /** The JSON text of OpenAI's error shape {@code {"error": {"message", "type", "param", "code"}}}, param null. */
    public static String errorBody(String message, String type, String code) {
        return errorBody(message, type, null, code);
    }

    /**
     * The JSON text of OpenAI's error shape {@code {"error": {"message", "type", "param", "code"}}}.
     *
     * @param param the request body's field the error is about ({@code model}, {@code messages} …), or null when it is
     *              about none; a client (or an SDK) can then point at the field without parsing the message
     */
    public static String errorBody(String message, String type, String param, String code) {
        ObjectNode root = JSON.createObjectNode();
        ObjectNode error = root.putObject("error");
        error.put("message", message);
        error.put("type", type);
        if (param == null) {
            error.putNull("param");
        } else {
            error.put("param", param);
        }
        if (code == null) {
            error.putNull("code");
        } else {
            error.put("code", code);
        }
        return root.toString();
    }

    /** An OpenAI-shaped error response; {@code retryAfter} (may be null) becomes a whole-seconds {@code Retry-After}. */
    public static FullHttpResponse error(HttpResponseStatus status, String type, String code, String message,
                                         Duration retryAfter) {
        return error(status, type, code, null, message, retryAfter);
    }

    /**
     * An OpenAI-shaped error response about the request body's field {@code param} (null: about none);
     * {@code retryAfter} (may be null) becomes a whole-seconds {@code Retry-After}.
     */
    public static FullHttpResponse error(HttpResponseStatus status, String type, String code, String param,
                                         String message, Duration retryAfter) {
        FullHttpResponse r = json(status, errorBody(message, type, param, code));
        if (retryAfter != null && !retryAfter.isZero()) {
            long s = Math.max(1, (retryAfter.toMillis() + 999) / 1000);
            r.headers().set(HttpHeaderNames.RETRY_AFTER, Long.toString(s));
        }
        return r;
    }

    /**
     * 405 for {@code method} on {@code path}, in OpenAI's error shape, with the methods the resource takes ({@code allow},
     * e.g. {@code "GET, HEAD"}) in {@code Allow} as RFC 9110 §15.5.6 requires.
     */
    public static FullHttpResponse methodNotAllowed(HttpMethod method, String path, String allow) {
        FullHttpResponse r = error(HttpResponseStatus.METHOD_NOT_ALLOWED, "invalid_request_error", "method_not_allowed",
                method + " " + path + ": use " + allow.replace(", ", " or "), null);
        r.headers().set(HttpHeaderNames.ALLOW, allow);
        return r;
    }

    /** Whether {@code method} may read a resource: GET, or HEAD (the same answer without its body). */
    public static boolean reads(HttpMethod method) {
        return method == HttpMethod.GET || method == HttpMethod.HEAD;
    }

    /**
     * The control plane's ETag of a snapshot, {@code "<version>-<hash prefix>"}: a gateway that sends it back in
     * {@code If-None-Match} says which version it holds.
     */
    public static String etag(dev.sextant.snapshot.Snapshot s) {
        return "\"" + s.version() + "-" + s.hash().substring(0, Math.min(16, s.hash().length())) + "\"";
    }

    /**
     * Writes {@code text} to {@code file} through a temporary file beside it that is then moved over it atomically,
     * so that a crash leaves the old content or the new, never part of one.
     */
    public static void writeAtomically(java.nio.file.Path file, String text) throws java.io.IOException {
        java.nio.file.Path temporary = file.resolveSibling(file.getFileName() + ".tmp");
        java.nio.file.Files.writeString(temporary, text, java.nio.charset.StandardCharsets.UTF_8);
        java.nio.file.Files.move(temporary, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    /** Writes {@code response}, keeping the connection when {@code keepAlive}, closing it after the flush otherwise. */
    public static void send(ChannelHandlerContext ctx, FullHttpResponse response, boolean keepAlive) {
        HttpUtil.setKeepAlive(response, keepAlive);
        if (keepAlive) {
            ctx.writeAndFlush(response);
        } else {
            ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
        }
    }

    /** The first value of query parameter {@code name}, or null. */
    public static String query(QueryStringDecoder q, String name) {
        List<String> v = q.parameters().get(name);
        return v == null || v.isEmpty() ? null : v.get(0);
    }

    /**
     * The longest duration a setting or a request may give: a year, the data plane's own bound
     * ({@link dev.sextant.request.DataPlaneOptions#MAX_DURATION}). No setting needs more (a snapshot kept "for ever" is
     * kept for a year), and every deadline is computed as now + duration in nanoseconds, which a few centuries overflow
     * (docs/servers.md, "gateway.yaml").
     */
    public static final Duration MAX_DURATION = dev.sextant.request.DataPlaneOptions.MAX_DURATION;

    /**
     * A duration such as {@code 30s}, {@code 500ms}, {@code 2m} or a bare number of seconds, at most
     * {@link #MAX_DURATION}.
     *
     * @throws IllegalArgumentException naming {@code field} when it is not one
     */
    public static Duration duration(String field, String text) {
        String t = text.trim();
        Duration d;
        try {
            if (t.endsWith("ms")) {
                d = Duration.ofMillis(nonNegative(Long.parseLong(t.substring(0, t.length() - 2).trim())));
            } else if (t.endsWith("s")) {
                d = Duration.ofMillis(Math.round(nonNegative(Double.parseDouble(t.substring(0, t.length() - 1).trim()))
                        * 1000));
            } else if (t.endsWith("m")) {
                d = Duration.ofSeconds(Math.round(nonNegative(Double.parseDouble(t.substring(0, t.length() - 1).trim()))
                        * 60));
            } else {
                d = Duration.ofMillis(Math.round(nonNegative(Double.parseDouble(t)) * 1000));
            }
        } catch (NumberFormatException | ArithmeticException e) {
            d = null;
        }
        if (d == null || d.compareTo(MAX_DURATION) > 0) {
            throw new IllegalArgumentException(field + ": '" + text
                    + "' (expected: a duration >= 0 such as 30s or 500ms, at most 365 days)");
        }
        return d;
    }

    /**
     * Checks a setting's duration is positive: {@code field: 0ms (expected: > 0)} otherwise (in milliseconds, as
     * {@link #duration} reads them, not Java's {@code PT0S}).
     */
    public static void positive(String field, Duration d) {
        if (d == null || d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(field + ": " + (d == null ? "missing" : d.toMillis() + "ms")
                    + " (expected: > 0)");
        }
    }

    /** {@code v} when it is a finite number ≥ 0 (a duration's amount); else NumberFormatException. */
    private static double nonNegative(double v) {
        if (!(v >= 0 && v <= Long.MAX_VALUE / 1000.0)) { // NaN, negative, infinite or beyond a Duration in ms
            throw new NumberFormatException(Double.toString(v));
        }
        return v;
    }

    private static long nonNegative(long v) {
        if (v < 0) {
            throw new NumberFormatException(Long.toString(v));
        }
        return v;
    }

    /**
     * The 401 answer to a request without the right bearer token: an OpenAI-shaped error with
     * {@code WWW-Authenticate: Bearer}; it never repeats what the client sent.
     */
    public static FullHttpResponse unauthorized() {
        FullHttpResponse r = error(HttpResponseStatus.UNAUTHORIZED, "invalid_request_error", "unauthorized",
                "missing or wrong bearer token", null);
        r.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer");
        return r;
    }

    /** Whether a keep-alive reply is possible for a request with these HTTP semantics. */
    public static boolean keepAlive(io.netty.handler.codec.http.HttpRequest request) {
        return HttpUtil.isKeepAlive(request);
    }

    /** {@code text/plain; charset=utf-8}. */
    public static final String TEXT = HttpHeaderValues.TEXT_PLAIN + "; charset=utf-8";
}
