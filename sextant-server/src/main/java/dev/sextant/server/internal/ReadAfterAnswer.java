package dev.sextant.server.internal;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.codec.http.LastHttpContent;

/**
 * Reads a connection one request at a time for a handler that answers whole responses and never asks for reads
 * itself (auto-read off): the first read when the connection opens, the next once an answer was written. Placed after
 * the {@link RequestGuard}, so that each of those reads starts the guard's head clock: what the next request's head
 * may take is timed from when the server is ready for it.
 */
public final class ReadAfterAnswer extends ChannelDuplexHandler {
    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        ctx.fireChannelActive();
        ctx.read();
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof LastHttpContent
                && !(msg instanceof HttpResponse r && r.status().codeClass() == HttpStatusClass.INFORMATIONAL)) {
            ChannelPromise p = promise.unvoid();
            p.addListener(f -> {
                if (f.isSuccess() && ctx.channel().isActive()) {
                    ctx.read();
                }
            });
            ctx.write(msg, p);
            return;
        }
        ctx.write(msg, promise);
    }
}
