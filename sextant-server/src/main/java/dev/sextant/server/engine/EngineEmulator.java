package dev.sextant.server.engine;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sextant.server.auth.BearerToken;
import dev.sextant.server.internal.AcceptedConnections;
import dev.sextant.server.internal.ConnectionCap;
import dev.sextant.server.internal.HeadCheck;
import dev.sextant.server.internal.Http;
import dev.sextant.server.internal.Listen;
import dev.sextant.server.internal.ListenerLimits;
import dev.sextant.server.internal.RequestGuard;
import dev.sextant.server.internal.ListenException;
import dev.sextant.server.tls.ServerTls;
import dev.sextant.server.tls.TlsContexts;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.ssl.SslContext;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * An OpenAI-compatible stand-in for a vLLM engine, for the demo, tests and benchmarks: it answers
 * {@code /v1/chat/completions}, {@code /v1/completions} (streaming or not), {@code /v1/embeddings},
 * {@code /v1/models}, {@code /metrics} (vLLM names), {@code /health} (vLLM's: 200, no body) and {@code /healthz}, with
 * latencies from a continuous-batching model ({@link EngineConfig}) and injectable {@link Faults}
 * ({@code GET|POST /admin/faults}). Every response carries the header {@code x-engine-id}. With
 * {@link EngineConfig#networkRttMs()}, a request is answered as if that network round trip lay between the engine
 * and the gateway cluster its {@code x-sextant-gateway-cluster} header names.
 *
 * <p>Responses report the model's timing of the request in an extra {@code engine_timing} object ({@code
 * queued_ms}, {@code prefill_ms}, {@code ttft_ms}, {@code decode_ms}, {@code cached_tokens}): in the
 * completion for {@code stream: false}, in the chunk carrying {@code finish_reason} when streaming; and the
 * cached prompt tokens in {@code usage.prompt_tokens_details.cached_tokens}, as OpenAI does.
 *
 * <p>One Netty event loop group serves HTTP/1.1 with keep-alive; the batch model runs as timers on one of its
 * loops. A streaming sequence pauses while its channel is not writable. Usage:
 * <pre>{@code
 * try (EngineEmulator engine = EngineEmulator.start(EngineConfig.defaults("e1", "llama"))) {
 *     URI base = URI.create("http://127.0.0.1:" + engine.port());
 *     ...
 * }
 * }</pre>
 *
 * <p>This class is the emulator as a process (its listener and limits, its admin token and faults); its command
 * line, options in vLLM's names, is read in {@link EngineOptions}, and serving is elsewhere: requests in
 * {@link EngineHttpHandler}, the batch model in {@link BatchScheduler}, answers in {@link ChoicesSink}.
 */
public final class EngineEmulator implements AutoCloseable {
    /** Response header naming the engine that answered. */
    public static final String ENGINE_ID_HEADER = "x-engine-id";

    final EngineConfig config;
    final ObjectMapper json = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    final BatchScheduler scheduler;
    private final EventLoopGroup group;
    private final Channel serverChannel;
    private final AcceptedConnections channels = new AcceptedConnections();
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();
    private final AtomicReference<Faults> faults;
    private final AtomicLong requestsDrawn = new AtomicLong();
    private final AtomicLong received = new AtomicLong();
    private final AtomicLong ids = new AtomicLong();
    private final AtomicLong hung = new AtomicLong();
    private final AtomicLong delayed = new AtomicLong();
    private final AtomicLong generations = new AtomicLong();
    /** Ids {@link #generations(String)} remembers: enough for any test, bounded for a long-running demo. */
    static final int REMEMBERED_IDS = 100_000;
    private final java.util.Map<String, Integer> generationsById = new java.util.LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(java.util.Map.Entry<String, Integer> eldest) {
            return size() > REMEMBERED_IDS;
        }
    };
    /**
     * Bearer token(s) {@code /admin/faults} requires; null: the endpoint answers loopback clients only (tests, the demo,
     * an operator on the engine's host), checked on the request head in either case.
     */
    final BearerToken adminToken;
    /** Bearer token(s) every {@code /v1/…} request must carry, as vLLM's {@code --api-key}; null: none. */
    private final BearerToken apiKey;
    /** The largest request body, bytes: a prompt of millions of characters. */
    static final int MAX_BODY_BYTES = 16 * 1024 * 1024;
    /**
     * How long an answer may wait for a gateway that does not read it: as long as a non-streaming answer may take at
     * a gateway ({@code total_timeout}), so that the gateway's own client-side limits act first and the slowness a
     * client causes is never the engine's failure.
     */
    static final java.time.Duration UNREAD_ANSWER = java.time.Duration.ofMinutes(10);
    private final ConnectionCap connectionCap;
    /** {@link EngineConfig#networkRttMs()} in nanoseconds. */
    private final java.util.Map<String, Long> rttNanos = new java.util.HashMap<>();
    private final long defaultRttNanos;

    private EngineEmulator(EngineConfig config, int sendBufferBytes, ServerTls tls, BearerToken adminToken,
                           BearerToken apiKey, ListenerLimits limits) throws InterruptedException {
        this.config = config;
        this.adminToken = adminToken;
        this.apiKey = apiKey;
        this.connectionCap = new ConnectionCap("engine " + config.engineId(), limits.maxConnections());
        HeadCheck.Budget bodies = new HeadCheck.Budget(limits.maxBufferedBodyBytes());
        config.networkRttMs().forEach((cluster, ms) -> rttNanos.put(cluster, Math.round(ms * 1e6)));
        Long dflt = rttNanos.get(EngineConfig.DEFAULT_RTT_KEY);
        this.defaultRttNanos = dflt == null ? 0 : dflt;
        SslContext sslContext = tls == null ? null : TlsContexts.server(tls);
        this.faults = new AtomicReference<>(config.faults());
        this.group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        this.scheduler = new BatchScheduler(config, group.next(), System::nanoTime, faults::get, config.models().get(0));
        ServerBootstrap bootstrap = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .childOption(ChannelOption.AUTO_READ, false)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(32 * 1024, 64 * 1024))
                .childOption(ChannelOption.SO_SNDBUF, sendBufferBytes > 0 ? sendBufferBytes : null)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(connectionCap.handler());
                        channels.add(ch);
                        if (sslContext != null) {
                            ch.pipeline().addLast(sslContext.newHandler(ch.alloc()));
                        }
                        RequestGuard guard = new RequestGuard(limits.client(), UNREAD_ANSWER);
                        ch.pipeline().addLast(guard.bytesIn(), limits.client().codec(), guard,
                                new HeadCheck(head -> refusal(head, ch), bodies, MAX_BODY_BYTES),
                                new HttpObjectAggregator(MAX_BODY_BYTES), new EngineHttpHandler(EngineEmulator.this));
                    }
                });
        try {
            this.serverChannel = Listen.on(bootstrap, config.host(), config.port());
        } catch (RuntimeException | InterruptedException e) {
            group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
            throw e;
        }
    }

    /**
     * Starts an engine and returns once it listens.
     *
     * @throws dev.sextant.server.internal.ListenException if the address cannot be bound
     */
    public static EngineEmulator start(EngineConfig config) {
        return start(config, 0, null, null, null, ListenerLimits.engine());
    }

    /**
     * Starts an engine serving HTTPS with {@code tls} (null: plain HTTP) whose {@code /admin/faults} requires
     * {@code Authorization: Bearer <adminToken>} (null: answered to loopback clients only, as in tests and the demo).
     *
     * @throws IllegalArgumentException if the TLS files are unusable (the message names the key and file)
     * @throws dev.sextant.server.internal.ListenException if the address cannot be bound
     */
    public static EngineEmulator start(EngineConfig config, ServerTls tls, BearerToken adminToken) {
        return start(config, 0, tls, adminToken, null, ListenerLimits.engine());
    }

    /** As {@link #start(EngineConfig, ServerTls, BearerToken)}, with {@code limits} on its listener. */
    public static EngineEmulator start(EngineConfig config, ServerTls tls, BearerToken adminToken,
                                       ListenerLimits limits) {
        return start(config, 0, tls, adminToken, null, limits);
    }

    /**
     * As {@link #start(EngineConfig, ServerTls, BearerToken, ListenerLimits)}, and every {@code /v1/…} request must
     * carry {@code Authorization: Bearer <apiKey>} (null: none), as of a vLLM started with {@code --api-key}: without
     * it, 401 {@code {"error": "Unauthorized"}}, vLLM's answer. Its health, metrics and admin endpoints stay open to
     * whom they were open to, as vLLM's {@code /health} and {@code /metrics} are.
     */
    public static EngineEmulator start(EngineConfig config, ServerTls tls, BearerToken adminToken, BearerToken apiKey,
                                       ListenerLimits limits) {
        return start(config, 0, tls, adminToken, apiKey, limits);
    }

    /**
     * Starts an engine whose connections have a kernel send buffer of {@code sendBufferBytes} (0: the OS default);
     * a small one makes back-pressure show after a few tokens instead of megabytes.
     */
    static EngineEmulator start(EngineConfig config, int sendBufferBytes) {
        return start(config, sendBufferBytes, null, null, null, ListenerLimits.engine());
    }

    private static EngineEmulator start(EngineConfig config, int sendBufferBytes, ServerTls tls,
                                        BearerToken adminToken, BearerToken apiKey, ListenerLimits limits) {
        try {
            return new EngineEmulator(config, sendBufferBytes, tls, adminToken, apiKey, limits);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while binding " + config.host() + ":" + config.port(), e);
        } catch (IllegalArgumentException | ListenException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new IllegalStateException("cannot start on " + config.host() + ":" + config.port() + ": " + e.getMessage(), e);
        }
    }

    /** The TCP port it listens on (the chosen one when configured with port 0). */
    public int port() {
        return ((InetSocketAddress) serverChannel.localAddress()).getPort();
    }

    /** Its configuration. */
    public EngineConfig config() {
        return config;
    }

    /** The faults in force now. */
    public Faults faults() {
        return faults.get();
    }

    /** Replaces the faults; requests arriving afterwards see the new ones. */
    public void setFaults(Faults newFaults) {
        if (newFaults == null) {
            throw new IllegalArgumentException("faults: missing (expected: a Faults value)");
        }
        Faults before = faults.getAndSet(newFaults);
        if (before.stall() && !newFaults.stall()) {
            scheduler.resume();
        }
    }

    /** Output tokens produced since start over all requests, ≥ 0 (what the batch model has generated). */
    public long generatedTokens() {
        return scheduler.generatedTokens();
    }

    /**
     * Requests received on the generation and embedding endpoints since start, ≥ 0: every one, whatever became of
     * it (served, refused as invalid, failed by a fault, hung).
     */
    public long requestsReceived() {
        return received.get();
    }

    /** Requests that began waiting out their emulated network round trip since start, ≥ 0. */
    public long delayedRequests() {
        return delayed.get();
    }

    /** Requests accepted and left unanswered by the hang fault since start, ≥ 0. */
    public long hungRequests() {
        return hung.get();
    }

    /**
     * Generation requests that produced at least one output token since start, ≥ 0: the requests this engine
     * generated, whole or in part.
     */
    public long generations() {
        return generations.get();
    }

    /**
     * How many times this engine generated (produced at least one output token of) a request whose
     * {@code x-request-id} was {@code requestId}, ≥ 0: what shows a request generated twice. The engine remembers the
     * {@value #REMEMBERED_IDS} most recent ids.
     */
    public int generations(String requestId) {
        synchronized (generationsById) {
            Integer n = generationsById.get(requestId);
            return n == null ? 0 : n;
        }
    }

    /**
     * The answer to a request head that may not be sent, or null: {@code /v1/…} without the API key (when it has
     * one), {@code /admin/faults} without the admin token, or, when the engine has none, from a client that is not on
     * this host (403 naming the option that opens it).
     */
    private io.netty.handler.codec.http.FullHttpResponse refusal(io.netty.handler.codec.http.HttpRequest head,
                                                                 Channel ch) {
        String uri = head.uri();
        int q = uri.indexOf('?');
        String path = q < 0 ? uri : uri.substring(0, q);
        if (apiKey != null && (path.equals("/v1") || path.startsWith("/v1/"))) {
            if (carries(head, apiKey)) {
                return null;
            }
            io.netty.handler.codec.http.FullHttpResponse r = Http.response(
                    io.netty.handler.codec.http.HttpResponseStatus.UNAUTHORIZED, "application/json",
                    "{\"error\":\"Unauthorized\"}");
            r.headers().set(ENGINE_ID_HEADER, config.engineId());
            return r;
        }
        if (!path.equals("/admin/faults")) {
            return null;
        }
        if (adminToken != null) {
            return carries(head, adminToken) ? null : Http.unauthorized();
        }
        if (ch.remoteAddress() instanceof InetSocketAddress a && a.getAddress() != null
                && a.getAddress().isLoopbackAddress()) {
            return null;
        }
        return Http.error(io.netty.handler.codec.http.HttpResponseStatus.FORBIDDEN, "invalid_request_error",
                "forbidden", "/admin/faults answers clients on this host only; start the engine with"
                        + " --admin-token-file to change its faults from elsewhere", null);
    }

    /** Whether {@code head} carries one token {@code token} accepts (repeated headers with different tokens: no). */
    private static boolean carries(io.netty.handler.codec.http.HttpRequest head, BearerToken token) {
        BearerToken.Presented p = BearerToken.Presented.of(
                head.headers().getAll(io.netty.handler.codec.http.HttpHeaderNames.AUTHORIZATION));
        return !p.ambiguous() && token.accepts(p.authorization());
    }

    /** Client connections open now, at most {@code max_connections}. */
    public int openConnections() {
        return connectionCap.open();
    }

    /** Stops listening, closes every connection (hung ones included) and stops its threads. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            // a second close must not wait on the channel group again: its event loops are gone, and a close scheduled
            // on them never completes (a test that closed its engine, then closed it again in its clean-up, hung there)
            return;
        }
        serverChannel.close().awaitUninterruptibly();
        channels.close();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
    }

    // ---- used by the handler ----

    /** Draws this request's fault dice in arrival order; true when it must fail with a 500. */
    boolean drawError(Faults f) {
        long n = requestsDrawn.getAndIncrement();
        return uniform(config.seed(), n) < f.errorRate();
    }

    /**
     * The emulated network round trip between this engine and the gateway cluster a request names in
     * {@code x-sextant-gateway-cluster} ({@code null}: none named), nanoseconds ≥ 0: its mapped value, else the
     * {@value EngineConfig#DEFAULT_RTT_KEY} one, else 0.
     */
    long networkRttNanos(String gatewayCluster) {
        Long n = gatewayCluster == null ? null : rttNanos.get(gatewayCluster);
        return n != null ? n : defaultRttNanos;
    }

    void received() {
        received.incrementAndGet();
    }

    void delayed() {
        delayed.incrementAndGet();
    }

    void hung() {
        hung.incrementAndGet();
    }

    /** A request's first output token was produced; {@code requestId} is its {@code x-request-id}, or null. */
    void generating(String requestId) {
        generations.incrementAndGet();
        if (requestId != null) {
            synchronized (generationsById) {
                generationsById.merge(requestId, 1, Integer::sum);
            }
        }
    }

    long nextId() {
        return ids.incrementAndGet();
    }

    long nanoTime() {
        return System.nanoTime();
    }

    long createdSeconds() {
        return System.currentTimeMillis() / 1000;
    }

    /** The n-th number of a seeded stream, uniform in [0, 1): SplitMix64's finalizer over seed and index. */
    static double uniform(long seed, long n) {
        return dev.sextant.hashing.SplitMix64.unit(dev.sextant.hashing.SplitMix64.draw(seed, n));
    }

    /** A deterministic unit vector for a text: the same text always gives the same vector. */
    static double[] embedding(String text, int dimensions) {
        long seed = 0;
        for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
            seed = seed * 31 + b;
        }
        double[] v = new double[dimensions];
        double norm = 0;
        for (int i = 0; i < dimensions; i++) {
            v[i] = uniform(seed, i) * 2 - 1;
            norm += v[i] * v[i];
        }
        norm = Math.sqrt(norm);
        for (int i = 0; i < dimensions; i++) {
            v[i] = norm > 0 ? v[i] / norm : 0;
        }
        return v;
    }

    /**
     * The options {@link #main} takes, one line each (the option, its value, what it sets and its default), for a
     * command line's help. Adding an option to {@link #main} adds its line here.
     */
    public static List<String> optionsHelp() {
        return EngineOptions.help();
    }

    /**
     * Runs one engine until the process is stopped. Options (all optional): {@code --id ID --host ADDR --port N
     * --model NAME (repeatable) --max-seqs N --prefill-ms-per-token X --decode-base-ms X --decode-ms-per-seq X
     * --default-max-tokens N --kv-cache-tokens N --prefix-cache-entries N --seed N --error-rate X --slowdown X
     * --hang --crash-after-tokens N --corrupt-stream none|truncate|malformed --network-rtt-ms CLUSTER=MS,…
     * --scheduling-policy fcfs|priority}, and for
     * security
     * {@code --tls-cert-file PEM --tls-key-file PEM} (serve HTTPS), {@code --admin-token-file FILE} (require that
     * bearer token on {@code /admin/faults}, which without it answers loopback clients only) and {@code --api-key-file
     * FILE} (require that bearer token on {@code /v1/…}, as vLLM's {@code --api-key}; the tokens themselves are never
     * options, so they do not show in the process list), and for its listener {@code --request-header-timeout
     * D --request-body-timeout D --max-header-bytes N --max-connections N --max-buffered-body-bytes N}
     * ({@link ListenerLimits#engine()}).
     */
    public static void main(String[] args) throws InterruptedException {
        EngineOptions.run(args);
    }

    /**
     * Checks the options as {@link #main} takes them, reading the files they name, and starts nothing; returns what
     * they configure ({@code engine e1 serving [m] on http://127.0.0.1:8000}). A problem is an
     * {@link IllegalArgumentException} naming the option ({@code --max-seqs: …}) or the setting
     * ({@code max_sequences: 0 (expected: >= 1)}).
     */
    public static String check(String[] args) {
        EngineOptions.Parsed p = EngineOptions.parse(args);
        return p.describe(p.config().port());
    }
}
