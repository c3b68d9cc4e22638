package dev.sextant.server.gateway;

import dev.sextant.server.internal.RequestGuard;
import dev.sextant.server.internal.ClientLimits;
import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * When {@link RequestGuard} asks the socket for reads on an HTTP/1.1 connection: once a request was read, it keeps
 * the read interest on while that request is answered (so no system call switches it off and on again per request),
 * without starting the idle connection's head clock, and only for the one request owed.
 */
class RequestGuardReadsTest {
    private static final Duration HEAD = Duration.ofMillis(100);
    private static final String REQUEST =
            "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Length: 2\r\n\r\n{}";

    private final ReadCounter reads = new ReadCounter();
    private EmbeddedChannel ch;

    @BeforeEach
    void open() {
        RequestGuard guard = new RequestGuard(new ClientLimits(HEAD, Duration.ofSeconds(60), 8192),
                Duration.ofSeconds(60));
        ch = new EmbeddedChannel();
        ch.freezeTime(); // the guard's clock is the loop's: only the test moves it
        ch.config().setAutoRead(false);
        ch.pipeline().addLast(reads, guard.bytesIn(), new HttpServerCodec(), guard, new Unanswered());
        ch.read(); // what the front handler does when the connection opens: ready for a request
    }

    @AfterEach
    void close() {
        ch.finishAndReleaseAll();
    }

    @Test
    void aRequestRead_keepsTheSocketReadable_whileItIsAnswered() {
        int before = reads.count;
        ch.writeInbound(Unpooled.copiedBuffer(REQUEST, StandardCharsets.US_ASCII));
        assertThat(reads.count).as("a read is asked for as soon as the request is whole, not after its answer")
                .isEqualTo(before + 1);
    }

    @Test
    void whileARequestIsAnswered_theIdleConnectionsHeadClockDoesNotRun() throws InterruptedException {
        ch.writeInbound(Unpooled.copiedBuffer(REQUEST, StandardCharsets.US_ASCII));
        pastTheHeadTimeout();
        assertThat(ch.isActive()).as("an answer taking longer than request_header_timeout keeps its connection")
                .isTrue();
    }

    @Test
    void aPipelinedRequest_isReadButReadingThenStops_untilTheFirstIsAnswered() {
        ch.writeInbound(Unpooled.copiedBuffer(REQUEST, StandardCharsets.US_ASCII));
        int afterFirst = reads.count;
        ch.writeInbound(Unpooled.copiedBuffer(REQUEST, StandardCharsets.US_ASCII));
        assertThat(reads.count).as("two requests owed: nothing more is read ahead").isEqualTo(afterFirst);
    }

    @Test
    void beforeAnyRequest_theHeadClockRuns() throws InterruptedException {
        pastTheHeadTimeout();
        assertThat(ch.isActive()).as("an idle connection is closed past request_header_timeout").isFalse();
    }

    /** Moves the loop's clock past the head timeout and runs the timers that are due. */
    private void pastTheHeadTimeout() {
        ch.advanceTimeBy(HEAD.toNanos() * 3, java.util.concurrent.TimeUnit.NANOSECONDS);
        ch.runScheduledPendingTasks();
    }

    /** Counts the reads that reach the socket. */
    private static final class ReadCounter extends ChannelOutboundHandlerAdapter {
        int count;

        @Override
        public void read(ChannelHandlerContext ctx) {
            count++;
            ctx.read();
        }
    }

    /** Takes every request and answers none, as while an exchange is under way. */
    private static final class Unanswered extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            assertThat(msg).isInstanceOf(HttpObject.class);
            ReferenceCountUtil.release(msg);
        }
    }
}
