package dev.sextant.server.internal;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Bounds what one client connection may hold: the time its request head and body take to arrive
 * ({@link ClientLimits}), and the time an answer may wait for a client that does not read it. Every listener has one
 * (gateway, control plane, engine emulator), and each reads only when its handler asks (auto-read off), so that the
 * head clock starts when the server is ready for the next request. Sits between the HTTP
 * codec and the body aggregator, so it sees where a request's head and body end; {@link #bytesIn()}, placed before
 * the codec, tells it whether any byte of a request arrived.
 *
 * <ul>
 *   <li>Head: timed from when the server is ready to read a request (the connection's first read, or the read after
 *   an answer was written). Past {@code request_header_timeout}: 408 and close when part of a request arrived,
 *   close without an answer when the keep-alive connection was idle.</li>
 *   <li>Body: timed from the end of the head. Past {@code request_body_timeout}: 408 and close; only close when the
 *   server is still answering an earlier request on this connection (an answer cannot be interleaved), or already
 *   answered this one (a 413 whose body is being drained).</li>
 *   <li>Unread answer: a write the client has not taken for {@code the unread-answer limit} (a reader that never reads; the
 *   engine side has stopped reading by then, so nothing piles up) closes the connection.</li>
 * </ul>
 *
 * <p>On an HTTP/2 connection each stream has its own guard, on the stream's channel: the head arrives whole with the
 * stream's HEADERS, so only the body and unread-answer limits bite there (408 or a reset of that stream, not of the
 * connection); the gateway's HTTP/2 connection handler guards the connection.
 *
 * <p>Runs on the channel's event loop; one timer per guard for the head and body deadlines, re-armed only when a
 * deadline moves earlier (the {@link Exchange} habit), and one for stalled writes, armed only while a write waits.
 */
public final class RequestGuard extends ChannelDuplexHandler {
    private static final Logger LOG = Logger.getLogger(RequestGuard.class.getName());

    private enum Phase { WAITING, BODY, HANDLING }

    private final long headNanos;
    private final long bodyNanos;
    private final long stallNanos;
    private final Duration headTimeout;
    private final Duration bodyTimeout;
    private ChannelHandlerContext ctx;
    private Phase phase = Phase.HANDLING; // the first read() starts the head clock
    private boolean bytesSeen;
    /** Requests whose head arrived and whose final answer has not been written yet. */
    private int owed;
    /** A read asked for while an answer was still owed: the head clock starts when that answer is written. */
    private boolean readWhileOwed;

    private long deadline = Long.MAX_VALUE;
    private ScheduledFuture<?> timer;
    private long timerAt;

    private int pendingWrites;
    private long lastWriteProgress;
    private ScheduledFuture<?> stallTimer;
    private final ChannelFutureListener writeDone = f -> {
        pendingWrites--;
        lastWriteProgress = now();
    };

    /** The context of {@link #bytesIn}, before the codec; null on an HTTP/2 stream, which has no such handler. */
    private ChannelHandlerContext bytesCtx;

    private final ChannelInboundHandlerAdapter bytesIn = new ChannelInboundHandlerAdapter() {
        @Override
        public void handlerAdded(ChannelHandlerContext c) {
            bytesCtx = c;
        }

        @Override
        public void channelRead(ChannelHandlerContext c, Object msg) {
            if (msg instanceof ByteBuf b && b.isReadable()) {
                bytesSeen = true;
            }
            c.fireChannelRead(msg);
        }
    };

    /**
     * @param limits       head and body timeouts
     * @param unreadAnswer how long a write may wait for the client to read, &gt; 0
     */
    public RequestGuard(ClientLimits limits, Duration unreadAnswer) {
        this.headTimeout = limits.requestHeaderTimeout();
        this.bodyTimeout = limits.requestBodyTimeout();
        this.headNanos = headTimeout.toNanos();
        this.bodyNanos = bodyTimeout.toNanos();
        this.stallNanos = unreadAnswer.toNanos();
    }

    /** The handler to place before the HTTP codec; it only notes that bytes arrived. */
    public ChannelHandler bytesIn() {
        return bytesIn;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext c) {
        this.ctx = c;
    }

    @Override
    public void channelRead(ChannelHandlerContext c, Object msg) {
        if (msg instanceof HttpRequest r) {
            owed++;
            if (r.decoderResult().isFailure()) {
                endOfRequest(); // answered at once with an error, and the connection closed
            } else {
                phase = Phase.BODY;
                arm(now() + bodyNanos);
            }
        }
        boolean whole = false; // a request read whole, the one owed
        if (msg instanceof io.netty.handler.codec.http.HttpContent h
                && (h instanceof LastHttpContent || h.decoderResult().isFailure())) {
            whole = owed == 1 && h.decoderResult().isSuccess();
            endOfRequest();
        }
        c.fireChannelRead(msg);
        if (whole && bytesCtx != null && c.channel().isActive()) {
            keepReading();
        }
    }

    /**
     * Keeps the socket's read interest on while the request just read is answered, so that answering it and reading
     * the next one cost no {@code epoll_ctl} each (switching reads off after a request and on after its answer was
     * two system calls a request, about a tenth of the gateway's CPU on small requests). The read is asked for from
     * before the codec, past this guard, so it starts no head clock: that starts when the answer was written, as
     * before. Only when this is the one request owed: bytes that arrive meanwhile (a pipelined request) are read
     * and held as before, and reading then stops until the answer is written, so what one connection can make the
     * gateway hold stays one request ahead. A client that closes meanwhile is seen at once.
     */
    private void keepReading() {
        bytesCtx.read();
    }

    private void endOfRequest() {
        phase = Phase.HANDLING;
        bytesSeen = false;
        deadline = Long.MAX_VALUE;
    }

    /**
     * A read while nothing is owed means the server is ready for the next request: its head clock starts. A read while
     * an answer is still owed does not (the engine emulator keeps one pending as it generates, to see a client that goes
     * away): the clock starts when that answer is written. Started at the read, it closed every answer that took longer
     * than the head timeout to write, a non-streaming one before it was sent, a stream in the middle.
     */
    @Override
    public void read(ChannelHandlerContext c) {
        if (phase == Phase.HANDLING) {
            if (owed > 0) {
                readWhileOwed = true;
            } else {
                startHeadClock();
            }
        }
        c.read();
    }

    private void startHeadClock() {
        readWhileOwed = false;
        phase = Phase.WAITING;
        arm(now() + headNanos);
    }

    @Override
    public void write(ChannelHandlerContext c, Object msg, ChannelPromise promise) {
        if (msg instanceof LastHttpContent && !(msg instanceof HttpResponse r && r.status().codeClass()
                == io.netty.handler.codec.http.HttpStatusClass.INFORMATIONAL)) {
            owed = Math.max(0, owed - 1);
            if (owed == 0 && readWhileOwed && phase == Phase.HANDLING) {
                startHeadClock(); // the answer is out and a read is already pending: the server waits for a head
            }
        }
        if (!promise.isVoid()) {
            if (pendingWrites++ == 0) {
                lastWriteProgress = now();
                if (stallTimer == null) {
                    stallTimer = c.executor().schedule(this::onStallTimer, stallNanos, TimeUnit.NANOSECONDS);
                }
            }
            promise.addListener(writeDone);
        }
        c.write(msg, promise);
    }

    @Override
    public void channelInactive(ChannelHandlerContext c) {
        stopTimers();
        c.fireChannelInactive();
    }

    /** Removed when the connection turned to HTTP/2: its streams have guards of their own. */
    @Override
    public void handlerRemoved(ChannelHandlerContext c) {
        stopTimers();
    }

    private void stopTimers() {
        deadline = Long.MAX_VALUE;
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
        if (stallTimer != null) {
            stallTimer.cancel(false);
            stallTimer = null;
        }
    }

    private void arm(long at) {
        deadline = at;
        if (timer != null && timerAt <= at) {
            return; // fires earlier and re-arms itself then
        }
        if (timer != null) {
            timer.cancel(false);
        }
        timerAt = at;
        timer = ctx.executor().schedule(this::onTimer, Math.max(0, at - now()), TimeUnit.NANOSECONDS);
    }

    private void onTimer() {
        timer = null;
        if (deadline == Long.MAX_VALUE || !ctx.channel().isActive()) {
            return;
        }
        long now = now();
        if (now < deadline) {
            arm(deadline);
            return;
        }
        deadline = Long.MAX_VALUE;
        if (phase == Phase.WAITING) {
            if (bytesSeen && owed == 0) {
                timeout("request head not complete within " + seconds(headTimeout) + " (request_header_timeout)");
            } else {
                ctx.close(); // an idle keep-alive connection
            }
        } else if (phase == Phase.BODY) {
            if (owed == 1) {
                timeout("request body not complete within " + seconds(bodyTimeout) + " (request_body_timeout)");
            } else {
                ctx.close(); // answered already (413), or an earlier answer is still being written
            }
        }
    }

    /** The clock of the channel's event loop: the system's, or a test's that moves it. */
    private long now() {
        return ctx.executor().ticker().nanoTime();
    }

    private void timeout(String message) {
        LOG.log(Level.FINE, () -> ctx.channel() + ": " + message);
        FullHttpResponse r = Http.error(HttpResponseStatus.REQUEST_TIMEOUT, "invalid_request_error", "request_timeout",
                message, null);
        HttpUtil.setKeepAlive(r, false);
        ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
    }

    private void onStallTimer() {
        stallTimer = null;
        if (pendingWrites <= 0 || !ctx.channel().isActive()) {
            return;
        }
        long idle = now() - lastWriteProgress;
        if (idle >= stallNanos) {
            LOG.log(Level.FINE, () -> ctx.channel() + ": the client read nothing for " + seconds(Duration.ofNanos(stallNanos))
                    + " (the unread-answer limit); closing");
            if (ctx.channel() instanceof io.netty.handler.codec.http2.Http2StreamChannel) {
                // An HTTP/2 stream is reset explicitly: once the answer's end is queued (the exchange may have
                // ended it with an error event meanwhile), closing the stream channel sends no RST_STREAM, and the
                // queued end would never reach a client that reads nothing; the stream would stay open.
                ctx.writeAndFlush(new io.netty.handler.codec.http2.DefaultHttp2ResetFrame(
                        io.netty.handler.codec.http2.Http2Error.CANCEL));
            }
            ctx.close();
        } else {
            stallTimer = ctx.executor().schedule(this::onStallTimer, stallNanos - idle, TimeUnit.NANOSECONDS);
        }
    }

    private static String seconds(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
    }
}
