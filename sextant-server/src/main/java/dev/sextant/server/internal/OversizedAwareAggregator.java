package dev.sextant.server.internal;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.TooLongHttpContentException;
import io.netty.util.ReferenceCountUtil;
import java.util.concurrent.atomic.LongAdder;

/**
 * An {@link HttpObjectAggregator} for a server whose handler answers requests in order: a body over the limit is
 * passed on as a bodiless request whose decoder result is a {@link TooLongHttpContentException} (the handler answers
 * it with 413 in its turn, after any earlier pipelined answer), and the rest of that body is read and dropped (up to
 * a bound) until the handler asks to close with {@link #closeAfterRefusal}.
 *
 * <p>Why drain: closing a socket with unread bytes in its receive buffer makes the kernel send a reset, and a client
 * still sending its body would then see "connection reset" instead of the 413. So the rest of the body is read and
 * released as it arrives (never buffered), and the connection closes once the 413 is written and the body ended,
 * or {@code maxDrainBytes} were dropped (a client that keeps sending past that gets the reset), or the request body
 * timeout of the gateway's guard ended the wait.
 */
public final class OversizedAwareAggregator extends HttpObjectAggregator {
    private final int maxBytes;
    private final long maxDrainBytes;
    private final LongAdder refused;
    private boolean draining;
    private boolean closeWhenDrained;
    private long drained;

    /**
     * Drains up to {@code max(maxBytes, 1 MiB)} bytes after a refused body.
     *
     * @param maxBytes largest accepted body, bytes &gt; 0
     * @param refused  counts the refused requests
     */
    public OversizedAwareAggregator(int maxBytes, LongAdder refused) {
        this(maxBytes, Math.max(maxBytes, 1L << 20), refused);
    }

    /**
     * @param maxBytes      largest accepted body, bytes &gt; 0
     * @param maxDrainBytes most body bytes read and dropped after a refusal before the connection is closed anyway, ≥ 0
     * @param refused       counts the refused requests
     */
    public OversizedAwareAggregator(int maxBytes, long maxDrainBytes, LongAdder refused) {
        // closeOnExpectationFailed: after a 413 (or 417) to `Expect: 100-continue` the client may or may not send
        // the body it announced, so where the next request starts is unknown: close, as after any refused body
        super(maxBytes, true);
        if (maxDrainBytes < 0) {
            throw new IllegalArgumentException("maxDrainBytes: " + maxDrainBytes + " (expected: >= 0)");
        }
        this.maxBytes = maxBytes;
        this.maxDrainBytes = maxDrainBytes;
        this.refused = refused;
    }

    /** The 413 of a body over the limit, in OpenAI's error shape, closing the connection. */
    public static FullHttpResponse refusal(String message) {
        FullHttpResponse r = Http.error(HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, "invalid_request_error",
                "request_too_large", message, null);
        HttpUtil.setKeepAlive(r, false);
        return r;
    }

    /** The message of the refusal the handler receives; names the limit. */
    public static String message(int maxBytes) {
        return "request body exceeds the limit of " + maxBytes + " bytes";
    }

    /**
     * A request that announces a body over the limit and asks {@code Expect: 100-continue} is refused before its body
     * is sent, as Netty does, but with the gateway's 413 in OpenAI's error shape instead of Netty's bodiless one; the
     * connection closes after it.
     */
    @Override
    protected Object newContinueResponse(HttpMessage start, int maxContentLength, ChannelPipeline pipeline) {
        Object answer = super.newContinueResponse(start, maxContentLength, pipeline);
        if (answer instanceof HttpResponse r && r.status().code() == HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE.code()) {
            ReferenceCountUtil.release(answer);
            refused.increment();
            return refusal(message(maxBytes));
        }
        return answer;
    }

    @Override
    protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
        refused.increment();
        draining = true; // channelRead ends the drain at once when the message that went over was the last part
        drained = 0;
        closeWhenDrained = false;
        FullHttpRequest refusal;
        if (oversized instanceof HttpRequest r) {
            refusal = new DefaultFullHttpRequest(r.protocolVersion(), r.method(), r.uri(), Unpooled.EMPTY_BUFFER);
            refusal.headers().set(r.headers());
        } else {
            refusal = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/");
        }
        refusal.setDecoderResult(DecoderResult.failure(new TooLongHttpContentException(message(maxBytes))));
        ctx.fireChannelRead(refusal);
    }

    /**
     * Once the 413 to a refused body was written ({@code written}) or failed: closes the connection when the rest of
     * the body has been dropped (its end arrived or the bound was reached), or now when it was not written or the
     * connection has no such aggregator. Call on the channel's event loop, from the handler that answered.
     */
    public static void closeAfterRefusal(ChannelHandlerContext handlerCtx, boolean written) {
        OversizedAwareAggregator body = handlerCtx.pipeline().get(OversizedAwareAggregator.class);
        if (body != null && written) {
            body.closeWhenBodyDropped(handlerCtx);
        } else {
            handlerCtx.close();
        }
    }

    /** Closes the connection now, or when the refused body has been dropped. */
    private void closeWhenBodyDropped(ChannelHandlerContext handlerCtx) {
        if (draining) {
            closeWhenDrained = true;
        } else {
            handlerCtx.close();
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
        if (!draining) {
            super.channelRead(ctx, msg);
            if (draining && msg instanceof LastHttpContent) {
                endDrain(ctx); // the part that went over the limit was the last one
            }
            return;
        }
        boolean end = !(msg instanceof HttpContent) || msg instanceof LastHttpContent
                || ((HttpContent) msg).decoderResult().isFailure();
        if (msg instanceof HttpContent c) {
            drained += c.content().readableBytes();
        }
        ReferenceCountUtil.release(msg);
        if (end || drained > maxDrainBytes) {
            endDrain(ctx);
            if (!end) {
                ctx.close(); // past the bound: stop reading; the client may see a reset
            }
        }
    }

    private void endDrain(ChannelHandlerContext ctx) {
        draining = false;
        if (closeWhenDrained) {
            ctx.close();
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) throws Exception {
        if (draining && !ctx.channel().config().isAutoRead()) {
            ctx.read(); // keep reading the body to drop it
        }
        super.channelReadComplete(ctx);
    }
}
