package dev.sextant.server.gateway;

import dev.sextant.server.tenants.PresentedKey;
import dev.sextant.server.tenants.Tenant;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A closed gateway's key check on the request head ({@code docs/tenants.md}): a model request whose
 * {@code Authorization} and {@code api-key} present no tenant's key, or different keys ({@code PresentedKey}), is
 * answered 401 as soon as its head has arrived, before any byte of its body is buffered, and its connection is closed.
 * Limits that need the body (tokens per minute, from {@code max_tokens}) are checked by the {@link FrontHandler} once
 * it has arrived, with the tenant found here ({@link #tenantOf}). Sits after the {@code RequestGuard} and before the
 * body aggregator, one per HTTP/1.1 connection or HTTP/2 stream.
 *
 * <p>How the connection ends after a 401 is Envoy's {@code delayed_close_timeout} and nginx's lingering close: on
 * HTTP/1.1 the rest of the body is read and dropped (never held) until it ends, {@value #LINGER_BYTES} bytes were
 * dropped or {@value #LINGER_MILLIS} ms passed, whichever comes first, then the connection closes. Closing at once
 * would make the kernel answer the client's next bytes with a reset, which many clients report instead of the 401
 * they have not read yet; lingering without a bound would let a stranger keep a connection busy. On HTTP/2 the stream
 * is reset after its 401; the connection serves on.
 */
final class KeyCheck extends ChannelInboundHandlerAdapter {
    /** Most body bytes read and dropped after a 401 before the connection is closed anyway. */
    static final long LINGER_BYTES = 1L << 20;
    /** Longest wait, after a 401, for the body to end before the connection is closed anyway, ms. */
    static final long LINGER_MILLIS = 1000;

    private final Gateway gw;
    /** The headers of the last head let through, and its tenant: what {@link #tenantOf} gives for that request. */
    private HttpHeaders checked;
    private Tenant tenant;
    /** A 401 was sent: everything that still arrives is dropped until the connection closes. */
    private boolean refused;
    private boolean bodyEnded;
    private boolean answerWritten;
    private long dropped;
    private ScheduledFuture<?> lingerTimer;

    KeyCheck(Gateway gw) {
        this.gw = gw;
    }

    /**
     * The tenant of a whole request that came through this handler, found on its head (the aggregated request shares
     * its head's headers); looked up again for any other request. Null when its key is no tenant's.
     */
    Tenant tenantOf(HttpRequest req) {
        if (req.headers() == checked) {
            return tenant;
        }
        return gw.tenancy.find(PresentedKey.of(req.headers()));
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (refused) {
            drop(ctx, msg);
            return;
        }
        if (msg instanceof HttpRequest head && needsKey(head)) {
            PresentedKey key = PresentedKey.of(head.headers());
            Tenant t = gw.tenancy.find(key);
            if (t == null) {
                refuse(ctx, head, key.ambiguous());
                drop(ctx, msg);
                return;
            }
            checked = head.headers();
            tenant = t;
        }
        ctx.fireChannelRead(msg);
    }

    /** A model request (the requests the tenants' keys guard) on a closed gateway, whose head was read whole. */
    private boolean needsKey(HttpRequest head) {
        return gw.tenancy.closed() && head.decoderResult().isSuccess() && head.method() == HttpMethod.POST
                && FrontHandler.proxied(new QueryStringDecoder(FrontHandler.originForm(head.uri())).rawPath());
    }

    private void refuse(ChannelHandlerContext ctx, HttpRequest head, boolean ambiguous) {
        refused = true;
        String path = new QueryStringDecoder(FrontHandler.originForm(head.uri())).rawPath();
        FullHttpResponse r = FrontHandler.unauthorized(gw, ctx.channel(), path,
                FrontHandler.requestId(gw, head.headers().get("x-request-id")), ambiguous);
        HttpUtil.setKeepAlive(r, false);
        boolean stream = ctx.channel() instanceof Http2StreamChannel;
        ctx.writeAndFlush(r).addListener((ChannelFutureListener) f -> {
            answerWritten = true;
            if (!f.isSuccess() || stream || bodyEnded) {
                ctx.close();
            } else {
                lingerTimer = ctx.executor().schedule(() -> {
                    ctx.close();
                }, LINGER_MILLIS, TimeUnit.MILLISECONDS);
            }
        });
    }

    /** Drops what arrives after a 401; closes once the body ended, or the bound was reached, after the answer. */
    private void drop(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof HttpContent c) {
            dropped += c.content().readableBytes();
        }
        bodyEnded |= msg instanceof LastHttpContent;
        ReferenceCountUtil.release(msg);
        if (dropped > LINGER_BYTES || bodyEnded && answerWritten) {
            ctx.close();
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        if (refused && !bodyEnded && !ctx.channel().config().isAutoRead()) {
            ctx.read(); // read on, to drop the body
        }
        ctx.fireChannelReadComplete();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (lingerTimer != null) {
            lingerTimer.cancel(false);
        }
        ctx.fireChannelInactive();
    }
}
