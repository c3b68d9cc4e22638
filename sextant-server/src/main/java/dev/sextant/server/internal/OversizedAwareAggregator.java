package dev.sextant.server.internal;

import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.util.concurrent.atomic.LongAdder;

/**
 * An {@link HttpObjectAggregator} that answers a body over the limit with 413 in OpenAI's error shape, then reads
 * and drops the rest of that body (up to a bound) before it closes the connection.
 *
 * <p>Why drain: closing a socket with unread bytes in its receive buffer makes the kernel send a reset, and a client
 * still sending its body would then see "connection reset" instead of the 413 it was sent. So the 413 goes out at
 * once, the remaining body is read and released as it arrives (never buffered), and the connection closes when the
 * body ended, or when {@code maxDrainBytes} were dropped (a client that keeps sending past that gets the reset), or
 * when the request body timeout of the gateway's guard ends the wait.
 */
public final class OversizedAwareAggregator extends HttpObjectAggregator {
    private final int maxBytes;
    private final long maxDrainBytes;
    private final LongAdder refused;
    private boolean draining;
    private long drained;
    private ChannelFuture answer;

    /**
     * Drains up to {@code max(maxBytes, 1 MiB)} bytes after a 413.
     *
     * @param maxBytes largest accepted body, bytes &gt; 0
     * @param refused  counts the refused requests
     */
    public OversizedAwareAggregator(int maxBytes, LongAdder refused) {
        this(maxBytes, Math.max(maxBytes, 1L << 20), refused);
    }

    /**
     * @param maxBytes      largest accepted body, bytes &gt; 0
     * @param maxDrainBytes most body bytes read and dropped after a 413 before the connection is closed anyway, ≥ 0
     * @param refused       counts the refused requests
     */
    public OversizedAwareAggregator(int maxBytes, long maxDrainBytes, LongAdder refused) {
        super(maxBytes);
        if (maxDrainBytes < 0) {
            throw new IllegalArgumentException("maxDrainBytes: " + maxDrainBytes + " (expected: >= 0)");
        }
        this.maxBytes = maxBytes;
        this.maxDrainBytes = maxDrainBytes;
        this.refused = refused;
    }

    @Override
    protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
        refused.increment();
        FullHttpResponse r = Http.error(HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, "invalid_request_error",
                "request_too_large", "request body exceeds the limit of " + maxBytes + " bytes", null);
        HttpUtil.setKeepAlive(r, false);
        draining = true; // channelRead ends the drain at once when the message that went over was the last part
        drained = 0;
        answer = ctx.writeAndFlush(r);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
        if (!draining) {
            super.channelRead(ctx, msg);
            if (draining && msg instanceof LastHttpContent) {
                finishDrain(ctx); // the chunk that went over the limit was the last one
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
            finishDrain(ctx);
        }
    }

    private void finishDrain(ChannelHandlerContext ctx) {
        draining = false;
        answer.addListener(ChannelFutureListener.CLOSE); // once the 413 is written
        answer = null;
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) throws Exception {
        if (draining && !ctx.channel().config().isAutoRead()) {
            ctx.read(); // keep reading the body to drop it
        }
        super.channelReadComplete(ctx);
    }
}
