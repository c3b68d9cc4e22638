package dev.sextant.server.gateway;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;

/** The engine side of a proxied request: hands what the engine sends to the exchange that owns the connection. */
final class UpstreamHandler extends ChannelInboundHandlerAdapter {
    /** The exchange using this connection, null while idle in the pool. Touched only on the channel's loop. */
    Exchange owner;
    /** When the connection went back to the pool ({@link System#nanoTime}). Touched only on the channel's loop. */
    long idleSince;
    /** Between an interim (1xx) answer's head and the end of its empty body. Touched only on the channel's loop. */
    private boolean informational;

    /**
     * Whether an engine's status {@code code} is an interim answer (100 Continue, 103 Early Hints: RFC 9110 §15.2),
     * after which the answer itself follows on the same request. Not 101: a switch of protocols ends HTTP on the
     * connection, and no request of the gateway's asks for one.
     */
    static boolean interim(int code) {
        return code >= 100 && code < 200 && code != 101;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        Exchange x = owner;
        if (x == null) {
            ReferenceCountUtil.release(msg); // bytes of no request: an idle connection must not receive any
            ctx.close();
            return;
        }
        if (msg instanceof HttpObject o && o.decoderResult().isFailure()) {
            // not HTTP: the codec gave up on this connection, and nothing it holds can be trusted or reused
            Throwable cause = o.decoderResult().cause();
            ReferenceCountUtil.release(msg);
            owner = null;
            ctx.close();
            x.onUpstreamClosed(ctx.channel(), new MalformedResponseException(cause));
            return;
        }
        if (msg instanceof HttpResponse r) {
            int code = r.status().code();
            if (code < 100 || code > 599 || code == 101) {
                // no HTTP status, or a switch of protocols no request asked for: nothing that follows is an answer
                ReferenceCountUtil.release(msg);
                owner = null;
                ctx.close();
                x.onUpstreamClosed(ctx.channel(), new MalformedResponseException(code == 101
                        ? "status 101 (expected: an answer; no request asks for a switch of protocols)"
                        : "status " + code + " (expected: 100 to 599)"));
                return;
            }
            if (interim(code)) {
                // skipped with its empty body, as no client of the gateway asked for it (the gateway sends engines
                // no Expect)
                informational = true;
            } else {
                x.onResponse(r);
            }
        }
        if (msg instanceof HttpContent c && informational) {
            informational = !(c instanceof LastHttpContent);
            c.release();
            ctx.read(); // the answer itself
        } else if (msg instanceof HttpContent c) {
            x.onContent(c); // takes ownership
        } else {
            ReferenceCountUtil.release(msg);
            if (informational) {
                ctx.read();
            }
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        Exchange x = owner;
        owner = null;
        if (x != null) {
            x.onUpstreamClosed(ctx.channel(), null);
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        Exchange x = owner;
        owner = null;
        ctx.close();
        if (x != null) {
            x.onUpstreamClosed(ctx.channel(), cause);
        }
    }

    /** The engine sent bytes that are not a valid HTTP response. */
    static final class MalformedResponseException extends Exception {
        MalformedResponseException(Throwable cause) {
            super("sent a malformed HTTP response (" + (cause == null ? "undecodable" : cause.getMessage()) + ")",
                    cause, false, false);
        }

        MalformedResponseException(String why) {
            super("sent a malformed HTTP response (" + why + ")", null, false, false);
        }
    }
}
