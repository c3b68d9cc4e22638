package dev.sextant.server.internal;

import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;

/**
 * Decides on a request's head, before any of its body is read: whether this client may send it at all (a missing or
 * wrong token gets its 401 while the client is still sending), and whether its body fits in what the listener may
 * hold of bodies being received ({@link Budget}). A refused request is answered at once and its connection closed;
 * nothing of its body is buffered, and no more of it is read. Sits after the {@link RequestGuard} and before the body
 * aggregator, one per connection.
 *
 * <p>A listener whose handler answers pipelined requests in order (the gateway's) makes it with {@link #inTurn}: a
 * request whose body does not fit is not answered here but passed on, bodiless, with a decoder failure of
 * {@link BodyBudgetExceeded}, for the handler to answer in its turn (after any earlier answer still being written);
 * what follows of it is dropped, and the handler closes the connection after its answer.
 *
 * <p>Why on the head: a server that aggregates the body first and checks the token after lets a client without one
 * fill its direct memory; 400 unauthenticated 1 MB reports used to stall the control plane's event loops (waiting for
 * direct memory) for about 25 s, its health check and authorised polls with them.
 */
public final class HeadCheck extends ChannelInboundHandlerAdapter {
    private final Function<HttpRequest, FullHttpResponse> refusal;
    private final Budget budget;
    private final long maxBodyBytes;
    /** Refusals of a body are passed on for the handler to answer in turn, not answered here. */
    private final boolean inTurn;
    /** A request was refused: drop everything that still arrives until the connection is closed. */
    private boolean refused;
    /** A body of unknown length (chunked) being counted as it arrives. */
    private boolean counting;
    /** Bytes of the current body counted against the budget. */
    private long reserved;

    /**
     * @param refusal      the answer to a request that may not be sent (e.g. 401), or null when it may; called on the
     *                     event loop with the head only, so it must be quick
     * @param budget       the listener's body budget, shared by its connections
     * @param maxBodyBytes the largest body the aggregator after this takes (a larger one is its 413, never counted)
     */
    public HeadCheck(Function<HttpRequest, FullHttpResponse> refusal, Budget budget, long maxBodyBytes) {
        this(refusal, budget, maxBodyBytes, false);
    }

    private HeadCheck(Function<HttpRequest, FullHttpResponse> refusal, Budget budget, long maxBodyBytes,
                      boolean inTurn) {
        this.refusal = refusal;
        this.budget = budget;
        this.maxBodyBytes = maxBodyBytes;
        this.inTurn = inTurn;
    }

    /**
     * For a listener that takes requests without a token and answers them in order: only the body budget is checked,
     * and a request whose body does not fit reaches the handler as a bodiless request whose decoder result is a
     * {@link BodyBudgetExceeded} failure (the answer is the handler's: {@link Budget#refusal()}'s 503).
     */
    public static HeadCheck inTurn(Budget budget, long maxBodyBytes) {
        return new HeadCheck(head -> null, budget, maxBodyBytes, true);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (refused) {
            ReferenceCountUtil.release(msg);
            return;
        }
        FullHttpResponse no = null;
        if (msg instanceof HttpRequest head) {
            if (head.decoderResult().isSuccess()) {
                no = refusal.apply(head);
                if (no == null) {
                    no = reserve(head);
                }
            }
        } else if (counting && msg instanceof HttpContent c && c.content().isReadable()) {
            no = count(c.content().readableBytes());
        }
        if (no != null) {
            refuse(ctx, msg, no);
            return;
        }
        ctx.fireChannelRead(msg);
        if (msg instanceof LastHttpContent) {
            counting = false;
            release(); // aggregated and handed on: the handler has it now (or answered already)
        }
    }

    /** Counts the body the head announces against the budget; its refusal when it does not fit. */
    private FullHttpResponse reserve(HttpRequest head) {
        long length = HttpUtil.getContentLength(head, -1L);
        counting = length < 0 && HttpUtil.isTransferEncodingChunked(head);
        if (length <= 0 || length > maxBodyBytes) {
            return null; // none, one counted as it arrives, or one the aggregator refuses with 413 without keeping it
        }
        return count(length);
    }

    private FullHttpResponse count(long bytes) {
        if (reserved + bytes > maxBodyBytes) { // the aggregator's 413 and drain follow: nothing more is kept
            counting = false;
            release();
            return null;
        }
        if (!budget.take(bytes)) {
            return budget.refusal();
        }
        reserved += bytes;
        return null;
    }

    private void refuse(ChannelHandlerContext ctx, Object msg, FullHttpResponse answer) {
        refused = true;
        counting = false;
        release();
        if (inTurn && answer.status().code() == HttpResponseStatus.SERVICE_UNAVAILABLE.code()) {
            answer.release();
            passOnRefused(ctx, msg);
            return;
        }
        ReferenceCountUtil.release(msg);
        HttpUtil.setKeepAlive(answer, false);
        ctx.writeAndFlush(answer).addListener(ChannelFutureListener.CLOSE);
    }

    /**
     * Passes the refused request on, failed, in place of its body: its head (when the head was refused) or the end of
     * its body (when a chunked body stopped fitting), which ends the aggregation with the failure.
     */
    private void passOnRefused(ChannelHandlerContext ctx, Object msg) {
        DecoderResult failed = DecoderResult.failure(new BodyBudgetExceeded(budget.max));
        if (msg instanceof HttpRequest head) {
            ReferenceCountUtil.release(msg); // a head holds no buffer, but a FullHttpRequest could
            DefaultHttpRequest bodiless = new DefaultHttpRequest(head.protocolVersion(), head.method(), head.uri(),
                    head.headers().copy().remove(HttpHeaderNames.EXPECT)); // no 100 Continue for a refused body
            bodiless.setDecoderResult(failed);
            ctx.fireChannelRead(bodiless);
        } else {
            ReferenceCountUtil.release(msg);
            LastHttpContent end = new DefaultLastHttpContent();
            end.setDecoderResult(failed);
            ctx.fireChannelRead(end);
        }
    }

    private void release() {
        if (reserved > 0) {
            budget.give(reserved);
            reserved = 0;
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        release();
        ctx.fireChannelInactive();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        release();
    }

    /** Why a request was refused before its body was read: the listener held as many bodies as it may. */
    public static final class BodyBudgetExceeded extends RuntimeException {
        private static final long serialVersionUID = 1L;

        BodyBudgetExceeded(long max) {
            super(message(max), null, false, false); // no stack: a refusal, not a fault
        }

        static String message(long max) {
            return "the server holds as many request bodies as it may (max_buffered_body_bytes: " + max
                    + "); try again";
        }
    }

    /**
     * What one listener may hold of request bodies being received, over all its connections
     * ({@link ListenerLimits#maxBufferedBodyBytes()}), and the requests refused for it.
     */
    public static final class Budget {
        private final long max;
        private final AtomicLong used = new AtomicLong();
        private final LongAdder refusals = new LongAdder();

        /** @param max bytes, ≥ 1 */
        public Budget(long max) {
            if (max < 1) {
                throw new IllegalArgumentException("max_buffered_body_bytes: " + max + " (expected: >= 1)");
            }
            this.max = max;
        }

        boolean take(long bytes) {
            for (;;) {
                long now = used.get();
                if (now + bytes > max) {
                    refusals.increment();
                    return false;
                }
                if (used.compareAndSet(now, now + bytes)) {
                    return true;
                }
            }
        }

        void give(long bytes) {
            used.addAndGet(-bytes);
        }

        /** The 503 of a request whose body does not fit, with {@code Retry-After: 1}. */
        public FullHttpResponse refusal() {
            FullHttpResponse r = Http.error(HttpResponseStatus.SERVICE_UNAVAILABLE, "server_error", "overloaded",
                    BodyBudgetExceeded.message(max), null);
            r.headers().set("retry-after", "1");
            return r;
        }

        /** Body bytes held now. */
        public long used() {
            return used.get();
        }

        /** Requests refused since start because their body did not fit. */
        public long refusals() {
            return refusals.sum();
        }
    }
}
