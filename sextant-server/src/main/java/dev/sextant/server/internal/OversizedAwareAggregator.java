package dev.sextant.server.internal;

import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import java.util.concurrent.atomic.LongAdder;

/**
 * An {@link HttpObjectAggregator} that answers a body over the limit with 413 in OpenAI's error shape and closes
 * the connection (the rest of the body would otherwise have to be read and thrown away).
 */
public final class OversizedAwareAggregator extends HttpObjectAggregator {
    private final int maxBytes;
    private final LongAdder refused;

    /**
     * @param maxBytes largest accepted body, bytes &gt; 0
     * @param refused  counts the refused requests
     */
    public OversizedAwareAggregator(int maxBytes, LongAdder refused) {
        super(maxBytes);
        this.maxBytes = maxBytes;
        this.refused = refused;
    }

    @Override
    protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
        refused.increment();
        FullHttpResponse r = Http.error(HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, "invalid_request_error",
                "request_too_large", "request body exceeds the limit of " + maxBytes + " bytes", null);
        HttpUtil.setKeepAlive(r, false);
        ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
    }
}
