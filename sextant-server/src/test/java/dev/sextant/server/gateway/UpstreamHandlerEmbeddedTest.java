package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.internal.OversizedAwareAggregator;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link UpstreamHandler} on an {@link EmbeddedChannel} standing in for an engine connection: an exchange started by
 * {@link FrontHandler} (itself on an EmbeddedChannel) takes the connection from the pool, and what the engine sends
 * reaches the client in order, each chunk forwarded as is and released exactly once.
 */
class UpstreamHandlerEmbeddedTest {
    @RegisterExtension
    static final GatewayFixture GW = GatewayFixture.of(1, 1).watchingLeaks();



    @Test
    void engineResponse_isForwardedToTheClientInOrder_eachChunkReleasedExactlyOnce() throws Exception {
        // an idle "connection" to every engine, in the pool of this thread (the embedded channels' loop)
        Map<EmbeddedChannel, String> engines = new LinkedHashMap<>();
        GW.fleet().engines.values().forEach(e -> {
            EmbeddedChannel up = new EmbeddedChannel(new UpstreamHandler());
            engines.put(up, "http://127.0.0.1:" + e.port());
            GW.gateway().pool.release(engines.get(up), up);
        });
        EmbeddedChannel front = new EmbeddedChannel(new OversizedAwareAggregator(1 << 20, new LongAdder()),
                new FrontHandler(GW.gateway()));
        FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/v1/chat/completions",
                Unpooled.copiedBuffer(Fleet.chat(null, true, 3), StandardCharsets.UTF_8));
        HttpUtil.setContentLength(req, req.content().readableBytes());
        req.headers().set("x-request-id", "r-42");
        front.writeInbound(req);

        // exactly one engine connection got the request, with the client's body and id
        EmbeddedChannel engine = null;
        for (EmbeddedChannel up : engines.keySet()) {
            Object sent = up.readOutbound();
            if (sent != null) {
                assertThat(engine).as("one attempt only").isNull();
                engine = up;
                assertThat(sent).isInstanceOf(HttpRequest.class).isNotInstanceOf(HttpContent.class);
                HttpRequest forwarded = (HttpRequest) sent;
                assertThat(forwarded.uri()).isEqualTo("/v1/chat/completions");
                assertThat(forwarded.headers().get("x-request-id")).isEqualTo("r-42");
                // the body follows the head, in one part when small: a retained slice of the client's body, which the
                // exchange keeps for a retry; drop our reference
                LastHttpContent body = up.readOutbound();
                assertThat(body.content().toString(StandardCharsets.UTF_8)).isEqualTo(Fleet.chat(null, true, 3));
                assertThat(req.refCnt()).as("the client's body, still held by the exchange").isPositive();
                body.release();
            }
        }
        assertThat(engine).as("the exchange took a pooled connection").isNotNull();

        HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        head.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream");
        HttpUtil.setTransferEncodingChunked(head, true);
        List<HttpContent> chunks = List.of(
                new DefaultHttpContent(Unpooled.copiedBuffer("data: one\n\n", StandardCharsets.UTF_8)),
                new DefaultHttpContent(Unpooled.copiedBuffer("data: two\n\n", StandardCharsets.UTF_8)),
                new DefaultLastHttpContent(Unpooled.copiedBuffer("data: [DONE]\n\n", StandardCharsets.UTF_8)));
        engine.writeInbound(head);
        for (HttpContent c : chunks) {
            engine.writeInbound(c);
        }

        Object first = front.readOutbound();
        assertThat(first).isInstanceOf(HttpResponse.class).isNotInstanceOf(HttpContent.class);
        HttpResponse out = (HttpResponse) first;
        assertThat(out.status().code()).isEqualTo(200);
        assertThat(out.headers().get("x-request-id")).isEqualTo("r-42");
        assertThat(out.headers().get("x-sextant-engine")).isNotBlank();
        assertThat(out.headers().get("x-sextant-attempts")).isEqualTo("1");
        for (HttpContent c : chunks) {
            Object forwarded = front.readOutbound();
            assertThat(forwarded).as("forwarded as is, in order").isSameAs(c);
            assertThat(c.refCnt()).as("held once, by the client side's outbound buffer").isEqualTo(1);
            assertThat(c.release()).isTrue();
        }
        assertThat((Object) front.readOutbound()).isNull();
        assertThat(req.refCnt()).as("the client's request is released when the exchange ends").isZero();
        assertThat(GW.gateway().inFlight()).isZero();
        assertThat(front.isOpen()).as("keep-alive").isTrue();
        assertThat(GW.gateway().pool.pollIdle(engines.get(engine)))
                .as("a cleanly ended response returns the connection to the pool").isSameAs(engine);

        assertThat(front.finishAndReleaseAll()).isFalse();
        for (EmbeddedChannel up : engines.keySet()) {
            assertThat(up.finishAndReleaseAll()).as("nothing else sent to an engine").isFalse();
        }
    }

    @Test
    void bytesOnAnIdleConnection_areReleasedAndTheConnectionClosed() {
        EmbeddedChannel idle = new EmbeddedChannel(new UpstreamHandler());
        HttpContent stray = new DefaultHttpContent(Unpooled.copiedBuffer("late", StandardCharsets.UTF_8));
        assertThat(idle.writeInbound(stray)).isFalse();
        assertThat(stray.refCnt()).isZero();
        assertThat(idle.isOpen()).isFalse();
        assertThat(idle.finishAndReleaseAll()).isFalse();
    }

    @Test
    void aLastChunkOnAnIdleConnection_isReleasedAndTheConnectionClosed() {
        EmbeddedChannel idle = new EmbeddedChannel(new UpstreamHandler());
        LastHttpContent last = new DefaultLastHttpContent(Unpooled.copiedBuffer("x", StandardCharsets.UTF_8));
        assertThat(idle.writeInbound(last)).isFalse();
        assertThat(last.refCnt()).isZero();
        assertThat(idle.isOpen()).isFalse();
        assertThat(idle.finishAndReleaseAll()).isFalse();
    }
}
