package dev.sextant.server.control;

import dev.sextant.control.ControlOptions;
import dev.sextant.server.auth.Authenticator;
import dev.sextant.server.auth.BearerToken;
import dev.sextant.server.auth.CredentialsFile;
import dev.sextant.server.internal.Http;
import dev.sextant.server.internal.ListenerLimits;
import dev.sextant.server.tls.ClientTls;
import dev.sextant.server.tls.ServerTls;
import java.nio.file.Path;
import java.time.Duration;

/**
 * How a control plane runs.
 *
 * @param topologyFile   the topology YAML, watched for changes
 * @param host           address to bind
 * @param port           port to bind, 0 = ephemeral
 * @param token          the single shared bearer token(s) of the simple mode, required by the snapshot, report and
 *                       explain endpoints (a token file is read again when it changes); null with {@code credentials}
 * @param solveInterval  step the control loop (estimate, solve, decide) at least this often, &gt; 0; it also steps
 *                       at once when the loop says something urgent changed
 * @param watchInterval  how often the topology file, the schedule and the loop's urgency are checked, &gt; 0
 * @param scrapeInterval how often each engine's {@code /metrics} is scraped, &gt; 0
 * @param scrapeTimeout  timeout of one scrape, &gt; 0
 * @param missedScrapes  consecutive failed scrapes after which an engine that nothing else sees answering is down,
 *                       ≥ 1 ({@link ControlOptions#missedScrapes()})
 * @param errorRateLimit an engine whose gateways see at least this fraction of its attempts fail (and more than
 *                       twice its peers do) is failing, in (0, 1] ({@link ControlOptions#errorRateLimit()})
 * @param demand         {@code observed}: the gateways' reports, with the topology's demand as the prior until they
 *                       come; {@code configured}: the topology's demand only
 * @param publishGain    a new snapshot is published when it lowers the expected latency per request by more than
 *                       this fraction of the held snapshot's mean latency …, finite ≥ 0
 * @param publishGainMs  … and by more than this many ms, finite ≥ 0 (changes of the fleet's shape, an engine out
 *                       of or back in service, a held snapshot that no longer fits are published whatever the gain)
 * @param overloadTtftFactor while the fleet is short (the policy sheds), the engines the solve fills are planned no
 *                       fuller than where their estimated TTFT reaches this multiple of their idle TTFT, &gt; 1, or
 *                       infinite for no such bound ({@link ControlOptions#overloadTtftFactor()})
 * @param keepInRegion   while nothing is shed, requests leave their gateway cluster's region only for a gain above the
 *                       publication threshold ({@link ControlOptions#keepInRegion()})
 * @param demandHold     each gateway cluster's demand is planned at the most its reports showed within this long, as
 *                       far as the engines carry it ({@link ControlOptions#demandHold()}), ≥ 0, zero for no hold
 * @param canaryInterval how often an engine that must prove itself (out of service, slow, new) gets a canary
 *                       request, &gt; 0
 * @param maxWait        longest long-poll the server holds open, &gt; 0
 * @param tls            TLS on its listener (then its URL is {@code https://…}), or null for plain HTTP
 * @param engineTls      how {@code https} engine endpoints are verified when scraped and sent canaries, or null for
 *                       the JDK's default CAs
 * @param stateFile      where each published snapshot is kept, so that a restarted control plane goes on from it
 *                       (its version, and its slot tables for cache affinity), or null to keep none
 * @param limits         what its listener allows each connection and all of them together: head and body timeouts,
 *                       head size, open connections, request bodies held ({@link ListenerLimits#controlPlane()})
 * @param credentials    the credentials file (a token per gateway cluster, operators' tokens), read again when it
 *                       changes; null in the simple mode ({@code token}). Exactly one of the two is set
 * @param engineToken    sent to engines with each canary as {@code Authorization: Bearer …} (engines that require an
 *                       API key, as vLLM's {@code --api-key}: the gateways' {@code engine_token_file}), read again when
 *                       its file changes; null to send none. Scrapes go without it: vLLM's key guards {@code /v1/…}
 *                       only, not {@code /metrics}
 */
public record ControlPlaneConfig(Path topologyFile, String host, int port, BearerToken token, Duration solveInterval,
                                 Duration watchInterval, Duration scrapeInterval, Duration scrapeTimeout,
                                 int missedScrapes, double errorRateLimit, String demand, double publishGain,
                                 double publishGainMs, double overloadTtftFactor, boolean keepInRegion,
                                 Duration demandHold, Duration canaryInterval,
                                 Duration maxWait, ServerTls tls, ClientTls engineTls, Path stateFile,
                                 ListenerLimits limits, CredentialsFile credentials, BearerToken engineToken) {

    /** What {@code demand: max} was, and why it went: said when a file still has it. */
    static final String MAX_REMOVED = "removed: max made the configured demand a floor under the observed one;"
            + " with observed, the topology's demand is the prior the reports replace";

    public ControlPlaneConfig {
        if (topologyFile == null) {
            throw new IllegalArgumentException("topology: missing (expected: a topology YAML file)");
        }
        if (token == null && credentials == null) {
            throw new IllegalArgumentException("token: missing (expected: a bearer token, from token_file or "
                    + "SEXTANT_TOKEN, or a credentials_file)");
        }
        if (token != null && credentials != null) {
            throw new IllegalArgumentException("credentials_file: set with a shared token (expected: one of "
                    + "credentials_file and token_file)");
        }
        if (host == null || host.isBlank()) {
            throw new IllegalArgumentException("host: '" + (host == null ? "" : host) + "' (expected: an address to bind,"
                    + " such as 127.0.0.1 or 0.0.0.0)");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port: " + port + " (expected: 0..65535)");
        }
        Http.positive("solve_interval", solveInterval);
        Http.positive("watch_interval", watchInterval);
        Http.positive("scrape_interval", scrapeInterval);
        Http.positive("scrape_timeout", scrapeTimeout);
        Http.positive("canary_interval", canaryInterval);
        if (demandHold == null || demandHold.isNegative()) {
            throw new IllegalArgumentException("demand_hold: " + demandHold + " (expected: a duration >= 0)");
        }
        Http.positive("max_wait", maxWait);
        if (missedScrapes < 1) {
            throw new IllegalArgumentException("missed_scrapes: " + missedScrapes + " (expected: >= 1)");
        }
        if (!(errorRateLimit > 0 && errorRateLimit <= 1)) {
            throw new IllegalArgumentException("error_rate_limit: " + errorRateLimit + " (expected: in (0, 1])");
        }
        if ("max".equals(demand)) {
            throw new IllegalArgumentException("demand: max (expected: observed or configured; " + MAX_REMOVED + ")");
        }
        if (!"configured".equals(demand) && !"observed".equals(demand)) {
            throw new IllegalArgumentException("demand: " + demand + " (expected: observed or configured)");
        }
        if (!(publishGain >= 0) || Double.isInfinite(publishGain)) {
            throw new IllegalArgumentException("publish_gain: " + publishGain + " (expected: a finite number >= 0)");
        }
        if (!(publishGainMs >= 0) || Double.isInfinite(publishGainMs)) {
            throw new IllegalArgumentException("publish_gain_ms: " + publishGainMs + " (expected: a finite number >= 0)");
        }
        if (!(overloadTtftFactor > 1)) {
            throw new IllegalArgumentException("overload_ttft_factor: " + overloadTtftFactor
                    + " (expected: a number > 1, or .inf for no bound)");
        }
        if (limits == null) {
            throw new IllegalArgumentException("limits: missing (expected: the listener's limits)");
        }
        if (limits.maxBufferedBodyBytes() < ControlPlane.MAX_BODY_BYTES) {
            throw new IllegalArgumentException("max_buffered_body_bytes: " + limits.maxBufferedBodyBytes()
                    + " (expected: >= " + ControlPlane.MAX_BODY_BYTES + ", the largest report)");
        }
    }

    /**
     * Loopback, ephemeral port; step every 10 s; check for changes every 1 s; scrape every 2 s with a 1 s timeout;
     * down after 3 missed scrapes; failing at an error rate of 0.2; observed demand; publish on an expected gain
     * above 0.25% and 0.5 ms per request; while the fleet is short, engines planned no fuller than where their TTFT
     * doubles; a canary every 5 s to an engine that must prove itself; long-polls up to 60 s; the listener limits of
     * {@link ListenerLimits#controlPlane()}.
     */
    public static ControlPlaneConfig defaults(Path topologyFile, String token) {
        return builder(topologyFile, BearerToken.of(token)).build();
    }

    /** The control loop's options: its defaults with this file's settings. */
    public ControlOptions controlOptions() {
        return ControlOptions.defaults().withMissedScrapes(missedScrapes).withErrorRateLimit(errorRateLimit)
                .withObservedDemand("observed".equals(demand)).withPublishGain(publishGain, publishGainMs)
                .withCanaryInterval(canaryInterval).withOverloadTtftFactor(overloadTtftFactor)
                .withKeepInRegion(keepInRegion).withDemandHold(demandHold);
    }

    /** With other listener limits. */
    public ControlPlaneConfig withLimits(ListenerLimits newLimits) {
        return toBuilder().limits(newLimits).build();
    }

    /** With {@code file} as the state file (null: none). */
    public ControlPlaneConfig withStateFile(Path file) {
        return toBuilder().stateFile(file).build();
    }

    /** With {@code newToken} (e.g. one read from a file, which may change), the simple mode. */
    public ControlPlaneConfig withToken(BearerToken newToken) {
        return toBuilder().token(newToken).credentials(null).build();
    }

    /** With the tokens of a credentials file instead of a shared token. */
    public ControlPlaneConfig withCredentials(CredentialsFile file) {
        return toBuilder().token(null).credentials(file).build();
    }

    /** Who a request's token speaks for: the credentials file's principals, or the shared token's operator. */
    public Authenticator authenticator() {
        return credentials != null ? credentials : Authenticator.shared(token);
    }

    /** With another address. */
    public ControlPlaneConfig withAddress(String newHost, int newPort) {
        return toBuilder().host(newHost).port(newPort).build();
    }

    /** With other intervals. */
    public ControlPlaneConfig withIntervals(Duration solve, Duration watch, Duration scrape, Duration timeout,
                                            int misses) {
        return toBuilder().solveInterval(solve).watchInterval(watch).scrapeInterval(scrape)
                .scrapeTimeout(timeout).missedScrapes(misses).build();
    }

    /** With another demand source ({@code observed} or {@code configured}). */
    public ControlPlaneConfig withDemand(String newDemand) {
        return toBuilder().demand(newDemand).build();
    }

    /** With another publication threshold: a relative gain and one in ms per request. */
    public ControlPlaneConfig withPublishGain(double relative, double ms) {
        return toBuilder().publishGain(relative).publishGainMs(ms).build();
    }

    /** With another canary interval. */
    public ControlPlaneConfig withCanaryInterval(Duration interval) {
        return toBuilder().canaryInterval(interval).build();
    }

    /** With {@code token} sent to engines with each canary (null: none). */
    public ControlPlaneConfig withEngineToken(BearerToken token) {
        return toBuilder().engineToken(token).build();
    }

    /**
     * With TLS on the listener ({@code serverTls}, null for plain HTTP) and for scraping {@code https} engines
     * ({@code engines}, null for the JDK's default CAs).
     */
    public ControlPlaneConfig withTls(ServerTls serverTls, ClientTls engines) {
        return toBuilder().tls(serverTls).engineTls(engines).build();
    }

    /** A builder starting from {@link #defaults}'s values for {@code topologyFile} and {@code token}. */
    public static Builder builder(Path topologyFile, BearerToken token) {
        ControlOptions o = ControlOptions.defaults();
        return new Builder().topologyFile(topologyFile).host("127.0.0.1").port(0).token(token)
                .solveInterval(Duration.ofSeconds(10)).watchInterval(Duration.ofSeconds(1))
                .scrapeInterval(Duration.ofSeconds(2)).scrapeTimeout(Duration.ofSeconds(1))
                .missedScrapes(o.missedScrapes()).errorRateLimit(o.errorRateLimit())
                .demand(o.observedDemand() ? "observed" : "configured").publishGain(o.publishGain())
                .publishGainMs(o.publishGainMs()).overloadTtftFactor(o.overloadTtftFactor())
                .keepInRegion(o.keepInRegion()).demandHold(o.demandHold())
                .canaryInterval(o.canaryInterval()).maxWait(Duration.ofSeconds(60))
                .limits(ListenerLimits.controlPlane());
    }

    /** A builder starting from this config. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.topologyFile = topologyFile;
        b.host = host;
        b.port = port;
        b.token = token;
        b.solveInterval = solveInterval;
        b.watchInterval = watchInterval;
        b.scrapeInterval = scrapeInterval;
        b.scrapeTimeout = scrapeTimeout;
        b.missedScrapes = missedScrapes;
        b.errorRateLimit = errorRateLimit;
        b.demand = demand;
        b.publishGain = publishGain;
        b.publishGainMs = publishGainMs;
        b.overloadTtftFactor = overloadTtftFactor;
        b.keepInRegion = keepInRegion;
        b.demandHold = demandHold;
        b.canaryInterval = canaryInterval;
        b.maxWait = maxWait;
        b.tls = tls;
        b.engineTls = engineTls;
        b.stateFile = stateFile;
        b.limits = limits;
        b.credentials = credentials;
        b.engineToken = engineToken;
        return b;
    }

    /**
     * Builds a {@link ControlPlaneConfig}, one setter per component, named as the component. {@link #build}
     * checks the whole config as the constructor does, and an error names the field as the config file spells it.
     */
    public static final class Builder {
        private Path topologyFile;
        private String host;
        private int port;
        private BearerToken token;
        private Duration solveInterval;
        private Duration watchInterval;
        private Duration scrapeInterval;
        private Duration scrapeTimeout;
        private int missedScrapes;
        private double errorRateLimit;
        private String demand;
        private double publishGain;
        private double publishGainMs;
        private double overloadTtftFactor;
        private boolean keepInRegion;
        private Duration demandHold;
        private Duration canaryInterval;
        private Duration maxWait;
        private ServerTls tls;
        private ClientTls engineTls;
        private Path stateFile;
        private ListenerLimits limits;
        private CredentialsFile credentials;
        private BearerToken engineToken;

        private Builder() {
        }

        /** Sets {@link ControlPlaneConfig#topologyFile()}. */
        public Builder topologyFile(Path value) {
            this.topologyFile = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#host()}. */
        public Builder host(String value) {
            this.host = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#port()}. */
        public Builder port(int value) {
            this.port = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#token()}. */
        public Builder token(BearerToken value) {
            this.token = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#solveInterval()}. */
        public Builder solveInterval(Duration value) {
            this.solveInterval = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#watchInterval()}. */
        public Builder watchInterval(Duration value) {
            this.watchInterval = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#scrapeInterval()}. */
        public Builder scrapeInterval(Duration value) {
            this.scrapeInterval = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#scrapeTimeout()}. */
        public Builder scrapeTimeout(Duration value) {
            this.scrapeTimeout = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#missedScrapes()}. */
        public Builder missedScrapes(int value) {
            this.missedScrapes = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#errorRateLimit()}. */
        public Builder errorRateLimit(double value) {
            this.errorRateLimit = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#demand()}. */
        public Builder demand(String value) {
            this.demand = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#publishGain()}. */
        public Builder publishGain(double value) {
            this.publishGain = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#publishGainMs()}. */
        public Builder publishGainMs(double value) {
            this.publishGainMs = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#overloadTtftFactor()}. */
        public Builder overloadTtftFactor(double value) {
            this.overloadTtftFactor = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#keepInRegion()}. */
        public Builder keepInRegion(boolean value) {
            this.keepInRegion = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#demandHold()}. */
        public Builder demandHold(Duration value) {
            this.demandHold = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#canaryInterval()}. */
        public Builder canaryInterval(Duration value) {
            this.canaryInterval = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#maxWait()}. */
        public Builder maxWait(Duration value) {
            this.maxWait = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#tls()}. */
        public Builder tls(ServerTls value) {
            this.tls = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#engineTls()}. */
        public Builder engineTls(ClientTls value) {
            this.engineTls = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#stateFile()}. */
        public Builder stateFile(Path value) {
            this.stateFile = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#limits()}. */
        public Builder limits(ListenerLimits value) {
            this.limits = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#credentials()}. */
        public Builder credentials(CredentialsFile value) {
            this.credentials = value;
            return this;
        }

        /** Sets {@link ControlPlaneConfig#engineToken()}. */
        public Builder engineToken(BearerToken value) {
            this.engineToken = value;
            return this;
        }

        /**
         * The config.
         *
         * @throws IllegalArgumentException naming the first field that is missing or out of range
         */
        public ControlPlaneConfig build() {
            return new ControlPlaneConfig(topologyFile, host, port, token, solveInterval, watchInterval,
                    scrapeInterval, scrapeTimeout, missedScrapes, errorRateLimit, demand, publishGain, publishGainMs,
                    overloadTtftFactor, keepInRegion, demandHold, canaryInterval, maxWait, tls, engineTls, stateFile, limits,
                    credentials, engineToken);
        }
    }

    /** Never the token: a config printed or logged must not leak it. */
    @Override
    public String toString() {
        return "ControlPlaneConfig[topologyFile=" + topologyFile + ", host=" + host + ", port=" + port
                + ", token=" + (token == null ? "none" : "(redacted)") + ", credentials=" + credentials + ", solveInterval=" + solveInterval + ", watchInterval=" + watchInterval
                + ", scrapeInterval=" + scrapeInterval + ", scrapeTimeout=" + scrapeTimeout + ", missedScrapes="
                + missedScrapes + ", errorRateLimit=" + errorRateLimit + ", demand=" + demand + ", publishGain="
                + publishGain + ", publishGainMs=" + publishGainMs + ", overloadTtftFactor=" + overloadTtftFactor
                + ", keepInRegion=" + keepInRegion + ", demandHold=" + demandHold + ", canaryInterval=" + canaryInterval
                + ", maxWait=" + maxWait + ", tls=" + tls + ", engineTls=" + engineTls + ", stateFile=" + stateFile
                + ", limits=" + limits + ", engineToken=" + (engineToken == null ? "none" : "(redacted)") + "]";
    }
}
