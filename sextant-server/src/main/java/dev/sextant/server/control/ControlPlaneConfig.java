package dev.sextant.server.control;

import dev.sextant.server.auth.BearerToken;
import dev.sextant.server.internal.Http;
import dev.sextant.server.tls.ClientTls;
import dev.sextant.server.tls.ServerTls;
import java.nio.file.Path;
import java.time.Duration;

/**
 * How a control plane runs.
 *
 * @param topologyFile     the topology YAML, watched for changes
 * @param host             address to bind
 * @param port             port to bind, 0 = ephemeral
 * @param token            bearer token(s) required by the snapshot, report and explain endpoints (a token file is
 *                         read again when it changes)
 * @param solveInterval    re-solve at least this often, &gt; 0
 * @param watchInterval    how often the topology file and the signals are checked for changes, &gt; 0
 * @param scrapeInterval   how often each engine's {@code /metrics} is scraped, &gt; 0
 * @param scrapeTimeout    timeout of one scrape, &gt; 0
 * @param missedScrapes    consecutive failed scrapes after which an engine is unhealthy (health 0), ≥ 1
 * @param weightHysteresis publish a new snapshot only when some weight or shed fraction moved by more than this
 *                         (or engines, classes or health changed), in [0, 1]
 * @param ttftOutlierFactor an engine whose measured TTFT exceeds this × its profile's TTFT at its planned load is
 *                         penalized, &gt; 1
 * @param errorRateLimit   an engine whose gateways see more than this fraction of errors is penalized, in (0, 1]
 * @param demand           {@code configured}, {@code observed} or {@code max} (per class, the larger of the two)
 * @param maxWait          longest long-poll the server holds open, &gt; 0
 * @param tls              TLS on its listener (then its URL is {@code https://…}), or null for plain HTTP
 * @param engineTls        how {@code https} engine endpoints are verified when scraped, or null for the JDK's
 *                         default CAs
 * @param stateFile        where each published snapshot is kept, so that a restarted control plane goes on from it
 *                         (its version, and its slot tables for cache affinity), or null to keep none
 */
public record ControlPlaneConfig(Path topologyFile, String host, int port, BearerToken token, Duration solveInterval,
                                 Duration watchInterval, Duration scrapeInterval, Duration scrapeTimeout,
                                 int missedScrapes, double weightHysteresis, double ttftOutlierFactor,
                                 double errorRateLimit, String demand, Duration maxWait, ServerTls tls,
                                 ClientTls engineTls, Path stateFile) {
    public ControlPlaneConfig {
        if (topologyFile == null) {
            throw new IllegalArgumentException("topology: missing (expected: a topology YAML file)");
        }
        if (token == null) {
            throw new IllegalArgumentException("token: missing (expected: a bearer token, from token_file or SEXTANT_TOKEN)");
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
        Http.positive("max_wait", maxWait);
        if (missedScrapes < 1) {
            throw new IllegalArgumentException("missed_scrapes: " + missedScrapes + " (expected: >= 1)");
        }
        if (!(weightHysteresis >= 0 && weightHysteresis <= 1)) {
            throw new IllegalArgumentException("weight_hysteresis: " + weightHysteresis + " (expected: in [0, 1])");
        }
        if (!(ttftOutlierFactor > 1)) {
            throw new IllegalArgumentException("ttft_outlier_factor: " + ttftOutlierFactor + " (expected: > 1)");
        }
        if (!(errorRateLimit > 0 && errorRateLimit <= 1)) {
            throw new IllegalArgumentException("error_rate_limit: " + errorRateLimit + " (expected: in (0, 1])");
        }
        if (!"configured".equals(demand) && !"observed".equals(demand) && !"max".equals(demand)) {
            throw new IllegalArgumentException("demand: " + demand + " (expected: configured, observed or max)");
        }
    }

    /**
     * Loopback, ephemeral port; solve every 10 s; check for changes every 1 s; scrape every 2 s with a 1 s
     * timeout; unhealthy after 3 missed scrapes; hysteresis 0.02; TTFT outlier factor 5; error rate limit 0.2;
     * demand {@code max}; long-polls up to 60 s.
     */
    public static ControlPlaneConfig defaults(Path topologyFile, String token) {
        return new ControlPlaneConfig(topologyFile, "127.0.0.1", 0, BearerToken.of(token), Duration.ofSeconds(10),
                Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(1), 3, 0.02, 5.0, 0.2, "max",
                Duration.ofSeconds(60), null, null, null);
    }

    /** With {@code file} as the state file (null: none). */
    public ControlPlaneConfig withStateFile(Path file) {
        return new ControlPlaneConfig(topologyFile, host, port, token, solveInterval, watchInterval, scrapeInterval,
                scrapeTimeout, missedScrapes, weightHysteresis, ttftOutlierFactor, errorRateLimit, demand, maxWait, tls,
                engineTls, file);
    }

    /** With {@code newToken} (e.g. one read from a file, which may change). */
    public ControlPlaneConfig withToken(BearerToken newToken) {
        return new ControlPlaneConfig(topologyFile, host, port, newToken, solveInterval, watchInterval, scrapeInterval,
                scrapeTimeout, missedScrapes, weightHysteresis, ttftOutlierFactor, errorRateLimit, demand, maxWait, tls,
                engineTls, stateFile);
    }

    /** With another address. */
    public ControlPlaneConfig withAddress(String newHost, int newPort) {
        return new ControlPlaneConfig(topologyFile, newHost, newPort, token, solveInterval, watchInterval,
                scrapeInterval, scrapeTimeout, missedScrapes, weightHysteresis, ttftOutlierFactor, errorRateLimit,
                demand, maxWait, tls, engineTls, stateFile);
    }

    /** With other intervals. */
    public ControlPlaneConfig withIntervals(Duration solve, Duration watch, Duration scrape, Duration timeout,
                                            int misses) {
        return new ControlPlaneConfig(topologyFile, host, port, token, solve, watch, scrape, timeout, misses,
                weightHysteresis, ttftOutlierFactor, errorRateLimit, demand, maxWait, tls, engineTls, stateFile);
    }

    /** With another demand source. */
    public ControlPlaneConfig withDemand(String newDemand) {
        return new ControlPlaneConfig(topologyFile, host, port, token, solveInterval, watchInterval, scrapeInterval,
                scrapeTimeout, missedScrapes, weightHysteresis, ttftOutlierFactor, errorRateLimit, newDemand, maxWait, tls,
                engineTls, stateFile);
    }

    /**
     * With TLS on the listener ({@code serverTls}, null for plain HTTP) and for scraping {@code https} engines
     * ({@code engines}, null for the JDK's default CAs).
     */
    public ControlPlaneConfig withTls(ServerTls serverTls, ClientTls engines) {
        return new ControlPlaneConfig(topologyFile, host, port, token, solveInterval, watchInterval, scrapeInterval,
                scrapeTimeout, missedScrapes, weightHysteresis, ttftOutlierFactor, errorRateLimit, demand, maxWait,
                serverTls, engines, stateFile);
    }

    /** Never the token: a config printed or logged must not leak it. */
    @Override
    public String toString() {
        return "ControlPlaneConfig[topologyFile=" + topologyFile + ", host=" + host + ", port=" + port
                + ", token=(redacted), solveInterval=" + solveInterval + ", watchInterval=" + watchInterval
                + ", scrapeInterval=" + scrapeInterval + ", scrapeTimeout=" + scrapeTimeout + ", missedScrapes="
                + missedScrapes + ", weightHysteresis=" + weightHysteresis + ", ttftOutlierFactor=" + ttftOutlierFactor
                + ", errorRateLimit=" + errorRateLimit + ", demand=" + demand + ", maxWait=" + maxWait + ", tls=" + tls
                + ", engineTls=" + engineTls + ", stateFile=" + stateFile + "]";
    }
}
