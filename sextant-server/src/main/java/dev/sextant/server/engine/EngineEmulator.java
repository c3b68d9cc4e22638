package dev.sextant.server.engine;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sextant.server.auth.BearerToken;
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
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
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
 * <p>Why one long class: it is the emulator as a process (its listener and limits, its command-line options in
 * vLLM's names, its admin token and faults); serving is elsewhere: requests in {@link EngineHttpHandler}, the batch
 * model in {@link BatchScheduler}, answers in {@link ChoicesSink}.
 */
public final class EngineEmulator implements AutoCloseable {
    /** Response header naming the engine that answered. */
    public static final String ENGINE_ID_HEADER = "x-engine-id";

    final EngineConfig config;
    final ObjectMapper json = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    final BatchScheduler scheduler;
    private final EventLoopGroup group;
    private final Channel serverChannel;
    private final ChannelGroup channels = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
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
                           ListenerLimits limits) throws InterruptedException {
        this.config = config;
        this.adminToken = adminToken;
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
                                new HeadCheck(head -> adminRefusal(head, ch), bodies, MAX_BODY_BYTES),
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
        return start(config, 0, null, null, ListenerLimits.engine());
    }

    /**
     * Starts an engine serving HTTPS with {@code tls} (null: plain HTTP) whose {@code /admin/faults} requires
     * {@code Authorization: Bearer <adminToken>} (null: answered to loopback clients only, as in tests and the demo).
     *
     * @throws IllegalArgumentException if the TLS files are unusable (the message names the key and file)
     * @throws dev.sextant.server.internal.ListenException if the address cannot be bound
     */
    public static EngineEmulator start(EngineConfig config, ServerTls tls, BearerToken adminToken) {
        return start(config, 0, tls, adminToken, ListenerLimits.engine());
    }

    /** As {@link #start(EngineConfig, ServerTls, BearerToken)}, with {@code limits} on its listener. */
    public static EngineEmulator start(EngineConfig config, ServerTls tls, BearerToken adminToken,
                                       ListenerLimits limits) {
        return start(config, 0, tls, adminToken, limits);
    }

    /**
     * Starts an engine whose connections have a kernel send buffer of {@code sendBufferBytes} (0: the OS default);
     * a small one makes back-pressure show after a few tokens instead of megabytes.
     */
    static EngineEmulator start(EngineConfig config, int sendBufferBytes) {
        return start(config, sendBufferBytes, null, null, ListenerLimits.engine());
    }

    private static EngineEmulator start(EngineConfig config, int sendBufferBytes, ServerTls tls,
                                        BearerToken adminToken, ListenerLimits limits) {
        try {
            return new EngineEmulator(config, sendBufferBytes, tls, adminToken, limits);
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
        faults.set(newFaults);
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
     * The answer to a request head that may not be sent, or null: {@code /admin/faults} without the admin token, or,
     * when the engine has none, from a client that is not on this host (403 naming the option that opens it).
     */
    private io.netty.handler.codec.http.FullHttpResponse adminRefusal(io.netty.handler.codec.http.HttpRequest head,
                                                                      Channel ch) {
        String uri = head.uri();
        int q = uri.indexOf('?');
        if (!(q < 0 ? uri : uri.substring(0, q)).equals("/admin/faults")) {
            return null;
        }
        if (adminToken != null) {
            return adminToken.accepts(head.headers().get(io.netty.handler.codec.http.HttpHeaderNames.AUTHORIZATION))
                    ? null : Http.unauthorized();
        }
        if (ch.remoteAddress() instanceof InetSocketAddress a && a.getAddress() != null
                && a.getAddress().isLoopbackAddress()) {
            return null;
        }
        return Http.error(io.netty.handler.codec.http.HttpResponseStatus.FORBIDDEN, "invalid_request_error",
                "forbidden", "/admin/faults answers clients on this host only; start the engine with"
                        + " --admin-token-file to change its faults from elsewhere", null);
    }

    /** Client connections open now, at most {@code max_connections}. */
    public int openConnections() {
        return connectionCap.open();
    }

    /** Stops listening, closes every connection (hung ones included) and stops its threads. Idempotent. */
    @Override
    public void close() {
        serverChannel.close().awaitUninterruptibly();
        channels.close().awaitUninterruptibly();
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
        EngineConfig d = EngineConfig.defaults("engine-0", "emulated-model");
        ListenerLimits l = ListenerLimits.engine();
        return List.of(
                "--id ID                        engine id, in answers and metrics (default: " + d.engineId() + ")",
                "--host ADDR                    address to bind (default: " + d.host() + ")",
                "--port N                       port to bind, 0 for any (default: 8000)",
                "--model NAME                   a model it serves; repeat for more (default: " + d.models().get(0) + ")",
                "--max-seqs N                   sequences decoded at once, as vLLM's --max-num-seqs (default: "
                        + d.maxSequences() + ")",
                "--prefill-ms-per-token X       prefill time per prompt token, ms (default: " + d.prefillMsPerToken()
                        + ")",
                "--decode-base-ms X             time of one decode step, ms (default: " + d.decodeBaseMs() + ")",
                "--decode-ms-per-seq X          added to a decode step per running sequence, ms (default: "
                        + d.decodeMsPerSequence() + ")",
                "--default-max-tokens N         output tokens when a request sets none (default: " + d.defaultMaxTokens()
                        + ")",
                "--kv-cache-tokens N            KV cache size in tokens (default: " + d.kvCacheTokens() + ")",
                "--prefix-cache-entries N       conversations kept in the prefix cache, LRU (default: "
                        + d.prefixCacheEntries() + ")",
                "--seed N                       seed of its random draws (default: " + d.seed() + ")",
                "--error-rate X                 fraction of requests answered 500 at once, in [0, 1] (default: 0)",
                "--slowdown X                   factor on prefill and decode step times, > 0 (default: 1)",
                "--hang                         accept requests and never answer (default: off)",
                "--crash-after-tokens N         close the connection after N output tokens, -1 for never (default: -1)",
                "--corrupt-stream none|truncate|malformed  what becomes of a stream after its first token"
                        + " (default: none)",
                "--network-rtt-ms CLUSTER=MS,...  the round trip it emulates per gateway cluster (default: none)",
                "--scheduling-policy fcfs|priority  order of its waiting queue, as vLLM's (default: fcfs)",
                "--tls-cert-file PEM            serve HTTPS with this certificate chain (with --tls-key-file)",
                "--tls-key-file PEM             the certificate's private key",
                "--admin-token-file FILE        bearer token required on /admin/faults (default: loopback only)",
                "--request-header-timeout D     for a request's head (default: "
                        + l.client().requestHeaderTimeout().toSeconds() + "s)",
                "--request-body-timeout D       for a request's body (default: "
                        + l.client().requestBodyTimeout().toSeconds() + "s)",
                "--max-header-bytes N           largest request head, bytes (default: " + l.client().maxHeaderBytes()
                        + ")",
                "--max-connections N            most open client connections (default: " + l.maxConnections() + ")",
                "--max-buffered-body-bytes N    most request body bytes held at once (default: "
                        + l.maxBufferedBodyBytes() + ")");
    }

    /**
     * Runs one engine until the process is stopped. Options (all optional): {@code --id ID --host ADDR --port N
     * --model NAME (repeatable) --max-seqs N --prefill-ms-per-token X --decode-base-ms X --decode-ms-per-seq X
     * --default-max-tokens N --kv-cache-tokens N --prefix-cache-entries N --seed N --error-rate X --slowdown X
     * --hang --crash-after-tokens N --corrupt-stream none|truncate|malformed --network-rtt-ms CLUSTER=MS,…
     * --scheduling-policy fcfs|priority}, and for
     * security
     * {@code --tls-cert-file PEM --tls-key-file PEM} (serve HTTPS) and {@code --admin-token-file FILE} (require that
     * bearer token on {@code /admin/faults}, which without it answers loopback clients only; the token itself is
     * never an option, so it does not show in the process list), and for its listener {@code --request-header-timeout
     * D --request-body-timeout D --max-header-bytes N --max-connections N --max-buffered-body-bytes N}
     * ({@link ListenerLimits#engine()}).
     */
    public static void main(String[] args) throws InterruptedException {
        EngineConfig config;
        ServerTls tls;
        BearerToken adminToken;
        ListenerLimits limits;
        try {
            List<String> rest = new ArrayList<>();
            java.util.Map<String, String> security = securityOptions(args, rest);
            config = parseArgs(rest.toArray(new String[0]));
            String cert = security.get("--tls-cert-file");
            String key = security.get("--tls-key-file");
            tls = cert == null && key == null ? null
                    : new ServerTls(cert == null ? null : java.nio.file.Path.of(cert),
                            key == null ? null : java.nio.file.Path.of(key), null);
            adminToken = security.containsKey("--admin-token-file")
                    ? tokenFile(java.nio.file.Path.of(security.get("--admin-token-file"))) : null;
            limits = limits(security);
        } catch (IllegalArgumentException e) {
            System.err.println("engine: " + e.getMessage());
            System.exit(2);
            return;
        }
        EngineEmulator engine = start(config, tls, adminToken, limits);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            engine.close();
            stopped.countDown();
        }, "engine-shutdown"));
        System.out.println("engine " + config.engineId() + " serving " + config.models() + " on "
                + (tls == null ? "http" : "https") + "://"
                + config.host() + ":" + engine.port());
        stopped.await();
    }

    /** The options of the listener: its TLS, its admin token and its limits ({@link #limits}). */
    static final java.util.Set<String> LISTENER_OPTIONS = java.util.Set.of("--tls-cert-file", "--tls-key-file",
            "--admin-token-file", "--request-header-timeout", "--request-body-timeout", "--max-header-bytes",
            "--max-connections", "--max-buffered-body-bytes");

    /**
     * The listener's limits: {@link ListenerLimits#engine()} with the options given; a bad value is an
     * {@link IllegalArgumentException} naming its field.
     */
    static ListenerLimits limits(java.util.Map<String, String> options) {
        ListenerLimits d = ListenerLimits.engine();
        dev.sextant.server.internal.ClientLimits c = d.client();
        String head = options.get("--request-header-timeout");
        String body = options.get("--request-body-timeout");
        return new ListenerLimits(new dev.sextant.server.internal.ClientLimits(
                head == null ? c.requestHeaderTimeout() : Http.duration("request_header_timeout", head),
                body == null ? c.requestBodyTimeout() : Http.duration("request_body_timeout", body),
                (int) whole(options, "--max-header-bytes", c.maxHeaderBytes())),
                (int) whole(options, "--max-connections", d.maxConnections()),
                whole(options, "--max-buffered-body-bytes", d.maxBufferedBodyBytes()));
    }

    private static long whole(java.util.Map<String, String> options, String option, long dflt) {
        String v = options.get(option);
        if (v == null) {
            return dflt;
        }
        try {
            return Long.parseLong(v.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option.substring(2).replace('-', '_') + ": " + v
                    + " (expected: a whole number)");
        }
    }

    /** Takes the listener's options out of {@code args} (into the map), the others into {@code rest}. */
    static java.util.Map<String, String> securityOptions(String[] args, List<String> rest) {
        java.util.Map<String, String> out = new java.util.HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String option = args[i];
            int eq = option.indexOf('=');
            String name = eq > 0 ? option.substring(0, eq) : option;
            if (!LISTENER_OPTIONS.contains(name)) {
                rest.add(option);
                continue;
            }
            if (eq > 0) {
                out.put(name, option.substring(eq + 1));
            } else if (i + 1 < args.length) {
                out.put(name, args[++i]);
            } else {
                throw new IllegalArgumentException(name + ": missing value");
            }
        }
        return out;
    }

    /** The tokens of {@code --admin-token-file}; a problem is an {@link IllegalArgumentException} naming the option. */
    static BearerToken tokenFile(java.nio.file.Path file) {
        try {
            return BearerToken.file(file);
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("--admin-token-file: cannot read " + file + ": " + e.getMessage());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--admin-token-file: " + file + ": " + e.getMessage());
        }
    }

    /** The options {@link #parseArgs} takes that have a value ({@code --hang} alone has none). */
    private static final java.util.Set<String> VALUE_OPTIONS = java.util.Set.of("--id", "--host", "--port", "--model",
            "--max-seqs", "--prefill-ms-per-token", "--decode-base-ms", "--decode-ms-per-seq", "--default-max-tokens",
            "--kv-cache-tokens", "--prefix-cache-entries", "--seed", "--error-rate", "--slowdown", "--crash-after-tokens",
            "--corrupt-stream", "--network-rtt-ms", "--scheduling-policy");

    static EngineConfig parseArgs(String[] args) {
        EngineConfig d = EngineConfig.defaults("engine-0", "emulated-model");
        String id = d.engineId();
        String host = d.host();
        int port = 8000;
        List<String> models = new ArrayList<>();
        int maxSeqs = d.maxSequences();
        double prefill = d.prefillMsPerToken();
        double base = d.decodeBaseMs();
        double perSeq = d.decodeMsPerSequence();
        int defaultMax = d.defaultMaxTokens();
        int kv = d.kvCacheTokens();
        int prefixEntries = d.prefixCacheEntries();
        long seed = d.seed();
        double errorRate = 0;
        double slowdown = 1;
        boolean hang = false;
        int crash = -1;
        Faults.Corruption corrupt = Faults.Corruption.NONE;
        java.util.Map<String, Double> rtts = java.util.Map.of();
        boolean byPriority = false;
        for (int i = 0; i < args.length; i++) {
            String option = args[i];
            String value = null;
            int eq = option.indexOf('=');
            if (eq > 0) {
                value = option.substring(eq + 1);
                option = option.substring(0, eq);
            }
            if (option.equals("--hang")) {
                hang = value == null || Boolean.parseBoolean(value);
                continue;
            }
            if (!VALUE_OPTIONS.contains(option)) { // before looking for its value, which an unknown one may not have
                throw new IllegalArgumentException(option + ": unknown option (expected one of --hang, "
                        + String.join(", ", new java.util.TreeSet<>(VALUE_OPTIONS)) + ")");
            }
            if (value == null) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(option + ": missing value");
                }
                value = args[++i];
            }
            try {
                switch (option) {
                    case "--id" -> id = value;
                    case "--host" -> host = value;
                    case "--port" -> port = Integer.parseInt(value);
                    case "--model" -> models.add(value);
                    case "--max-seqs" -> maxSeqs = Integer.parseInt(value);
                    case "--prefill-ms-per-token" -> prefill = Double.parseDouble(value);
                    case "--decode-base-ms" -> base = Double.parseDouble(value);
                    case "--decode-ms-per-seq" -> perSeq = Double.parseDouble(value);
                    case "--default-max-tokens" -> defaultMax = Integer.parseInt(value);
                    case "--kv-cache-tokens" -> kv = Integer.parseInt(value);
                    case "--prefix-cache-entries" -> prefixEntries = Integer.parseInt(value);
                    case "--seed" -> seed = Long.parseLong(value);
                    case "--error-rate" -> errorRate = Double.parseDouble(value);
                    case "--slowdown" -> slowdown = Double.parseDouble(value);
                    case "--crash-after-tokens" -> crash = Integer.parseInt(value);
                    case "--corrupt-stream" -> corrupt = Faults.Corruption.parse(value);
                    case "--network-rtt-ms" -> rtts = roundTrips(value);
                    case "--scheduling-policy" -> byPriority = schedulingPolicy(value);
                    default -> throw new IllegalArgumentException(option + ": unknown option");
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(option + ": " + value + " (expected: a number)");
            }
        }
        return new EngineConfig(id, host, port, models.isEmpty() ? d.models() : models, maxSeqs, prefill, base,
                perSeq, defaultMax, kv, prefixEntries, d.embeddingDimensions(), seed,
                new Faults(errorRate, slowdown, hang, crash, corrupt), rtts, byPriority);
    }

    /** {@code --scheduling-policy fcfs|priority}, as vLLM names its scheduling policies: true for priority. */
    static boolean schedulingPolicy(String value) {
        return switch (value) {
            case "fcfs" -> false;
            case "priority" -> true;
            default -> throw new IllegalArgumentException("--scheduling-policy: '" + value
                    + "' (expected: fcfs or priority)");
        };
    }

    /**
     * {@code --network-rtt-ms east=60,eu=140,default=5}: gateway cluster id → round trip in ms (an empty value: none);
     * the values' range is {@link EngineConfig}'s to check.
     */
    static java.util.Map<String, Double> roundTrips(String value) {
        java.util.Map<String, Double> out = new java.util.LinkedHashMap<>();
        if (value.isBlank()) {
            return out;
        }
        for (String pair : value.split(",", -1)) {
            int eq = pair.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("--network-rtt-ms: '" + pair + "' (expected: CLUSTER=MS pairs"
                        + " separated by commas, such as east=60,eu=140)");
            }
            String ms = pair.substring(eq + 1).trim();
            try {
                out.put(pair.substring(0, eq).trim(), Double.parseDouble(ms));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--network-rtt-ms: '" + pair + "' (expected: CLUSTER=MS with MS a"
                        + " number of milliseconds >= 0)");
            }
        }
        return out;
    }
}
