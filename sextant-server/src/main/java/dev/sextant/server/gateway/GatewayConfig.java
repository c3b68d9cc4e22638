package dev.sextant.server.gateway;

import dev.sextant.server.internal.ClientLimits;
import dev.sextant.server.internal.ListenerLimits;
import dev.sextant.request.DataPlaneOptions;
import dev.sextant.server.auth.BearerToken;
import dev.sextant.server.internal.Http;
import dev.sextant.server.tls.ClientTls;
import dev.sextant.server.tls.ServerTls;
import java.net.URI;
import java.time.Duration;

/**
 * How a gateway runs. Build with {@link #builder(String)}, or {@link #defaults(String)} and the withers.
 *
 * @param gatewayCluster  the gateway cluster whose routes it serves, non-empty
 * @param host            address to bind
 * @param port            port to bind, 0 = ephemeral
 * @param maxBodyBytes    largest request body, bytes &gt; 0 (default 16 MiB; larger → 413)
 * @param connectTimeout  to open a connection to an engine
 * @param firstTokenTimeout a streaming request: from its request written to the engine to the engine's first event
 *                        (default 60 s); a non-streaming answer arrives whole, so only {@code totalTimeout} bounds it
 * @param idleTimeout     between two parts of the request taken by the engine; between two chunks of an answer
 *                        (default 30 s)
 * @param totalTimeout    whole request, all attempts (default 10 min, as long as the OpenAI SDKs wait)
 * @param drain           how it stops: a window serving while not ready, then a bounded wait for in-flight requests
 * @param controlPlane    base URL reports are sent to, or null (no reports)
 * @param token           bearer token for the control plane (a token file is read again when it changes), or null
 * @param reportInterval  how often the signal reports are sent
 * @param accessLog       one log line per request when true
 * @param options         the data plane's tunables
 * @param tls             TLS on its own listener, or null for plain HTTP
 * @param clientTls       how {@code https} control planes and engines are verified (and the client certificate
 *                        shown to them), or null for the JDK's default CAs and no client certificate
 * @param clientLimits    timeouts and size limits for what clients send before a request is whole
 * @param http2           whether clients may speak HTTP/2 (h2c on a plain listener, h2 by ALPN with TLS) besides
 *                        HTTP/1.1; engines are always spoken to in HTTP/1.1
 * @param maxConcurrentStreams most streams one HTTP/2 client connection may have open at once, ≥ 1 (default
 *                        {@value #DEFAULT_MAX_CONCURRENT_STREAMS}); a stream over it is refused with
 *                        {@code RST_STREAM REFUSED_STREAM}, which a client may retry
 * @param engineToken     sent to engines as {@code Authorization: Bearer …} instead of the client's header (engines that
 *                        require an API key, as vLLM's {@code --api-key}; a token file is read again when it
 *                        changes), or null to pass the client's {@code Authorization} on
 * @param snapshotCache   a file the gateway writes every snapshot it takes to (atomically), and starts from when the
 *                        control plane does not answer at start (its age counted from the file's time, so an old one
 *                        starts in fallback mode); or null
 * @param busyPoll        whether the event loops poll their sockets without ever sleeping (HAProxy's
 *                        {@code busy-polling}): each loop then keeps its core busy all the time, and a request that
 *                        arrives never waits for the loop's thread to be woken (default false)
 * @param probeInterval   how often a gateway with a control plane probes the round trip to each engine cluster of its
 *                        snapshot ({@code GET <endpoint>/health} to one of its engines in turn), ≥ 0 (default
 *                        {@link #DEFAULT_PROBE_INTERVAL}); zero: no probes
 * @param engineKeepAlive how long a connection to an engine may stay idle and still be reused, &gt; 0 (default
 *                        {@link #DEFAULT_ENGINE_KEEP_ALIVE}); keep it below the engines' own keep-alive timeout, so that
 *                        a request is not sent on a connection the engine is closing
 * @param classTimeouts   the timeouts of the classes that do not take the gateway's own, by class id
 * @param tenantsFile     the tenants file (API keys, what each tenant may send and its limits), read again when it
 *                        changes; null for an open gateway, which takes requests from anyone ({@code docs/tenants.md})
 * @param residency       the regions everything this gateway receives must stay in, whoever sends it; empty for no
 *                        such requirement. A request's residency is narrowed to it ({@code docs/tenants.md})
 * @param maxConnections  client connections open at once on its listener, 1..1,000,000 (default
 *                        {@value #DEFAULT_MAX_CONNECTIONS}); one more is closed as soon as it is accepted
 * @param maxBufferedBodyBytes request body bytes held at once over all client connections and streams while bodies
 *                        arrive, ≥ {@code maxBodyBytes} (default {@value #DEFAULT_MAX_BUFFERED_BODY_BYTES}); a request
 *                        whose body does not fit is answered 503 with {@code Retry-After} before its body is read
 */
public record GatewayConfig(String gatewayCluster, String host, int port, int maxBodyBytes, Duration connectTimeout,
                            Duration firstTokenTimeout, Duration idleTimeout, Duration totalTimeout,
                            Drain drain, URI controlPlane, BearerToken token, Duration reportInterval,
                            boolean accessLog, DataPlaneOptions options, ServerTls tls, ClientTls clientTls,
                            ClientLimits clientLimits, boolean http2, int maxConcurrentStreams, BearerToken engineToken,
                            java.nio.file.Path snapshotCache, boolean busyPoll, Duration probeInterval,
                            Duration engineKeepAlive, java.util.Map<String, RequestTimeouts> classTimeouts,
                            java.nio.file.Path tenantsFile, java.util.List<String> residency,
                            int maxConnections, long maxBufferedBodyBytes) {
    /** The default body limit, 16 MiB. */
    public static final int DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;
    /** The default limit of open streams per HTTP/2 connection, 100 (RFC 9113 §6.5.2 asks for no fewer). */
    public static final int DEFAULT_MAX_CONCURRENT_STREAMS = 100;
    /** The default time between two rounds of round-trip probes, 5 s. */
    public static final Duration DEFAULT_PROBE_INTERVAL = Duration.ofSeconds(5);
    /**
     * The default longest idle time of a reused engine connection, 4 s: below uvicorn's keep-alive timeout of 5 s, which
     * vLLM and SGLang serve with.
     */
    public static final Duration DEFAULT_ENGINE_KEEP_ALIVE = Duration.ofSeconds(4);
    /** The default cap on open client connections, 16,384 (each request also holds an engine connection). */
    public static final int DEFAULT_MAX_CONNECTIONS = 16384;
    /** The default budget of request bodies held while they arrive, 256 MiB (16 bodies of the default limit). */
    public static final long DEFAULT_MAX_BUFFERED_BODY_BYTES = 256L << 20;

    public GatewayConfig {
        if (gatewayCluster == null || gatewayCluster.isBlank()) {
            throw new IllegalArgumentException("gateway_cluster: missing (expected: a gateway cluster id)");
        }
        if (host == null || host.isBlank()) {
            throw new IllegalArgumentException("host: '" + (host == null ? "" : host) + "' (expected: an address to bind,"
                    + " such as 127.0.0.1 or 0.0.0.0)");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port: " + port + " (expected: 0..65535)");
        }
        if (maxBodyBytes <= 0) {
            throw new IllegalArgumentException("max_body_bytes: " + maxBodyBytes + " (expected: > 0)");
        }
        Http.positive("connect_timeout", connectTimeout);
        Http.positive("first_token_timeout", firstTokenTimeout);
        Http.positive("idle_timeout", idleTimeout);
        Http.positive("total_timeout", totalTimeout);
        if (drain == null) {
            throw new IllegalArgumentException("drain: missing (expected: a drain window and timeout)");
        }
        Http.positive("report_interval", reportInterval);
        if (options == null) {
            throw new IllegalArgumentException("options: missing (expected: data plane options)");
        }
        if (clientLimits == null) {
            throw new IllegalArgumentException("client_limits: missing (expected: client limits)");
        }
        if (maxConcurrentStreams < 1) {
            throw new IllegalArgumentException("max_concurrent_streams: " + maxConcurrentStreams + " (expected: >= 1)");
        }
        if (probeInterval == null || probeInterval.isNegative()) {
            throw new IllegalArgumentException("probe_interval: " + (probeInterval == null ? "missing"
                    : probeInterval.toMillis() + "ms") + " (expected: >= 0, 0s for no probes)");
        }
        Http.positive("engine_keep_alive", engineKeepAlive);
        if (classTimeouts == null) {
            throw new IllegalArgumentException("class_timeouts: missing (expected: a map of class id to timeouts)");
        }
        classTimeouts = java.util.Map.copyOf(classTimeouts);
        residency = residency == null ? java.util.List.of() : java.util.List.copyOf(residency);
        for (String r : residency) {
            if (r.isBlank()) {
                throw new IllegalArgumentException("residency: a blank region (expected: region ids)");
            }
        }
        ListenerLimits checked = new ListenerLimits(clientLimits, maxConnections, maxBufferedBodyBytes);
        if (checked.maxBufferedBodyBytes() < maxBodyBytes) {
            throw new IllegalArgumentException("max_buffered_body_bytes: " + maxBufferedBodyBytes + " (expected: >= "
                    + maxBodyBytes + ", max_body_bytes)");
        }
    }

    /** What its client listener allows each connection and all of them together. */
    public ListenerLimits limits() {
        return new ListenerLimits(clientLimits, maxConnections, maxBufferedBodyBytes);
    }

    /** With other listener limits: per connection, open connections, bodies held. */
    public GatewayConfig withLimits(ListenerLimits limits) {
        return toBuilder().clientLimits(limits.client()).maxConnections(limits.maxConnections())
                .maxBufferedBodyBytes(limits.maxBufferedBodyBytes()).build();
    }

    /** The timeouts of a request of class {@code classId}: its class's, else the gateway's. */
    public RequestTimeouts timeouts(String classId) {
        RequestTimeouts own = classId == null ? null : classTimeouts.get(classId);
        return own != null ? own : new RequestTimeouts(firstTokenTimeout, idleTimeout, totalTimeout);
    }

    /**
     * Loopback, ephemeral port, 16 MiB, timeouts 2 s connect / 60 s first token / 30 s idle / 10 min total, engine
     * connections reused while idle for less than 4 s.
     */
    public static GatewayConfig defaults(String gatewayCluster) {
        return new GatewayConfig(gatewayCluster, "127.0.0.1", 0, DEFAULT_MAX_BODY_BYTES, Duration.ofSeconds(2),
                Duration.ofSeconds(60), Duration.ofSeconds(30), Duration.ofMinutes(10), Drain.immediate(), null,
                null, Duration.ofSeconds(5), true, DataPlaneOptions.defaults(), null, null,
                ClientLimits.defaults(), true, DEFAULT_MAX_CONCURRENT_STREAMS, null, null, false,
                DEFAULT_PROBE_INTERVAL, DEFAULT_ENGINE_KEEP_ALIVE, java.util.Map.of(), null, java.util.List.of(),
                DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_BUFFERED_BODY_BYTES);
    }

    /** With another address. */
    public GatewayConfig withAddress(String newHost, int newPort) {
        return toBuilder().host(newHost).port(newPort).build();
    }

    /** With another body limit. */
    public GatewayConfig withMaxBodyBytes(int bytes) {
        return toBuilder().maxBodyBytes(bytes).build();
    }

    /** With other timeouts: to connect, to a stream's first token, idle, and the whole request's. */
    public GatewayConfig withTimeouts(Duration connect, Duration firstToken, Duration idle, Duration total) {
        return toBuilder().connectTimeout(connect).firstTokenTimeout(firstToken).idleTimeout(idle)
                .totalTimeout(total).build();
    }

    /** With another way of stopping: a drain window (≥ 0) and a drain timeout (&gt; 0). */
    public GatewayConfig withDrain(Drain newDrain) {
        return toBuilder().drain(newDrain).build();
    }

    /** With a control plane to report to, and its token (or null). */
    public GatewayConfig withControlPlane(URI uri, String newToken, Duration interval) {
        return withControlPlane(uri, newToken == null ? null : BearerToken.of(newToken), interval);
    }

    /** With a control plane to report to, and its token (or null; a token file is read again when it changes). */
    public GatewayConfig withControlPlane(URI uri, BearerToken newToken, Duration interval) {
        return toBuilder().controlPlane(uri).token(newToken).reportInterval(interval).build();
    }

    /** With or without the access log. */
    public GatewayConfig withAccessLog(boolean on) {
        return toBuilder().accessLog(on).build();
    }

    /** With other data plane options. */
    public GatewayConfig withOptions(DataPlaneOptions newOptions) {
        return toBuilder().options(newOptions).build();
    }

    /**
     * With TLS on its listener ({@code serverTls}, null for plain HTTP) and for its connections to {@code https}
     * control planes and engines ({@code client}, null for the JDK's default CAs).
     */
    public GatewayConfig withTls(ServerTls serverTls, ClientTls client) {
        return toBuilder().tls(serverTls).clientTls(client).build();
    }

    /** With other client limits (request head and body timeouts, head size). */
    public GatewayConfig withClientLimits(ClientLimits limits) {
        return toBuilder().clientLimits(limits).build();
    }

    /** With HTTP/2 for clients on or off, and another limit of open streams per HTTP/2 connection (≥ 1). */
    public GatewayConfig withHttp2(boolean on, int streamsPerConnection) {
        return toBuilder().http2(on).maxConcurrentStreams(streamsPerConnection).build();
    }

    /**
     * With the token sent to engines as {@code Authorization: Bearer …} in place of the client's own header (an engine
     * started with vLLM's {@code --api-key}); null to pass the client's on, as by default.
     */
    public GatewayConfig withEngineToken(BearerToken newEngineToken) {
        return toBuilder().engineToken(newEngineToken).build();
    }

    /** With a file that keeps the last snapshot, to start from when the control plane cannot be reached; or null. */
    public GatewayConfig withSnapshotCache(java.nio.file.Path file) {
        return toBuilder().snapshotCache(file).build();
    }

    /** With event loops that poll without sleeping, or that sleep while they have nothing to do (the default). */
    public GatewayConfig withBusyPoll(boolean on) {
        return toBuilder().busyPoll(on).build();
    }

    /** With round-trip probes every {@code interval} (≥ 0; zero: none). */
    public GatewayConfig withProbeInterval(Duration interval) {
        return toBuilder().probeInterval(interval).build();
    }

    /** With the longest idle time of a reused engine connection (&gt; 0). */
    public GatewayConfig withEngineKeepAlive(Duration idle) {
        return toBuilder().engineKeepAlive(idle).build();
    }

    /** With timeouts of their own for the classes of {@code byClass} (class id → timeouts); the others take the gateway's. */
    public GatewayConfig withClassTimeouts(java.util.Map<String, RequestTimeouts> byClass) {
        return toBuilder().classTimeouts(byClass).build();
    }

    /** A builder starting from {@link #defaults}'s values for {@code gatewayCluster}. */
    public static Builder builder(String gatewayCluster) {
        return defaults(gatewayCluster).toBuilder();
    }

    /** A builder starting from this config. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.gatewayCluster = gatewayCluster;
        b.host = host;
        b.port = port;
        b.maxBodyBytes = maxBodyBytes;
        b.connectTimeout = connectTimeout;
        b.firstTokenTimeout = firstTokenTimeout;
        b.idleTimeout = idleTimeout;
        b.totalTimeout = totalTimeout;
        b.drain = drain;
        b.controlPlane = controlPlane;
        b.token = token;
        b.reportInterval = reportInterval;
        b.accessLog = accessLog;
        b.options = options;
        b.tls = tls;
        b.clientTls = clientTls;
        b.clientLimits = clientLimits;
        b.http2 = http2;
        b.maxConcurrentStreams = maxConcurrentStreams;
        b.engineToken = engineToken;
        b.snapshotCache = snapshotCache;
        b.busyPoll = busyPoll;
        b.probeInterval = probeInterval;
        b.engineKeepAlive = engineKeepAlive;
        b.classTimeouts = classTimeouts;
        b.tenantsFile = tenantsFile;
        b.residency = residency;
        b.maxConnections = maxConnections;
        b.maxBufferedBodyBytes = maxBufferedBodyBytes;
        return b;
    }

    /**
     * Builds a {@link GatewayConfig}, one setter per component, named as the component. {@link #build}
     * checks the whole config as the constructor does, and an error names the field as the config file spells it.
     */
    public static final class Builder {
        private String gatewayCluster;
        private String host;
        private int port;
        private int maxBodyBytes;
        private Duration connectTimeout;
        private Duration firstTokenTimeout;
        private Duration idleTimeout;
        private Duration totalTimeout;
        private Drain drain;
        private URI controlPlane;
        private BearerToken token;
        private Duration reportInterval;
        private boolean accessLog;
        private DataPlaneOptions options;
        private ServerTls tls;
        private ClientTls clientTls;
        private ClientLimits clientLimits;
        private boolean http2;
        private int maxConcurrentStreams;
        private BearerToken engineToken;
        private java.nio.file.Path snapshotCache;
        private boolean busyPoll;
        private Duration probeInterval;
        private Duration engineKeepAlive;
        private java.util.Map<String, RequestTimeouts> classTimeouts;
        private java.nio.file.Path tenantsFile;
        private java.util.List<String> residency;
        private int maxConnections;
        private long maxBufferedBodyBytes;

        private Builder() {
        }

        /** Sets {@link GatewayConfig#gatewayCluster()}. */
        public Builder gatewayCluster(String value) {
            this.gatewayCluster = value;
            return this;
        }

        /** Sets {@link GatewayConfig#host()}. */
        public Builder host(String value) {
            this.host = value;
            return this;
        }

        /** Sets {@link GatewayConfig#port()}. */
        public Builder port(int value) {
            this.port = value;
            return this;
        }

        /** Sets {@link GatewayConfig#maxBodyBytes()}. */
        public Builder maxBodyBytes(int value) {
            this.maxBodyBytes = value;
            return this;
        }

        /** Sets {@link GatewayConfig#connectTimeout()}. */
        public Builder connectTimeout(Duration value) {
            this.connectTimeout = value;
            return this;
        }

        /** Sets {@link GatewayConfig#firstTokenTimeout()}. */
        public Builder firstTokenTimeout(Duration value) {
            this.firstTokenTimeout = value;
            return this;
        }

        /** Sets {@link GatewayConfig#idleTimeout()}. */
        public Builder idleTimeout(Duration value) {
            this.idleTimeout = value;
            return this;
        }

        /** Sets {@link GatewayConfig#totalTimeout()}. */
        public Builder totalTimeout(Duration value) {
            this.totalTimeout = value;
            return this;
        }

        /** Sets {@link GatewayConfig#drain()}. */
        public Builder drain(Drain value) {
            this.drain = value;
            return this;
        }

        /** Sets {@link GatewayConfig#controlPlane()}. */
        public Builder controlPlane(URI value) {
            this.controlPlane = value;
            return this;
        }

        /** Sets {@link GatewayConfig#token()}. */
        public Builder token(BearerToken value) {
            this.token = value;
            return this;
        }

        /** Sets {@link GatewayConfig#reportInterval()}. */
        public Builder reportInterval(Duration value) {
            this.reportInterval = value;
            return this;
        }

        /** Sets {@link GatewayConfig#accessLog()}. */
        public Builder accessLog(boolean value) {
            this.accessLog = value;
            return this;
        }

        /** Sets {@link GatewayConfig#options()}. */
        public Builder options(DataPlaneOptions value) {
            this.options = value;
            return this;
        }

        /** Sets {@link GatewayConfig#tls()}. */
        public Builder tls(ServerTls value) {
            this.tls = value;
            return this;
        }

        /** Sets {@link GatewayConfig#clientTls()}. */
        public Builder clientTls(ClientTls value) {
            this.clientTls = value;
            return this;
        }

        /** Sets {@link GatewayConfig#clientLimits()}. */
        public Builder clientLimits(ClientLimits value) {
            this.clientLimits = value;
            return this;
        }

        /** Sets {@link GatewayConfig#http2()}. */
        public Builder http2(boolean value) {
            this.http2 = value;
            return this;
        }

        /** Sets {@link GatewayConfig#maxConcurrentStreams()}. */
        public Builder maxConcurrentStreams(int value) {
            this.maxConcurrentStreams = value;
            return this;
        }

        /** Sets {@link GatewayConfig#engineToken()}. */
        public Builder engineToken(BearerToken value) {
            this.engineToken = value;
            return this;
        }

        /** Sets {@link GatewayConfig#snapshotCache()}. */
        public Builder snapshotCache(java.nio.file.Path value) {
            this.snapshotCache = value;
            return this;
        }

        /** Sets {@link GatewayConfig#busyPoll()}. */
        public Builder busyPoll(boolean value) {
            this.busyPoll = value;
            return this;
        }

        /** Sets {@link GatewayConfig#probeInterval()}. */
        public Builder probeInterval(Duration value) {
            this.probeInterval = value;
            return this;
        }

        /** Sets {@link GatewayConfig#engineKeepAlive()}. */
        public Builder engineKeepAlive(Duration value) {
            this.engineKeepAlive = value;
            return this;
        }

        /** Sets {@link GatewayConfig#tenantsFile()}. */
        public Builder tenantsFile(java.nio.file.Path value) {
            this.tenantsFile = value;
            return this;
        }

        /** Sets {@link GatewayConfig#residency()}. */
        public Builder residency(java.util.List<String> value) {
            this.residency = value;
            return this;
        }

        /** Sets {@link GatewayConfig#classTimeouts()}. */
        public Builder classTimeouts(java.util.Map<String, RequestTimeouts> value) {
            this.classTimeouts = value;
            return this;
        }

        /** Sets {@link GatewayConfig#maxConnections()}. */
        public Builder maxConnections(int value) {
            this.maxConnections = value;
            return this;
        }

        /** Sets {@link GatewayConfig#maxBufferedBodyBytes()}. */
        public Builder maxBufferedBodyBytes(long value) {
            this.maxBufferedBodyBytes = value;
            return this;
        }

        /**
         * The config.
         *
         * @throws IllegalArgumentException naming the first field that is missing or out of range
         */
        public GatewayConfig build() {
            return new GatewayConfig(gatewayCluster, host, port, maxBodyBytes, connectTimeout, firstTokenTimeout,
                    idleTimeout, totalTimeout, drain, controlPlane, token, reportInterval, accessLog, options, tls,
                    clientTls, clientLimits, http2, maxConcurrentStreams, engineToken, snapshotCache, busyPoll,
                    probeInterval, engineKeepAlive, classTimeouts, tenantsFile, residency,
                    maxConnections, maxBufferedBodyBytes);
        }
    }

    /** Never the token: a config printed or logged must not leak it. */
    @Override
    public String toString() {
        return "GatewayConfig[gatewayCluster=" + gatewayCluster + ", host=" + host + ", port=" + port
                + ", maxBodyBytes=" + maxBodyBytes + ", connectTimeout=" + connectTimeout + ", firstTokenTimeout="
                + firstTokenTimeout + ", idleTimeout=" + idleTimeout + ", totalTimeout=" + totalTimeout
                + ", drain=" + drain + ", controlPlane=" + controlPlane + ", token="
                + (token == null ? "null" : "(redacted)") + ", reportInterval=" + reportInterval + ", accessLog="
                + accessLog + ", options=" + options + ", tls=" + tls + ", clientTls=" + clientTls + ", clientLimits=" + clientLimits
                + ", http2=" + http2 + ", maxConcurrentStreams=" + maxConcurrentStreams + ", engineToken="
                + (engineToken == null ? "null" : "(redacted)") + ", snapshotCache=" + snapshotCache + ", busyPoll=" + busyPoll
                + ", probeInterval=" + probeInterval + ", engineKeepAlive=" + engineKeepAlive + ", classTimeouts="
                + classTimeouts + ", tenantsFile=" + tenantsFile + ", residency=" + residency + ", maxConnections="
                + maxConnections + ", maxBufferedBodyBytes=" + maxBufferedBodyBytes + "]";
    }
}
