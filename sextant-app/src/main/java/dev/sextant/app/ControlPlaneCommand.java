package dev.sextant.app;

import dev.sextant.config.TopologyLoader;
import dev.sextant.config.YamlTree;
import dev.sextant.server.auth.CredentialsFile;
import dev.sextant.server.control.ControlPlane;
import dev.sextant.server.control.ControlPlaneConfig;
import dev.sextant.server.internal.ListenerLimits;
import dev.sextant.topology.Topology;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code sextant control-plane --config control-plane.yaml}: the control plane process. */
@Command(name = "control-plane", mixinStandardHelpOptions = true, versionProvider = Sextant.Version.class,
        description = "Run the control plane from a config file (docs/servers.md).")
final class ControlPlaneCommand implements Callable<Integer> {
    static final Set<String> KEYS = ServerFile.withTlsKeys("topology", "host", "port", "token_file", "solve_interval",
            "watch_interval", "scrape_interval", "scrape_timeout", "missed_scrapes", "error_rate_limit", "demand",
            "publish_gain", "publish_gain_ms", "overload_ttft_factor", "keep_in_region", "demand_hold", "canary_interval",
            "max_wait",
            "state_file", "request_header_timeout", "request_body_timeout", "max_header_bytes", "max_connections",
            "max_buffered_body_bytes", "etcd", "credentials_file", "engine_token_file");
    /** Keys of older versions, refused with what replaced them. */
    static final Map<String, String> REMOVED = Map.of(
            "weight_hysteresis", "expected: publish_gain and publish_gain_ms; removed: a snapshot is published when its"
                    + " expected gain in latency per request is above that threshold, not when a weight moves",
            "ttft_outlier_factor", "expected: nothing in its place; removed: the control loop judges an engine slow"
                    + " against its group's law at the same load, and failing on its error rate");
    private final PrintWriter out;

    @Option(names = "--config", paramLabel = "CONTROL-PLANE.yaml", required = true, description = "The control plane's settings.")
    Path config;

    @Mixin
    ServerRun run;

    @Option(names = "--etcd", paramLabel = "URL[,URL…]", description = "Run as one of several control planes, "
            + "elected through these etcd members (overrides the file's etcd.endpoints; docs/etcd.md).")
    String etcd;

    @Option(names = "--check", description = "Check the file and the files it names (topology, token, TLS), print "
            + "what it configures and exit: 0 valid, 2 not. Starts nothing.")
    boolean check;

    ControlPlaneCommand(PrintWriter out) {
        this.out = out;
    }

    /** The listener's limits: the file's keys over {@code d}; a bad value names its key. */
    static ListenerLimits limits(ServerFile f, ListenerLimits d) {
        return new ListenerLimits(f.clientLimits(d.client()), f.integer("max_connections", d.maxConnections()),
                f.integer("max_buffered_body_bytes", (int) d.maxBufferedBodyBytes()));
    }

    /**
     * The credentials file {@code credentials_file} names, read (its problems name its own lines), or null in the
     * simple mode of one shared token; {@code token_file} beside it is refused, {@code SEXTANT_TOKEN} not read.
     */
    static CredentialsFile credentials(ServerFile f) throws dev.sextant.config.ConfigException {
        Path file = f.path("credentials_file");
        if (file == null) {
            return null;
        }
        if (f.has("token_file")) {
            throw f.problem("token_file", "set with credentials_file (expected: one of them: a shared token, or the "
                    + "tokens of the credentials file)");
        }
        f.document("credentials_file", file, YamlTree.MAX_DOCUMENT_CHARS);
        return CredentialsFile.load(file);
    }

    /**
     * The control plane's settings: the file's keys over the defaults, on {@code port}; a value out of range is a
     * problem at its line ({@code control-plane.yaml:7: overload_ttft_factor: 0.5 (expected: …)}).
     */
    static ControlPlaneConfig config(ServerFile f, Path topology, CredentialsFile credentials, int port) {
        return config(f, topology, credentials, () -> port);
    }

    /** As {@link #config(ServerFile, Path, CredentialsFile, int)}, the port read again when a check refused one. */
    static ControlPlaneConfig config(ServerFile f, Path topology, CredentialsFile credentials,
                                     java.util.function.IntSupplier port) {
        ControlPlaneConfig d = ControlPlaneConfig.defaults(topology, "x");
        return f.build(() -> ControlPlaneConfig.builder(topology, null).host(f.string("host", d.host()))
                .port(port.getAsInt())
                .credentials(credentials).token(credentials == null ? f.token(true) : null)
                .solveInterval(f.duration("solve_interval", d.solveInterval()))
                .watchInterval(f.duration("watch_interval", d.watchInterval()))
                .scrapeInterval(f.duration("scrape_interval", d.scrapeInterval()))
                .scrapeTimeout(f.duration("scrape_timeout", d.scrapeTimeout()))
                .missedScrapes(f.integer("missed_scrapes", d.missedScrapes()))
                .errorRateLimit(f.number("error_rate_limit", d.errorRateLimit()))
                .demand(f.string("demand", d.demand())).publishGain(f.number("publish_gain", d.publishGain()))
                .publishGainMs(f.number("publish_gain_ms", d.publishGainMs()))
                .overloadTtftFactor(f.number("overload_ttft_factor", d.overloadTtftFactor()))
                .keepInRegion(f.bool("keep_in_region", d.keepInRegion()))
                .demandHold(f.duration("demand_hold", d.demandHold()))
                .canaryInterval(f.duration("canary_interval", d.canaryInterval()))
                .maxWait(f.duration("max_wait", d.maxWait())).tls(f.serverTls()).engineTls(f.clientTls())
                .stateFile(f.path("state_file")).limits(limits(f, d.limits()))
                .engineToken(f.tokenFile("engine_token_file")).build());
    }

    @Override
    public Integer call() throws Exception {
        run.check();
        ServerFile f = ServerFile.load(config, KEYS, REMOVED);
        Path topology = f.path("topology");
        if (topology == null) {
            throw f.problem("topology", "missing (expected: the topology YAML file)");
        }
        CredentialsFile credentials = credentials(f);
        ControlPlaneConfig c = config(f, topology, credentials, () -> run.port(f, 7070));
        // a missing or unusable topology is this file's problem, at its line
        f.document("topology", topology, YamlTree.MAX_DOCUMENT_CHARS);
        dev.sextant.etcd.EtcdOptions etcdOptions = f.etcd(etcd);
        f.tlsContexts(c.tls(), c.engineTls()); // at the start too: an unusable PEM file is this file's problem, not a crash
        if (check) {
            Topology t = TopologyLoader.load(topology);
            out.println(config + ": ok: control plane on " + (c.tls() == null ? "http" : "https") + "://" + c.host()
                    + ":" + c.port() + ", topology " + topology.normalize() + " (" + t.gatewayClusters().size()
                    + " gateway clusters, " + t.engines().size() + " engines)"
                    + (credentials == null ? ", one shared token" : ", " + credentials.current().size()
                            + " tokens from " + credentials.file().normalize() + " (" + credentials.current().summary()
                            + ")")
                    + (etcdOptions == null ? "" : ", elected through etcd " + etcdOptions.endpoints() + " under "
                            + etcdOptions.prefix()));
            out.flush();
            return 0;
        }
        // with etcd, engines may also register (docs/etcd.md): every replica merges them into its topology
        ControlPlane cp = etcdOptions == null ? ControlPlane.start(c)
                : ControlPlane.start(c, dev.sextant.etcd.Etcd.leadership(etcdOptions),
                        dev.sextant.etcd.Etcd.registry(etcdOptions));
        out.println("control plane on " + cp.uri() + " (topology " + topology + ", snapshot " + cp.current().version() + ")");
        out.flush();
        Running.untilStopped(out, run.duration, cp);
        return 0;
    }
}
