package dev.sextant.server.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The connection handler on an {@link EmbeddedChannel}: answers, order, and that every buffer is released once. */
class EngineHttpHandlerTest {
    private EngineEmulator engine;
    private EmbeddedChannel channel;

    @BeforeEach
    void start() {
        engine = EngineEmulator.start(EngineConfig.defaults("engine-h", "m").withLatency(4, 0.01, 1, 0));
        channel = new EmbeddedChannel(new EngineHttpHandler(engine));
    }

    @AfterEach
    void stop() {
        assertThat(channel.finishAndReleaseAll()).as("nothing left unread in the channel").isFalse();
        engine.close();
    }

    private static FullHttpRequest request(HttpMethod method, String path, String body) {
        return new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, method, path,
                Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
    }

    @Test
    void pipelinedRequests_areAnsweredInOrderAndEveryRequestIsReleased() {
        FullHttpRequest bad = request(HttpMethod.POST, "/v1/chat/completions", "{not json");
        FullHttpRequest models = request(HttpMethod.GET, "/v1/models", "");
        FullHttpRequest metrics = request(HttpMethod.GET, "/metrics", "");

        channel.writeInbound(bad, models, metrics);

        List<FullHttpResponse> responses = List.of(channel.readOutbound(), channel.readOutbound(), channel.readOutbound());
        try {
            assertThat(responses).extracting(HttpResponse::status).containsExactly(
                    HttpResponseStatus.BAD_REQUEST, HttpResponseStatus.OK, HttpResponseStatus.OK);
            assertThat(responses.get(0).content().toString(StandardCharsets.UTF_8)).contains("\"invalid_request_error\"");
            assertThat(responses.get(1).content().toString(StandardCharsets.UTF_8)).contains("\"id\":\"m\"");
            assertThat(responses.get(2).headers().get(HttpHeaderNames.CONTENT_TYPE)).startsWith("text/plain");
            assertThat(responses).allSatisfy(r -> assertThat(r.headers().get("x-engine-id")).isEqualTo("engine-h"));
        } finally {
            responses.forEach(FullHttpResponse::release);
        }
        assertThat(List.of(bad, models, metrics)).allSatisfy(r -> assertThat(r.refCnt()).isZero());
    }

    @Test
    void streamingRequest_writesHeadChunksAndEndOnce() {
        FullHttpRequest chat = request(HttpMethod.POST, "/v1/chat/completions",
                "{\"model\":\"m\",\"max_tokens\":3,\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}");

        channel.writeInbound(chat);
        List<Object> out = new ArrayList<>();
        Client.await("the end of the stream", () -> {
            channel.runPendingTasks();
            Object o;
            while ((o = channel.readOutbound()) != null) {
                out.add(o);
            }
            return !out.isEmpty() && out.get(out.size() - 1) instanceof LastHttpContent;
        });

        try {
            assertThat(out.get(0)).isInstanceOf(HttpResponse.class);
            StringBuilder body = new StringBuilder();
            out.stream().filter(HttpContent.class::isInstance)
                    .forEach(c -> body.append(((HttpContent) c).content().toString(StandardCharsets.UTF_8)));
            assertThat(body.toString().split("data: ", -1)).hasSize(1 + 1 + 3 + 1 + 1);
            assertThat(body.toString()).endsWith("data: [DONE]\n\n");
        } finally {
            out.forEach(io.netty.util.ReferenceCountUtil::release);
        }
        assertThat(chat.refCnt()).isZero();
        // the role event goes out with the first token, in one chunk: 3 tokens, the finish, [DONE]
        assertThat(out).filteredOn(c -> c instanceof HttpContent && c != LastHttpContent.EMPTY_LAST_CONTENT).hasSize(5)
                .allSatisfy(c -> assertThat(((HttpContent) c).refCnt()).isZero());
    }
}
