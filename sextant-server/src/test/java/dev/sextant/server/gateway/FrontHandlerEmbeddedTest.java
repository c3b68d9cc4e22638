package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.internal.Http;
import dev.sextant.server.internal.OversizedAwareAggregator;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link FrontHandler} behind the body aggregator in an {@link EmbeddedChannel}: the answers that never reach an
 * engine, written whole, with every request and response buffer released exactly once.
 */
class FrontHandlerEmbeddedTest {
    private static final int MAX_BODY = 4096;
    @RegisterExtension
    static final GatewayFixture GW = GatewayFixture.of(1, 1, c -> c.withMaxBodyBytes(MAX_BODY)).watchingLeaks();



    private static EmbeddedChannel channel() {
        return new EmbeddedChannel(new OversizedAwareAggregator(MAX_BODY, new LongAdder()), new FrontHandler(GW.gateway()));
    }

    private static FullHttpRequest request(HttpMethod method, String uri, String body) {
        FullHttpRequest r = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, method, uri,
                Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
        HttpUtil.setContentLength(r, r.content().readableBytes());
        return r;
    }

    /** Reads the next response, checks it is whole, returns its body as JSON and releases it. */
    private static JsonNode readResponse(EmbeddedChannel ch, int status) throws Exception {
        Object out = ch.readOutbound();
        assertThat(out).isInstanceOf(FullHttpResponse.class);
        FullHttpResponse r = (FullHttpResponse) out;
        try {
            assertThat(r.status().code()).isEqualTo(status);
            assertThat(HttpUtil.getContentLength(r)).isEqualTo(r.content().readableBytes());
            return Http.JSON.readTree(r.content().toString(StandardCharsets.UTF_8));
        } finally {
            assertThat(r.release()).as("the response is released by its last holder").isTrue();
            assertThat(r.refCnt()).isZero();
        }
    }

    private static void assertOpenAiError(JsonNode body, String type, String code, String says) {
        JsonNode error = body.path("error");
        assertThat(error.path("message").asText()).contains(says);
        assertThat(error.path("type").asText()).isEqualTo(type);
        assertThat(error.path("code").asText()).isEqualTo(code);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            malformed JSON     | POST | /v1/chat/completions | {"model": "m",      | 400 | invalid_request_error | invalid_request | malformed JSON
            missing model      | POST | /v1/completions      | {"prompt": "hi"}    | 400 | invalid_request_error | invalid_request | model: missing
            model not a string | POST | /v1/embeddings       | {"model": 5}        | 400 | invalid_request_error | invalid_request | model: 5
            unknown path       | POST | /v1/nothing          | {"model": "m"}      | 404 | invalid_request_error | unknown_url     | unknown path: POST /v1/nothing
            wrong method       | GET  | /v1/chat/completions | ''                  | 405 | invalid_request_error | method_not_allowed | use POST
            """)
    void requestAnsweredWithoutAnEngine_isAnOpenAiErrorWrittenWhole_andKeepsTheConnection(
            String name, String method, String uri, String body, int status, String type, String code, String says)
            throws Exception {
        EmbeddedChannel ch = channel();
        FullHttpRequest req = request(HttpMethod.valueOf(method), uri, body);
        assertThat(ch.writeInbound(req)).as("the handler consumes the request").isFalse();
        assertThat(req.refCnt()).as("the request is released").isZero();

        assertOpenAiError(readResponse(ch, status), type, code, says);
        assertThat(ch.isOpen()).as("keep-alive: the connection serves the next request").isTrue();
        assertThat((Object) ch.readOutbound()).isNull();
        assertThat(ch.finishAndReleaseAll()).as("nothing left unread").isFalse();
    }

    @Test
    void unknownModel_isRefusedWith404FromTheDataPlane() throws Exception {
        EmbeddedChannel ch = channel();
        FullHttpRequest req = request(HttpMethod.POST, "/v1/chat/completions",
                "{\"model\":\"gpt-9\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
        req.headers().set("x-request-id", "r-1");
        ch.writeInbound(req);
        assertThat(req.refCnt()).isZero();

        Object out = ch.readOutbound();
        assertThat(out).isInstanceOf(FullHttpResponse.class);
        FullHttpResponse r = (FullHttpResponse) out;
        assertThat(r.status().code()).isEqualTo(404);
        assertThat(r.headers().get("x-request-id")).isEqualTo("r-1");
        assertThat(r.headers().get("x-sextant-attempts")).isEqualTo("0");
        JsonNode error = Http.JSON.readTree(r.content().toString(StandardCharsets.UTF_8)).path("error");
        assertThat(error.path("message").asText()).contains("gpt-9");
        assertThat(error.path("type").asText()).isEqualTo("invalid_request_error");
        assertThat(r.release()).isTrue();
        assertThat(ch.finishAndReleaseAll()).isFalse();
    }

    @Test
    void healthz_is200WithTheSnapshotItRoutesWith() throws Exception {
        EmbeddedChannel ch = channel();
        FullHttpRequest req = request(HttpMethod.GET, "/healthz?verbose=1", "");
        ch.writeInbound(req);
        assertThat(req.refCnt()).isZero();

        JsonNode health = readResponse(ch, 200);
        assertThat(health.path("status").asText()).isEqualTo("ok");
        assertThat(health.path("gateway_cluster").asText()).isEqualTo("gw");
        assertThat(health.path("snapshot_version").asLong()).isEqualTo(GW.gateway().plane().snapshot().version());
        assertThat(ch.finishAndReleaseAll()).isFalse();
    }

    @Test
    void models_listsTheRoutedModel() throws Exception {
        EmbeddedChannel ch = channel();
        ch.writeInbound(request(HttpMethod.GET, "/v1/models", ""));
        JsonNode models = readResponse(ch, 200);
        assertThat(models.path("object").asText()).isEqualTo("list");
        assertThat(models.path("data").findValuesAsText("id")).containsExactly("m");
        assertThat(ch.finishAndReleaseAll()).isFalse();
    }

    @Test
    void pipelinedRequests_areAnsweredInRequestOrder() throws Exception {
        EmbeddedChannel ch = channel();
        FullHttpRequest a = request(HttpMethod.POST, "/v1/a", "{}");
        FullHttpRequest b = request(HttpMethod.GET, "/healthz", "");
        FullHttpRequest c = request(HttpMethod.POST, "/v1/c", "{}");
        ch.writeInbound(a, b, c);
        assertThat(a.refCnt() + b.refCnt() + c.refCnt()).isZero();

        assertOpenAiError(readResponse(ch, 404), "invalid_request_error", "unknown_url", "/v1/a");
        assertThat(readResponse(ch, 200).path("status").asText()).isEqualTo("ok");
        assertOpenAiError(readResponse(ch, 404), "invalid_request_error", "unknown_url", "/v1/c");
        assertThat(ch.finishAndReleaseAll()).isFalse();
    }

    @Test
    void connectionClose_isHonouredAfterTheAnswerIsWritten() throws Exception {
        EmbeddedChannel ch = channel();
        FullHttpRequest req = request(HttpMethod.GET, "/healthz", "");
        HttpUtil.setKeepAlive(req, false);
        ch.writeInbound(req);
        readResponse(ch, 200);
        assertThat(ch.isOpen()).isFalse();
        assertThat(ch.finishAndReleaseAll()).isFalse();
    }

    @Test
    void declaredOversizedBody_is413InOpenAiShape_andClosesTheConnection() throws Exception {
        EmbeddedChannel ch = channel();
        HttpRequest head = new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/v1/completions");
        HttpUtil.setContentLength(head, MAX_BODY + 1);
        DefaultLastHttpContent body = new DefaultLastHttpContent(Unpooled.wrappedBuffer(new byte[MAX_BODY + 1]));
        ch.writeInbound(head, body);
        assertThat(body.refCnt()).as("the refused body is released").isZero();

        assertOpenAiError(readResponse(ch, 413), "invalid_request_error", "request_too_large", "4096 bytes");
        assertThat(ch.isOpen()).isFalse();
        assertThat(ch.finishAndReleaseAll()).isFalse();
    }

    @Test
    void chunkedBodyGrowingPastTheLimit_is413_andEveryChunkIsReleased() throws Exception {
        EmbeddedChannel ch = channel();
        HttpRequest head = new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/v1/completions");
        HttpUtil.setTransferEncodingChunked(head, true);
        DefaultHttpContent[] chunks = new DefaultHttpContent[3];
        for (int i = 0; i < chunks.length; i++) {
            chunks[i] = new DefaultHttpContent(Unpooled.wrappedBuffer(new byte[MAX_BODY / 2 + 1]));
        }
        ch.writeInbound(head, chunks[0], chunks[1], chunks[2], new DefaultLastHttpContent());
        for (DefaultHttpContent c : chunks) {
            assertThat(c.refCnt()).isZero();
        }

        assertOpenAiError(readResponse(ch, 413), "invalid_request_error", "request_too_large", "exceeds the limit");
        assertThat(ch.isOpen()).isFalse();
        assertThat(ch.finishAndReleaseAll()).isFalse();
    }
}
