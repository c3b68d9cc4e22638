package dev.sextant.server.gateway;

import dev.sextant.request.DataPlane;
import dev.sextant.request.Decision;
import dev.sextant.request.Outcome;
import dev.sextant.request.Refusal;
import dev.sextant.server.internal.Http;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.concurrent.ScheduledFuture;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * One proxied request, from its routing decision to the last byte: connects (or reuses a pooled connection),
 * sends, streams the answer back, retries per the data plane while the engine cannot have generated any of it, and
 * ends with exactly one {@code onFinish} (or {@code retry} refusal), one metrics record and one access-log line.
 *
 * <p>No request is generated twice (docs/request-path.md §5). An attempt is retried only when its engine cannot have
 * generated a token of it: no connection was made; the connection closed before the request was written whole; the
 * engine answered 429 or 503 (not accepted); or, for a streaming request, the engine failed before its first event
 * (it sends each token as it makes it, and stops when its connection closes), which is why a stream's head is held
 * until that event. A non-streaming request that fails after it was written, and any attempt that times out after
 * it, is not retried: the engine may have generated it, and its connection is closed to stop it.
 *
 * <p>Everything runs on the downstream channel's event loop, which is also the upstream channel's loop; no
 * field needs synchronization. Back-pressure: the upstream channel reads only after the previous chunk was
 * written to the client.
 *
 * <p>Why one long class: a request's life is one state machine (connecting, writing, head held, streaming, retrying,
 * ended) over one set of fields that every state reads and writes on one event loop; split across classes, those
 * fields would be shared mutable state. Its protocol pieces are apart: the client's side in {@link FrontHandler},
 * engine connections in {@link UpstreamPool}, the end of a Responses stream in {@link ResponsesStreamEnd}.
 */
final class Exchange {
    private final Gateway gw;
    private final FrontHandler front;
    private final ChannelHandlerContext ctx;
    private final EventLoop loop;
    private final FullHttpRequest request; // owned: released once in end()
    final String path;
    private final boolean keepAlive;
    /** The answer has no length and the client speaks HTTP/1.0: closing the connection ends it. */
    private boolean closeDelimited;
    /**
     * The engine answered 205 (Reset Content), which has no content (RFC 9110 §15.3.6: a server must not generate
     * any): what an engine sent with it anyway is read and dropped, and the client gets a length of 0.
     */
    private boolean resetContent;
    private final String requestId;
    private final long startNanos;
    /** The request asked for an event stream ({@code "stream": true}). */
    private final boolean stream;
    /** The timeouts of the request's class. */
    private RequestTimeouts limits;

    private Decision decision;
    private Channel upstream;
    private boolean reusedUpstream; // the connection came from the pool
    private boolean freshConnection; // the next attempt opens a new connection: a pooled one was closed under the last
    /** The attempt's request was written whole to its connection: from then on the engine may be generating it. */
    private boolean written;
    /** A stream's 200 head, held until the engine's first event so that a failure before it can still be retried. */
    private HttpResponse heldHead;
    private boolean headersSent;
    private boolean sse;
    private boolean responseKeepAlive;
    private boolean ended;
    private Outcome pending; // an error response being read before a retry
    private int pendingStatus;
    private Duration pendingRetryAfter; // with pendingStatus: that engine's Retry-After, when it gave one in seconds
    private final StringBuilder pendingBody = new StringBuilder();
    private StringBuilder failures; // what each failed attempt's engine did, for the final error (rare path)
    private Decision refusedRetry; // the data plane's refusal of a retry, when that ended the request
    private boolean reachedAnEngine; // some attempt got past connecting
    private Outcome endOutcome = Outcome.SUCCESS;
    private int status;
    private long firstChunkNanos = -1;
    /**
     * When the current attempt's request was written to the engine (when it was handed to the connection until the
     * write completes): the start of the attempt's TTFT and end-to-end time in the signal reports; −1 before.
     */
    private long attemptNanos = -1;
    private Reporter.EngineStats stats; // the signal report's counters of statsOf's engine
    private Decision statsOf;
    private final long receivedNanos;
    /** The request's conversation key (0: none): when its answer is complete, the conversation's next turn may come. */
    private final long conversationKey;
    /** Request read → written to the engine, the first attempt's; −1 until then. */
    private long forwardNanos = -1;
    private long lastChunkNanos;
    private long bytes;
    // the last bytes of a server-sent event stream, to tell a stream that ended with `data: [DONE]` from one the
    // engine cut short; allocated for event streams only
    private byte[] sseTail;
    private int sseTailLength;
    private ResponsesStreamEnd responsesEnd; // a Responses API stream ends with its own event, not data: [DONE]
    // One timer per exchange for all deadlines: re-arming the phase deadline on every chunk is a field write;
    // the timer, when it fires early, re-schedules itself for the nearest deadline.
    private long totalDeadline;
    private long phaseDeadline = Long.MAX_VALUE;
    private Channel phaseChannel;
    /** When to ask the data plane about a stream still awaiting its first token ({@link DataPlane#awaitingFirstToken}). */
    private long watchDeadline = Long.MAX_VALUE;
    private ScheduledFuture<?> timer;
    private long timerAt;
    /** Where the request body's object closes, -1 if unknown: where an engine's {@code priority} is written. */
    private final int bodyEnd;
    /** The tenant it came from, or null (an open gateway). */
    private final dev.sextant.server.tenants.Tenant tenant;

    /**
     * @param receivedNanos when the client's request was read whole ({@link System#nanoTime}), before it was parsed and
     *                      routed: the start of the gateway's own time ({@code sextant_gateway_overhead_seconds})
     * @param bodyEnd       where the request body's JSON object closes ({@link RequestBody#end()}), -1 if unknown
     * @param tenant        the tenant it came from, whose place in flight it holds until it ends; null when open
     */
    Exchange(Gateway gw, FrontHandler front, ChannelHandlerContext ctx, FullHttpRequest request, String path,
             boolean keepAlive, String requestId, long receivedNanos, boolean stream, int bodyEnd,
             dev.sextant.server.tenants.Tenant tenant, long conversationKey) {
        this.conversationKey = conversationKey;
        this.gw = gw;
        this.front = front;
        this.ctx = ctx;
        this.loop = ctx.channel().eventLoop();
        this.request = request;
        this.path = path;
        this.keepAlive = keepAlive;
        this.requestId = requestId;
        this.startNanos = System.nanoTime();
        this.receivedNanos = receivedNanos;
        this.stream = stream;
        this.bodyEnd = bodyEnd;
        this.tenant = tenant;
    }

    void start(Decision first) {
        decision = first;
        limits = gw.config.timeouts(first.classId());
        totalDeadline = startNanos + limits.total().toNanos();
        ensureTimer();
        send();
    }

    private void send() {
        long backoff = decision.backoffNanos();
        if (backoff > 0) {
            loop.schedule(this::connectAndSend, backoff, TimeUnit.NANOSECONDS);
        } else {
            connectAndSend();
        }
    }

    private void connectAndSend() {
        if (ended) {
            return;
        }
        String endpoint = decision.endpoint();
        Channel idle = freshConnection ? null : gw.pool.pollIdle(endpoint, gw.config.engineKeepAlive().toNanos());
        freshConnection = false;
        if (idle != null) {
            reusedUpstream = true;
            bind(idle);
            return;
        }
        reusedUpstream = false;
        connectFresh(endpoint);
    }

    private void connectFresh(String endpoint) {
        Decision attempt = decision;
        long connectStart = System.nanoTime();
        io.netty.channel.ChannelFuture connecting;
        try {
            connecting = gw.pool.connect(loop, endpoint);
        } catch (IllegalArgumentException e) {
            // an endpoint that is no URL (a hand-made snapshot: topologies are checked): a failed attempt like a
            // refused connection, so the engine is ejected and the request retried elsewhere, never left hanging
            failAttempt(Outcome.CONNECT_ERROR, "cannot connect to engine " + attempt.engineId() + ": its endpoint '"
                    + endpoint + "' is not an http(s) URL with a host (" + e.getMessage() + ")");
            return;
        }
        connecting.addListener((ChannelFutureListener) f -> {
            if (ended || attempt != decision) {
                f.channel().close();
                return;
            }
            if (!f.isSuccess()) {
                failAttempt(Outcome.CONNECT_ERROR, "cannot connect to engine " + attempt.engineId() + " at " + endpoint
                        + ": " + f.cause().getMessage());
                return;
            }
            connected(f.channel(), stats(), connectStart);
            bind(f.channel());
        });
    }

    /**
     * Counts the time a new connection took to open, {@code from} its connect: the TCP connect, and over TLS the
     * handshake too (the request written meanwhile waits in the TLS handler for it). A failed handshake fails the
     * request's write, as before; it counts no time.
     */
    private static void connected(Channel c, Reporter.EngineStats engine, long from) {
        io.netty.handler.ssl.SslHandler tls = c.pipeline().get(io.netty.handler.ssl.SslHandler.class);
        if (tls == null) {
            engine.connect.add(System.nanoTime() - from);
            return;
        }
        tls.handshakeFuture().addListener(h -> {
            if (h.isSuccess()) {
                engine.connect.add(System.nanoTime() - from);
            }
        });
    }

    /** The signal report's counters of the current attempt's engine, looked up once per attempt. */
    private Reporter.EngineStats stats() {
        if (statsOf != decision) {
            stats = gw.reporter.engine(decision.engineId());
            statsOf = decision;
        }
        return stats;
    }

    private void bind(Channel c) {
        upstream = c;
        c.pipeline().get(UpstreamHandler.class).owner = this;
        UpstreamPool.Target target = gw.pool.target(decision.endpoint());
        DefaultHttpRequest r = new DefaultHttpRequest(HttpVersion.HTTP_1_1, request.method(),
                target.basePath().isEmpty() ? request.uri() : target.basePath() + request.uri(),
                DefaultHttpHeadersFactory.headersFactory().newHeaders());
        // a tenant's API key is the gateway's to check, never an engine's to see; with an engine token, the engines'
        // key replaces the client's, in whichever header the client sent it
        boolean clientsKey = tenant == null && gw.config.engineToken() == null;
        for (CharSequence h : FORWARDED) {
            if (!clientsKey && (h == HttpHeaderNames.AUTHORIZATION || h == Tenancy.API_KEY)) {
                continue;
            }
            String v = request.headers().get(h);
            if (v != null) {
                r.headers().set(h, v);
            }
        }
        if (gw.config.engineToken() != null) { // the engines' key, never the client's
            r.headers().set(HttpHeaderNames.AUTHORIZATION, "Bearer " + gw.config.engineToken().current());
        }
        r.headers().set("x-request-id", requestId);
        // set, never copied: only the FORWARDED headers come from the client, so a client's own is dropped
        r.headers().set(Http.GATEWAY_CLUSTER_HEADER, gw.config.gatewayCluster());
        r.headers().set(HttpHeaderNames.HOST, target.authority());
        io.netty.buffer.ByteBuf body = bodyFor(decision.enginePriority());
        HttpUtil.setContentLength(r, body.readableBytes());
        HttpUtil.setKeepAlive(r, true);
        written = false;
        watchDeadline = Long.MAX_VALUE;
        armPhase(limits.idle()); // an engine that does not take the request makes no progress
        attemptNanos = System.nanoTime();
        writeRequest(c, r, body).addListener((ChannelFutureListener) f -> {
            long writtenAt = System.nanoTime();
            if (forwardNanos < 0) {
                forwardNanos = writtenAt - receivedNanos;
            }
            if (f.isSuccess()) {
                if (c == upstream) {
                    written = true;
                    if (!headersSent && pending == null) { // nothing answered yet, or a stream's head held: the usual
                        attemptNanos = writtenAt;
                        if (stream) {
                            armPhase(limits.firstToken());
                            watchFirstToken(gw.plane().awaitingFirstToken(decision), writtenAt);
                        } else {
                            cancelPhase(); // a whole answer shows no progress: only the total timeout bounds it
                        }
                    }
                }
                c.read();
            } else {
                onUpstreamClosed(c, f.cause());
            }
        });
    }

    /** The largest part of a request body written at once: each part taken by the connection is progress. */
    private static final int WRITE_PART = 64 * 1024;

    /**
     * Writes {@code head} and the request's body to {@code c}, the body in parts of at most {@value #WRITE_PART} bytes,
     * {@code idle_timeout} armed again as each part is taken: while writing, what it bounds is a connection that takes
     * nothing (an engine that does not read), not a large body on a slow link. Returns the last part's future.
     */
    private io.netty.channel.ChannelFuture writeRequest(Channel c, HttpRequest head, io.netty.buffer.ByteBuf body) {
        int n = body.readableBytes();
        c.write(head);
        int off = 0;
        for (; n - off > WRITE_PART; off += WRITE_PART) {
            c.write(new DefaultHttpContent(body.retainedSlice(body.readerIndex() + off, WRITE_PART)))
                    .addListener(f -> {
                        if (f.isSuccess() && c == upstream && !written) {
                            armPhase(limits.idle());
                        }
                    });
        }
        // a request with a length has no trailers: no map made for none
        io.netty.channel.ChannelFuture last = c.writeAndFlush(new DefaultLastHttpContent(
                body.retainedSlice(body.readerIndex() + off, n - off), EmptyHttpHeaders.INSTANCE));
        if (body != request.content()) {
            body.release(); // its parts hold it until written
        }
        return last;
    }

    /**
     * The body to send this attempt: the client's, untouched, or for an engine that schedules by priority
     * ({@link Decision#enginePriority()}) the client's with {@code ,"priority":N} added before its closing brace, the
     * client's bytes shared, not copied. Written last, it is the value a JSON reader keeps (Python's, vLLM's and
     * SGLang's: the last of duplicate keys), so a client's own {@code priority} cannot raise its class's.
     */
    private io.netty.buffer.ByteBuf bodyFor(int enginePriority) {
        io.netty.buffer.ByteBuf body = request.content();
        if (enginePriority == Decision.NO_ENGINE_PRIORITY || bodyEnd < 0) {
            return body;
        }
        io.netty.buffer.ByteBuf field = io.netty.buffer.Unpooled.copiedBuffer(",\"priority\":" + enginePriority,
                java.nio.charset.StandardCharsets.US_ASCII);
        int from = body.readerIndex();
        return io.netty.buffer.Unpooled.wrappedBuffer(3, body.retainedSlice(from, bodyEnd), field,
                body.retainedSlice(from + bodyEnd, body.readableBytes() - bodyEnd));
    }

    private static final CharSequence[] FORWARDED = {HttpHeaderNames.CONTENT_TYPE, HttpHeaderNames.ACCEPT,
            HttpHeaderNames.AUTHORIZATION, Tenancy.API_KEY, HttpHeaderNames.USER_AGENT};

    void onResponse(HttpResponse r) {
        if (ended) {
            return;
        }
        int code = r.status().code();
        if (!headersSent && (code >= 500 || code == 429)) {
            pending = code == 429 || code == 503
                    ? (r.headers().contains("x-sextant-overloaded") ? Outcome.SYSTEM_OVERLOADED : Outcome.ENGINE_BUSY)
                    : Outcome.SERVER_ERROR;
            pendingStatus = code;
            pendingRetryAfter = retryAfterSeconds(r.headers().get(HttpHeaderNames.RETRY_AFTER));
            responseKeepAlive = HttpUtil.isKeepAlive(r);
            armPhase(limits.idle());
            upstream.read();
            return;
        }
        responseKeepAlive = HttpUtil.isKeepAlive(r);
        String ct = r.headers().get(HttpHeaderNames.CONTENT_TYPE);
        sse = ct != null && ct.startsWith("text/event-stream");
        if (sse && code == 200) {
            sseTail = new byte[SSE_TAIL];
            responsesEnd = path.equals(FrontHandler.RESPONSES) ? new ResponsesStreamEnd() : null;
        }
        // the engine's header map, read above, becomes the client's once its hop-by-hop fields are gone: no copy
        DefaultHttpResponse out = new DefaultHttpResponse(HttpVersion.HTTP_1_1, r.status(), r.headers());
        keepEndToEnd(out);
        if (code == 204 || code == 304) {
            // an answer without content (RFC 9110 §6.4.1): a length the engine gave it anyway would make an HTTP/1.1
            // client wait for bytes that never come (and an HTTP/2 client refuse it); what followed it is not read
            out.headers().remove(HttpHeaderNames.CONTENT_LENGTH);
        } else if (code == 205) {
            // framed by its length or chunks like any answer, so the engine connection stays in step, but without
            // content for the client, whatever the engine sent (clients differ on whether to read a 205's body)
            HttpUtil.setTransferEncodingChunked(out, false);
            HttpUtil.setContentLength(out, 0);
            resetContent = true;
        }
        if (HttpVersion.HTTP_1_0.equals(request.protocolVersion()) && HttpUtil.isTransferEncodingChunked(out)) {
            // an HTTP/1.0 client knows no chunked coding (RFC 9112 §6.1): the answer ends where the connection does
            HttpUtil.setTransferEncodingChunked(out, false);
            closeDelimited = true;
        }
        out.headers().set("x-sextant-engine", decision.engineId());
        out.headers().set("x-sextant-snapshot-version", Long.toString(decision.snapshotVersion()));
        out.headers().set("x-sextant-attempts", Integer.toString(decision.attempt()));
        out.headers().set(DecisionReasons.HEADER, decision.reason());
        out.headers().set("x-request-id", requestId);
        HttpUtil.setKeepAlive(out, keep());
        status = code;
        endOutcome = code >= 400 ? Outcome.CLIENT_ERROR : Outcome.SUCCESS;
        if (stream && sseTail != null) {
            // held until the first event, within first_token_timeout: before it the engine has generated nothing, and
            // a failure may still be retried without the client seeing it
            heldHead = out;
            upstream.read();
            return;
        }
        headersSent = true;
        ctx.write(out);
        armPhase(limits.idle());
        upstream.read();
    }

    /**
     * Removes from an engine's response headers those not meant for the client. The hop-by-hop fields (RFC 9110
     * §7.6.1: {@code Connection} and the fields it names, {@code Keep-Alive}, {@code Proxy-Connection}, {@code TE},
     * {@code Trailer}, {@code Transfer-Encoding}, {@code Upgrade}) describe the engine connection only, and HTTP/2
     * forbids them; an answer without a length goes to an HTTP/1.1 client chunked (an HTTP/2 stream frames it
     * itself).
     */
    private static void keepEndToEnd(HttpResponse to) {
        HttpHeaders h = to.headers();
        for (String connection : h.getAll(HttpHeaderNames.CONNECTION)) {
            for (String name : connection.split(",")) {
                String n = name.trim();
                if (!n.isEmpty()) {
                    h.remove(n);
                }
            }
        }
        for (CharSequence name : HOP_BY_HOP) {
            h.remove(name);
        }
        if (!h.contains(HttpHeaderNames.CONTENT_LENGTH)) {
            HttpUtil.setTransferEncodingChunked(to, true);
        }
    }

    private static final CharSequence[] HOP_BY_HOP = {HttpHeaderNames.CONNECTION, HttpHeaderNames.KEEP_ALIVE,
            HttpHeaderNames.PROXY_CONNECTION, HttpHeaderNames.TE, HttpHeaderNames.TRAILER,
            HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderNames.UPGRADE};

    /** Takes ownership of {@code c}. */
    void onContent(HttpContent c) {
        if (ended) {
            c.release();
            return;
        }
        boolean last = c instanceof LastHttpContent;
        if (pending != null) {
            if (pendingBody.length() < 2048) {
                pendingBody.append(c.content().toString(StandardCharsets.UTF_8));
            }
            c.release();
            if (last) {
                releaseUpstream();
                failAnswered("engine " + decision.engineId() + " answered " + pendingStatus + ": "
                        + abbreviate(pendingBody.toString()));
            } else {
                upstream.read();
            }
            return;
        }
        if (heldHead != null && !releaseHead(c, last)) {
            return;
        }
        if (resetContent && c.content().isReadable()) {
            c.release();
            if (!last) {
                upstream.read();
                return;
            }
            c = LastHttpContent.EMPTY_LAST_CONTENT;
        }
        int n = c.content().readableBytes();
        if (n > 0) {
            long now = System.nanoTime();
            if (firstChunkNanos < 0) {
                firstChunkNanos = now;
                watchDeadline = Long.MAX_VALUE;
                gw.plane().onFirstToken(decision, stream ? now - startNanos : DataPlane.NOT_STREAMED);
                // a whole answer's first byte follows its last token: it says nothing of the time to first token
                if (stream) {
                    gw.metrics.ttft(decision.engineId(), now - startNanos);
                    gw.metrics.classTtft(decision.classId(), now - startNanos);
                    if (tenant != null) {
                        gw.metrics.tenantTtft(tenant.name(), now - startNanos);
                    }
                    stats().ttft.add(now - attemptNanos);
                }
            } else if (stream) {
                gw.metrics.tbt(decision.engineId(), now - lastChunkNanos);
                stats().tbt.add(now - lastChunkNanos);
            }
            lastChunkNanos = now;
            bytes += n;
            if (sseTail != null) {
                keepTail(c.content());
            }
            if (responsesEnd != null) {
                responsesEnd.feed(c.content());
            }
        }
        if (last) {
            releaseUpstream();
            if (sseTail != null && !(responsesEnd != null ? responsesEnd.ended() : endsWithDone())) {
                endCutStream(c);
                return;
            }
            boolean keep = keep();
            long lastIn = System.nanoTime();
            end(endOutcome, status, null); // before the last bytes, so that the state is settled when the client sees them
            ctx.writeAndFlush(c).addListener((ChannelFutureListener) f -> {
                if (f.isSuccess() && forwardNanos >= 0) {
                    gw.metrics.overhead(forwardNanos + System.nanoTime() - lastIn);
                }
                front.exchangeWritten(ctx, keep && f.isSuccess());
            });
            return;
        }
        armPhase(limits.idle());
        Channel up = upstream;
        ctx.writeAndFlush(c).addListener((ChannelFutureListener) f -> {
            if (f.isSuccess() && !ended && upstream == up) {
                up.read();
            }
        });
    }

    /**
     * Sends a stream's held head on the engine's first event ({@code c}, not released); true when {@code c} is to be
     * sent after it. An empty chunk is released and the next read; a stream that ends before its first event failed
     * before the engine generated anything.
     */
    private boolean releaseHead(HttpContent c, boolean last) {
        if (c.content().isReadable()) {
            headersSent = true;
            ctx.write(heldHead);
            heldHead = null;
            return true;
        }
        c.release();
        if (last) {
            failAttempt(Outcome.SERVER_ERROR, "engine " + decision.engineId()
                    + " ended the event stream before its first event");
        } else {
            upstream.read();
        }
        return false;
    }

    /**
     * An event stream that the engine ended cleanly as HTTP but without {@code data: [DONE]} (a Responses stream: without
     * its terminal event, {@link ResponsesStreamEnd}): the client could not
     * tell it from a complete answer, so it gets the engine's last bytes, an SSE error event and a clean end; the
     * engine is charged with a failure.
     */
    private void endCutStream(HttpContent c) {
        String message = "engine " + decision.engineId() + " ended the event stream without "
                + (responsesEnd != null ? ResponsesStreamEnd.MISSING : "data: [DONE]");
        gw.metrics.notRetried(NotRetried.ANSWER_STARTED);
        stats().attempt(Outcome.SERVER_ERROR);
        end(Outcome.SERVER_ERROR, status, message);
        if (c.content().isReadable()) {
            ctx.write(new DefaultHttpContent(c.content().retain()));
        }
        c.release();
        endWithErrorEvent(message, "upstream_error");
    }

    /**
     * Ends an event stream with an SSE error event and the chunked body's clean end. The client connection then stays
     * as after any answer: its head announced keep-alive and its body is complete, so a client may already be sending
     * its next request on it, which a close would lose.
     */
    private void endWithErrorEvent(String message, String code) {
        // an engine that stopped halfway through an event left the client in the middle of it: end that event first,
        // so that the error event is a line and an event of its own that any SSE parser reads whole
        String event = (atEventBoundary() ? "" : "\n\n") + "data: " + Http.errorBody(message, "server_error", code)
                + "\n\n";
        ctx.write(new DefaultHttpContent(Unpooled.copiedBuffer(event, StandardCharsets.UTF_8)));
        boolean keep = keep();
        ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT)
                .addListener((ChannelFutureListener) f -> front.exchangeWritten(ctx, keep && f.isSuccess()));
    }

    private static final int SSE_TAIL = 24;
    private static final byte[] DONE = "data: [DONE]".getBytes(StandardCharsets.US_ASCII);

    private void keepTail(io.netty.buffer.ByteBuf b) {
        int n = b.readableBytes();
        int take = Math.min(n, SSE_TAIL);
        int keep = Math.min(sseTailLength, SSE_TAIL - take);
        System.arraycopy(sseTail, sseTailLength - keep, sseTail, 0, keep);
        b.getBytes(b.readerIndex() + n - take, sseTail, keep, take);
        sseTailLength = keep + take;
    }

    /**
     * Whether what the client got of the stream so far ends with a blank line ({@code \n\n}, {@code \r\n\r\n} or
     * {@code \r\r}), where an event ends, or it got nothing yet; true too for a stream whose tail is not kept (not a
     * 200 event stream). A mixed ending taken for the middle of an event only adds blank lines, which SSE ignores.
     */
    private boolean atEventBoundary() {
        return sseTail == null || sseTailLength == 0 || tailEndsWith("\n\n") || tailEndsWith("\r\n\r\n")
                || tailEndsWith("\r\r");
    }

    private boolean tailEndsWith(String end) {
        int n = end.length();
        if (sseTailLength < n) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            if (sseTail[sseTailLength - n + i] != end.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    /** Whether the stream's last event is {@code data: [DONE]} (or {@code data:[DONE]}), trailing blank lines aside. */
    private boolean endsWithDone() {
        int end = sseTailLength;
        while (end > 0 && (sseTail[end - 1] == '\n' || sseTail[end - 1] == '\r')) {
            end--;
        }
        int i = end - 1;
        for (int k = DONE.length - 1; k >= 6; k--, i--) { // "[DONE]" backwards
            if (i < 0 || sseTail[i] != DONE[k]) {
                return false;
            }
        }
        if (i >= 0 && sseTail[i] == ' ') {
            i--;
        }
        for (int k = 4; k >= 0; k--, i--) { // "data:" backwards
            if (i < 0 || sseTail[i] != DONE[k]) {
                return false;
            }
        }
        return i < 0 || sseTail[i] == '\n' || sseTail[i] == '\r';
    }

    /** The engine connection closed or failed ({@code cause} may be null). */
    void onUpstreamClosed(Channel c, Throwable cause) {
        if (ended || c != upstream) {
            return;
        }
        boolean malformed = cause instanceof UpstreamHandler.MalformedResponseException;
        String engine = "engine " + decision.engineId() + " ";
        String why = cause == null ? "closed the connection" : malformed ? cause.getMessage()
                : "failed: " + cause.getMessage();
        if (pending != null) {
            failAnswered(engine + "answered " + pendingStatus);
        } else if (headersSent) {
            failMidResponse(Outcome.SERVER_ERROR, engine + why + " mid-response", NotRetried.ANSWER_STARTED);
        } else if (!written && reusedUpstream && !malformed) {
            // a kept-alive connection the engine closed as it was reused, before it could read the request: another
            // attempt, counted as one, on a new connection to the same engine
            freshConnection = true;
            failAttempt(Outcome.NOT_SENT, engine + "closed a kept-alive connection before the request was written to it");
        } else if (!written) {
            failAttempt(Outcome.SERVER_ERROR, engine + why + " before the request was written to it");
        } else if (stream) {
            failAttempt(Outcome.SERVER_ERROR, engine + why + " before its first event");
        } else {
            giveUp(Outcome.SERVER_ERROR, engine + why + " after the request was written to it, before answering",
                    NotRetried.REQUEST_WRITTEN);
        }
    }

    private void onPhaseTimeout(Channel c) {
        if (ended) {
            return;
        }
        if (c != upstream) { // a deadline left over from an earlier attempt
            cancelPhase();
            ensureTimer();
            return;
        }
        String engine = "engine " + decision.engineId() + " ";
        if (headersSent) {
            failMidResponse(Outcome.TIMEOUT, engine + "sent nothing for " + seconds(limits.idle()) + " (idle_timeout)",
                    NotRetried.TIMEOUT);
        } else if (pending != null) {
            failAnswered(engine + "answered " + pendingStatus);
        } else if (!written) {
            failAttempt(Outcome.TIMEOUT, engine + "did not take the request within " + seconds(limits.idle())
                    + " (idle_timeout)");
        } else {
            giveUp(Outcome.TIMEOUT, engine + "sent no first token within " + seconds(limits.firstToken())
                    + " (first_token_timeout)", NotRetried.TIMEOUT);
        }
    }

    private void onTotalTimeout() {
        if (ended) {
            return;
        }
        String msg = "request did not complete within " + seconds(limits.total()) + " (total_timeout)";
        if (headersSent) {
            failMidResponse(Outcome.TIMEOUT, msg, NotRetried.TIMEOUT);
            return;
        }
        closeUpstream(); // stops the engine's work on it
        gw.plane().onFinish(decision, Outcome.TIMEOUT, -1);
        stats().attempt(Outcome.TIMEOUT);
        gw.metrics.notRetried(NotRetried.TIMEOUT);
        respondError(HttpResponseStatus.GATEWAY_TIMEOUT, "timeout", msg, null);
    }

    /**
     * An engine's error status, read whole (or cut): 429 and 503 (not accepted) may be retried, and so may any status
     * that answers a stream, which has no event yet; another 5xx to a non-streaming request may have come after the
     * engine generated it.
     */
    private void failAnswered(String message) {
        if (pending == Outcome.SERVER_ERROR && !stream) {
            giveUp(Outcome.SERVER_ERROR, message, NotRetried.ENGINE_ERROR);
        } else {
            failAttempt(pending, message);
        }
    }

    /**
     * A failure the engine cannot have generated any of, while nothing reached the client: retry per the data plane,
     * or answer with an error that says what every attempt's engine did. When no attempt could even connect (every
     * engine allowed to take the request is down or cut off), the answer is 503: the service is unavailable, no engine
     * answered badly.
     */
    private void failAttempt(Outcome outcome, String message) {
        closeUpstream();
        cancelPhase();
        stats().attempt(outcome); // before the decision moves on to the next attempt's engine
        if (outcome != Outcome.CONNECT_ERROR) {
            reachedAnEngine = true;
        }
        Decision next = gw.plane().retry(decision, outcome);
        gw.metrics.decision(next.reason());
        pending = null;
        pendingBody.setLength(0);
        if (failures == null) {
            failures = new StringBuilder(message);
        } else {
            failures.append("; then ").append(message);
        }
        if (next.routed()) {
            if (outcome == Outcome.CONNECT_ERROR) {
                gw.metrics.requeue(); // no engine saw it: the data plane spent no retry token
            } else {
                gw.metrics.retry();
            }
            decision = next;
            newAttempt();
            send();
            return;
        }
        refusedRetry = next;
        gw.metrics.notRetried(NotRetried.of(next.refusal()));
        String why = next.message().startsWith("not retried") ? next.message() : "not retried: " + next.message();
        String all = failures + "; " + why;
        if (outcome == Outcome.TIMEOUT) {
            respondError(HttpResponseStatus.GATEWAY_TIMEOUT, "timeout", all, null);
            return;
        }
        long ra = next.retryAfterNanos();
        gw.logFailure(all);
        if (outcome == Outcome.ENGINE_BUSY || outcome == Outcome.SYSTEM_OVERLOADED) {
            // the last engine said it is too busy (429, or 503 meaning the same): so does the gateway, with the
            // engine's status and its Retry-After (or 1 s), rather than a 502 that tells the client nothing of load;
            // pendingStatus and pendingRetryAfter are that engine's, set with the outcome from its answer
            HttpResponseStatus busy = HttpResponseStatus.valueOf(pendingStatus);
            Duration after = pendingRetryAfter != null ? pendingRetryAfter : Duration.ofSeconds(1);
            respondBusy(busy, all, ra > 0 && Duration.ofNanos(ra).compareTo(after) > 0 ? Duration.ofNanos(ra) : after);
            return;
        }
        HttpResponseStatus st = HttpResponseStatus.valueOf(next.refusal().status());
        if (!reachedAnEngine && (next.refusal() == Refusal.ATTEMPTS_EXHAUSTED || next.refusal() == Refusal.NO_ENGINE_LEFT)) {
            st = HttpResponseStatus.SERVICE_UNAVAILABLE;
            all = "no engine allowed to serve this request could be reached: " + all;
        }
        respondError(st, next.refusal().code(), all, ra > 0 ? Duration.ofNanos(ra) : null);
    }

    /** Forgets what the failed attempt's engine answered: the next attempt's answer is read afresh. */
    private void newAttempt() {
        written = false;
        heldHead = null;
        sse = false;
        sseTail = null;
        sseTailLength = 0;
        closeDelimited = false;
        responseKeepAlive = false;
        status = 0;
        endOutcome = Outcome.SUCCESS;
    }

    /**
     * A failure, before anything reached the client, of an attempt whose engine may have generated the request, or
     * may still be generating it: never retried, so that no request is generated twice. Its connection is closed,
     * which stops the engine's work on it (vLLM aborts a request whose connection closes).
     */
    private void giveUp(Outcome outcome, String message, NotRetried why) {
        closeUpstream();
        cancelPhase();
        stats().attempt(outcome);
        reachedAnEngine = true;
        gw.plane().onFinish(decision, outcome, -1);
        gw.metrics.notRetried(why);
        String all = (failures == null ? "" : failures + "; then ") + message + "; not retried: "
                + (why == NotRetried.TIMEOUT ? "the engine may still be generating it (its connection is closed to stop it)"
                : why == NotRetried.ENGINE_ERROR ? "the engine took the request and may have generated it before failing"
                : "the engine had the whole request and may have generated it");
        if (outcome == Outcome.TIMEOUT) {
            respondError(HttpResponseStatus.GATEWAY_TIMEOUT, "timeout", all, null);
            return;
        }
        gw.logFailure(all);
        respondError(HttpResponseStatus.BAD_GATEWAY, "upstream_error", all, null);
    }

    /** A failure after the response started: an SSE error event and a clean end, or a closed connection. */
    private void failMidResponse(Outcome outcome, String message, NotRetried why) {
        closeUpstream();
        gw.metrics.notRetried(why);
        stats().attempt(outcome);
        end(outcome, status, message);
        if (sse) {
            endWithErrorEvent(message, outcome == Outcome.TIMEOUT ? "timeout" : "upstream_error");
        } else {
            ctx.channel().close();
        }
    }

    private void respondError(HttpResponseStatus st, String code, String message, Duration retryAfter) {
        respond(Http.error(st, st.code() >= 500 ? "server_error" : "invalid_request_error", code, message, retryAfter),
                message);
    }

    /**
     * An engine's {@code Retry-After} in delay-seconds (RFC 9110 §10.2.3), at least 1 s and at most a day; null when
     * absent or not a plain number (an HTTP date is rare from an engine, and a client then gets the gateway's 1 s).
     */
    static Duration retryAfterSeconds(String value) {
        if (value == null) {
            return null;
        }
        String v = value.trim();
        if (v.isEmpty() || v.length() > 9 || !v.chars().allMatch(ch -> ch >= '0' && ch <= '9')) {
            return null;
        }
        return Duration.ofSeconds(Math.max(1, Math.min(86_400, Long.parseLong(v))));
    }

    /** Every engine tried was too busy: the client is told so, as admission tells it of a shed request. */
    private void respondBusy(HttpResponseStatus st, String message, Duration retryAfter) {
        FullHttpResponse r = Http.error(st, st.code() == 429 ? "rate_limit_error" : "server_error", "overloaded", message,
                retryAfter);
        r.headers().set("x-sextant-overloaded", "true");
        respond(r, message);
    }

    private void respond(FullHttpResponse r, String message) {
        HttpResponseStatus st = r.status();
        r.headers().set("x-sextant-attempts", Integer.toString(Math.max(1, decision.attempt())));
        r.headers().set("x-sextant-snapshot-version", Long.toString(decision.snapshotVersion()));
        r.headers().set(DecisionReasons.HEADER, reason());
        r.headers().set("x-request-id", requestId);
        boolean keep = keep();
        HttpUtil.setKeepAlive(r, keep);
        end(null, st.code(), message);
        ctx.writeAndFlush(r).addListener((ChannelFutureListener) f -> front.exchangeWritten(ctx, keep && f.isSuccess()));
    }

    /** Why the last decision: the refused retry's when one ended the request, else the attempt's that answered. */
    private String reason() {
        return (refusedRetry != null ? refusedRetry : decision).reason();
    }

    /** Whether the client connection stays open after this answer. */
    private boolean keep() {
        return keepAlive && !closeDelimited && !gw.draining();
    }

    /** The client went away: cancel the engine request. */
    void cancel() {
        if (ended) {
            return;
        }
        closeUpstream();
        end(Outcome.CANCELLED, 499, "client closed the connection");
    }

    private void end(Outcome outcome, int finalStatus, String error) {
        ended = true;
        cancelPhase();
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
        long now = System.nanoTime();
        if (outcome != null) {
            gw.plane().onFinish(decision, outcome, ttftNanos());
            // the failures were counted where they were decided; a complete answer and a cancel end here
            if (outcome == Outcome.SUCCESS || outcome == Outcome.CLIENT_ERROR) {
                if (outcome == Outcome.SUCCESS) {
                    gw.reporter.ended(conversationKey, now);
                }
                stats().attempt(outcome);
                if (attemptNanos >= 0) {
                    stats().e2e.add(now - attemptNanos);
                }
            } else if (outcome == Outcome.CANCELLED) {
                // a client gone before the first token whose wait the data plane blamed on the engine saw it time out:
                // so the control plane hears it, or a hung engine whose clients give up before the gateway's timeouts
                // looks idle to it
                stats().attempt(decision.stalled() && firstChunkNanos < 0 ? Outcome.TIMEOUT : outcome);
            }
        }
        gw.metrics.request(decision.classId(), decision.engineId(), finalStatus);
        gw.metrics.latency(decision.engineId(), now - startNanos);
        gw.accessLog(ctx.channel(), request.method().name(), path, finalStatus, decision.classId(), decision.engineId(),
                decision.attempt(), reason(), stream ? ttftNanos() : -1,
                now - startNanos, bytes, sse, requestId, error);
        request.release();
        if (tenant != null) {
            gw.tenancy.limits.release(tenant);
        }
        front.exchangeEnded(this);
    }

    /** The attempt's time to first token for {@link DataPlane#onFinish}: none for an answer that is not streamed. */
    private long ttftNanos() {
        return !stream ? DataPlane.NOT_STREAMED : firstChunkNanos < 0 ? DataPlane.NO_TOKEN_YET
                : firstChunkNanos - startNanos;
    }

    private Channel detachUpstream() {
        Channel c = upstream;
        upstream = null;
        if (c != null) {
            c.pipeline().get(UpstreamHandler.class).owner = null;
        }
        return c;
    }

    /** The upstream connection, its response read to the end: back to the pool if it may carry another, else closed. */
    private void releaseUpstream() {
        Channel up = detachUpstream();
        if (responseKeepAlive) {
            gw.pool.release(decision.endpoint(), up);
        } else {
            up.close();
        }
    }

    private void closeUpstream() {
        Channel c = detachUpstream();
        if (c != null) {
            c.close();
        }
    }

    private void armPhase(Duration d) {
        phaseChannel = upstream;
        phaseDeadline = System.nanoTime() + d.toNanos();
        ensureTimer();
    }

    private void cancelPhase() {
        phaseDeadline = Long.MAX_VALUE;
        phaseChannel = null;
    }

    /** Asks the data plane again {@code in} ns after {@code now}, or never when {@code in} is negative. */
    private void watchFirstToken(long in, long now) {
        watchDeadline = in < 0 ? Long.MAX_VALUE : now + in;
        ensureTimer();
    }

    private void ensureTimer() {
        long at = Math.min(Math.min(phaseDeadline, totalDeadline), watchDeadline);
        if (timer != null && timerAt <= at) {
            return; // fires earlier and re-schedules itself then
        }
        if (timer != null) {
            timer.cancel(false);
        }
        timerAt = at;
        timer = loop.schedule(this::onTimer, Math.max(0, at - System.nanoTime()), TimeUnit.NANOSECONDS);
    }

    private void onTimer() {
        timer = null;
        if (ended) {
            return;
        }
        long now = System.nanoTime();
        if (now >= totalDeadline) {
            onTotalTimeout();
        } else if (now >= phaseDeadline) {
            onPhaseTimeout(phaseChannel);
        } else if (now >= watchDeadline) {
            watchFirstToken(gw.plane().awaitingFirstToken(decision), now);
        } else {
            ensureTimer();
        }
    }

    private static String seconds(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
    }

    private static String abbreviate(String s) {
        String t = s.strip();
        return t.length() > 300 ? t.substring(0, 300) + "…" : t;
    }
}
