package dev.sextant.server.internal;

import java.time.Duration;

/**
 * What a listener (gateway, control plane, engine emulator) allows a client connection before it has a whole
 * request: how long the request head and the body may take to arrive, and how large the head may be. They bound what
 * a slow or hostile client can hold: a connection that trickles its head (slowloris) or its body is closed when its
 * timeout passes, whatever it sends meanwhile.
 *
 * @param requestHeaderTimeout from the moment the server is ready to read a request (a new connection, or the
 *                             previous answer written) until its whole head (request line and headers) arrived;
 *                             &gt; 0. Past it a connection that sent part of a request gets 408 and is closed; an idle
 *                             keep-alive connection is closed without an answer
 * @param requestBodyTimeout   from the end of the head until the end of the body; &gt; 0. Past it: 408, connection
 *                             closed
 * @param maxHeaderBytes       largest request line, and largest header block, bytes in 1..1 MiB; larger → 414 (line)
 *                             or 431 (headers), connection closed
 */
public record ClientLimits(Duration requestHeaderTimeout, Duration requestBodyTimeout, int maxHeaderBytes) {
    /** The default head limit, 16 KiB. */
    public static final int DEFAULT_MAX_HEADER_BYTES = 16 * 1024;

    public ClientLimits {
        Http.positive("request_header_timeout", requestHeaderTimeout);
        Http.positive("request_body_timeout", requestBodyTimeout);
        maxHeaderBytes(maxHeaderBytes);
    }

    /**
     * {@code v} as a head limit, refused unless in 1..1,048,576: a setting read as a long is checked here before it is
     * narrowed, so that 4294967297 is said as written, never wrapped into range.
     */
    public static int maxHeaderBytes(long v) {
        if (v < 1 || v > 1 << 20) {
            throw new IllegalArgumentException("max_header_bytes: " + v + " (expected: 1..1048576)");
        }
        return (int) v;
    }

    /** 10 s for the head, 60 s for the body, 16 KiB of head. */
    public static ClientLimits defaults() {
        return new ClientLimits(Duration.ofSeconds(10), Duration.ofSeconds(60), DEFAULT_MAX_HEADER_BYTES);
    }

    /** The HTTP/1.1 server codec that refuses a request line or a header block over {@link #maxHeaderBytes}. */
    public io.netty.handler.codec.http.HttpServerCodec codec() {
        return new io.netty.handler.codec.http.HttpServerCodec(new io.netty.handler.codec.http.HttpDecoderConfig()
                .setMaxInitialLineLength(maxHeaderBytes).setMaxHeaderSize(maxHeaderBytes));
    }
}
