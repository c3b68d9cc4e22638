package dev.sextant.server.gateway;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2GoAwayFrame;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2ResetFrame;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2SettingsFrame;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.Http2StreamChannelBootstrap;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A plain-text HTTP/2 client with prior knowledge (the connection preface first, no upgrade), on Netty: many streams
 * on one connection, each seen frame by frame, and a stream can be reset. Waits take a deadline.
 */
final class H2Client implements AutoCloseable {
    static final Duration WAIT = Duration.ofSeconds(20);

    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final Channel channel;
    private final Http2StreamChannelBootstrap streams;
    /** Completes with the last stream id of the server's GOAWAY. */
    final CompletableFuture<Integer> goAway = new CompletableFuture<>();
    /** Completes with the server's first SETTINGS. */
    final CompletableFuture<Http2Settings> settings = new CompletableFuture<>();

    H2Client(int port) throws InterruptedException {
        Bootstrap b = new Bootstrap().group(group).channel(NioSocketChannel.class)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(Http2FrameCodecBuilder.forClient().encoderIgnoreMaxHeaderListSize(true).build(),
                                new Http2MultiplexHandler(new ChannelInboundHandlerAdapter()),
                                new ChannelInboundHandlerAdapter() {
                                    @Override
                                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                        if (msg instanceof Http2GoAwayFrame g) {
                                            goAway.complete(g.lastStreamId());
                                        } else if (msg instanceof Http2SettingsFrame f) {
                                            settings.complete(f.settings());
                                        }
                                        ReferenceCountUtil.release(msg);
                                    }
                                });
                    }
                });
        channel = b.connect("127.0.0.1", port).sync().channel();
        streams = new Http2StreamChannelBootstrap(channel);
    }

    boolean isOpen() {
        return channel.isActive();
    }

    /** Opens a stream that POSTs {@code body} (as JSON) to {@code path}; {@code headers} are name, value pairs. */
    Stream post(String path, String body, String... headers) throws Exception {
        return open("POST", path, body, headers);
    }

    /**
     * Opens a stream that sends only the head of a POST to {@code path}, announcing a body (the stream stays open) and
     * sending none of it; {@code headers} are name, value pairs.
     */
    Stream postHeadOnly(String path, String... headers) throws Exception {
        return open(streams, "POST", path, "", false, headers);
    }

    /** Opens a stream that GETs {@code path}. */
    Stream get(String path) throws Exception {
        return open("GET", path, null);
    }

    /**
     * As {@link #post} on a stream that reads nothing: its window is never renewed, so the server may send it no more
     * than the initial 65,535 bytes (a client that stopped reading one stream).
     */
    Stream postNeverReading(String path, String body) throws Exception {
        return open(new Http2StreamChannelBootstrap(channel).option(ChannelOption.AUTO_READ, false), "POST", path, body,
                true);
    }

    private Stream open(String method, String path, String body, String... headers) throws Exception {
        return open(streams, method, path, body, true, headers);
    }

    /** {@code sendBody}: whether the body is sent (and the stream ended), or only announced. */
    private Stream open(Http2StreamChannelBootstrap bootstrap, String method, String path, String body,
                        boolean sendBody, String... headers) throws Exception {
        Stream s = new Stream();
        Http2StreamChannel ch = bootstrap.handler(s.handler()).open().get(WAIT.toSeconds(), TimeUnit.SECONDS);
        s.channel = ch;
        Http2Headers h = new DefaultHttp2Headers().method(method).path(path).scheme("http").authority("127.0.0.1");
        if (body != null) {
            h.set("content-type", "application/json");
        }
        for (int i = 0; i < headers.length; i += 2) {
            h.add(headers[i], headers[i + 1]);
        }
        if (body == null) {
            ch.writeAndFlush(new DefaultHttp2HeadersFrame(h, true));
        } else if (!sendBody) {
            ch.writeAndFlush(new DefaultHttp2HeadersFrame(h, false));
        } else {
            ch.write(new DefaultHttp2HeadersFrame(h, false));
            ch.writeAndFlush(new DefaultHttp2DataFrame(Unpooled.copiedBuffer(body, StandardCharsets.UTF_8), true));
        }
        return s;
    }

    @Override
    public void close() {
        channel.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    }

    /** One request and its answer as it arrives. */
    static final class Stream {
        /** The response headers (the first non-informational HEADERS frame). */
        final CompletableFuture<Http2Headers> headers = new CompletableFuture<>();
        /** The first DATA bytes. */
        final CompletableFuture<String> firstData = new CompletableFuture<>();
        /** The whole body, when the server ended the stream; fails when it was reset or closed before. */
        final CompletableFuture<String> end = new CompletableFuture<>();
        /** The error code of the server's RST_STREAM. */
        final CompletableFuture<Long> reset = new CompletableFuture<>();
        private final StringBuilder body = new StringBuilder();
        private Http2StreamChannel channel;

        private ChannelInboundHandlerAdapter handler() {
            return new ChannelInboundHandlerAdapter() {
                @Override
                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                    try {
                        if (msg instanceof Http2HeadersFrame f) {
                            CharSequence status = f.headers().status();
                            if (status == null || status.charAt(0) != '1') {
                                headers.complete(f.headers());
                            }
                            if (f.isEndStream()) {
                                ended();
                            }
                        } else if (msg instanceof Http2DataFrame f) {
                            String text = f.content().toString(StandardCharsets.UTF_8);
                            synchronized (body) {
                                body.append(text);
                            }
                            if (!text.isEmpty()) {
                                firstData.complete(text);
                            }
                            if (f.isEndStream()) {
                                ended();
                            }
                        }
                    } finally {
                        ReferenceCountUtil.release(msg);
                    }
                }

                @Override
                public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                    if (evt instanceof Http2ResetFrame f) { // a stream channel gets the peer's reset as an event
                        reset.complete(f.errorCode());
                        end.completeExceptionally(new IllegalStateException("stream reset: " + f.errorCode()));
                    }
                    ReferenceCountUtil.release(evt);
                }

                @Override
                public void channelInactive(ChannelHandlerContext ctx) {
                    end.completeExceptionally(new IllegalStateException("stream closed before its end"));
                    firstData.completeExceptionally(new IllegalStateException("stream closed before any data"));
                    headers.completeExceptionally(new IllegalStateException("stream closed before headers"));
                }
            };
        }

        private void ended() {
            synchronized (body) {
                end.complete(body.toString());
            }
        }

        /** The status of the answer, waiting for its headers. */
        int status() throws Exception {
            return Integer.parseInt(headers.get(WAIT.toSeconds(), TimeUnit.SECONDS).status().toString());
        }

        /** A response header, waiting for the headers; null when absent. */
        String header(String name) throws Exception {
            CharSequence v = headers.get(WAIT.toSeconds(), TimeUnit.SECONDS).get(name);
            return v == null ? null : v.toString();
        }

        /** The whole body, waiting for the end of the stream. */
        String body() throws Exception {
            return end.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        }

        int id() {
            return channel.stream().id();
        }

        /** Starts reading a stream opened by {@link #postNeverReading}: what the server sent and queued is seen now. */
        void readFromNowOn() {
            channel.config().setAutoRead(true);
        }

        /** Resets the stream (RST_STREAM CANCEL), as a client that gave up does. */
        void cancel() {
            channel.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
    }
}
