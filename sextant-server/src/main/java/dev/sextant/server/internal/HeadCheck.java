package dev.sextant.server.internal;

import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpResponse;
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
 * <p>Why on the head: a server that aggregates the body first and checks the token after lets a client without one
 * fill its direct memory; 400 unauthenticated 1 MB reports used to stall the control plane's event loops (waiting for
 * direct memory) for about 25 s, its health check and authorised polls with them.
 */
public final class HeadCheck extends ChannelInboundHandlerAdapter {
    private final Function<HttpRequest, FullHttpResponse> refusal;
    private final Budget budget;
    private final long maxBodyBytes;
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
        this.refusal = refusal;
        this.budget = budget;
        this.maxBodyBytes = maxBodyBytes;
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
        ReferenceCountUtil.release(msg);
        refused = true;
        counting = false;
        release();
        HttpUtil.setKeepAlive(answer, false);
        ctx.writeAndFlush(answer).addListener(ChannelFutureListener.CLOSE);
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

        FullHttpResponse refusal() {
            FullHttpResponse r = Http.error(HttpResponseStatus.SERVICE_UNAVAILABLE, "server_error", "overloaded",
                    "the server holds as many request bodies as it may (max_buffered_body_bytes: " + max
                            + "); try again", null);
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
