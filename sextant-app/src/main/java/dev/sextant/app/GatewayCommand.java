package dev.sextant.app;

import dev.sextant.config.SnapshotJson;
import dev.sextant.config.Urls;
import dev.sextant.request.DataPlaneOptions;
import dev.sextant.server.auth.BearerToken;
import dev.sextant.server.internal.ClientLimits;
import dev.sextant.server.gateway.Drain;
import dev.sextant.server.gateway.Gateway;
import dev.sextant.server.gateway.GatewayConfig;
import dev.sextant.server.gateway.SnapshotSource;
import dev.sextant.server.internal.Http;
import dev.sextant.server.internal.Listen;
import dev.sextant.server.warmup.WarmUp;
import java.io.PrintWriter;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code sextant gateway --config gateway.yaml}: one gateway process. */
@Command(name = "gateway", mixinStandardHelpOptions = true, versionProvider = Sextant.Version.class,
        description = "Run a gateway (OpenAI-compatible proxy) from a config file (docs/servers.md).")
final class GatewayCommand implements Callable<Integer> {
    static final Set<String> KEYS = ServerFile.withTlsKeys("gateway_cluster", "host", "port", "control_plane", "token_file",
            "engine_token_file", "snapshot_file", "snapshot_cache_file", "long_poll_wait", "report_interval",
            "max_body_bytes", "connect_timeout",
            "first_token_timeout", "idle_timeout", "total_timeout", "drain_window", "drain_timeout",
            "max_snapshot_age", "access_log",
            "threads", "max_in_flight_per_engine", "in_flight_per_capacity", "priority_reserve", "request_header_timeout", "request_body_timeout",
            "max_header_bytes", "http2", "max_concurrent_streams", "warm_up", "busy_poll", "probe_interval",
            "spread_shared_prefixes", "space_prefills", "recent_keys", "engine_keep_alive", "class_timeouts", "etcd", "tenants_file", "residency",
            "max_connections", "max_buffered_body_bytes");
    /** Settings that are gone, with what took their place and why (refused at their line). */
    static final java.util.Map<String, String> REMOVED = java.util.Map.of("first_byte_timeout", "expected:"
            + " first_token_timeout, for streams; removed: it cut and retried non-streaming answers, which send nothing"
            + " before they are whole (docs/request-path.md §5)");
    /** What a class of {@code class_timeouts} may set. */
    static final Set<String> CLASS_TIMEOUTS = Set.of("first_token_timeout", "idle_timeout", "total_timeout");
    /** Most event loop threads: a gateway uses one per core; far more only costs memory and switching. */
    static final int MAX_THREADS = 256;
    /** Longest warm-up: the benchmark's JIT went quiet within minutes; longer only delays the start. */
    static final Duration MAX_WARM_UP = Duration.ofMinutes(10);
    private final PrintWriter out;

    @Option(names = "--config", paramLabel = "GATEWAY.yaml", required = true, description = "The gateway's settings.")
    Path config;

    @Mixin
    ServerRun run;

    @Option(names = "--etcd", paramLabel = "URL[,URL…]", description = "Watch this gateway cluster's snapshots in "
            + "these etcd members and report to the control planes found there (overrides etcd.endpoints; "
            + "docs/etcd.md).")
    String etcd;

    @Option(names = "--check", description = "Check the file and the files it names (token, TLS, snapshot), print "
            + "what it configures and exit: 0 valid, 2 not. Starts nothing.")
    boolean check;

    GatewayCommand(PrintWriter out) {
        this.out = out;
    }

    @Override
    public Integer call() throws Exception {
        run.check();
        ServerFile f = ServerFile.load(config, KEYS, REMOVED);
        String cluster = f.string("gateway_cluster", null);
        if (cluster == null || cluster.isBlank()) {
            throw f.problem("gateway_cluster", (cluster == null ? "missing" : "'" + cluster + "'")
                    + " (expected: the gateway cluster id this gateway serves)");
        }
        GatewayConfig d = GatewayConfig.defaults(cluster);
        String cpText = f.string("control_plane", null);
        Path snapshotFile = f.path("snapshot_file");
        dev.sextant.etcd.EtcdOptions etcdOptions = f.etcd(etcd);
        if (etcdOptions != null && (cpText != null || snapshotFile != null)) {
            throw f.problem("etcd", "set with " + (cpText != null ? "control_plane" : "snapshot_file")
                    + " (expected: one source of snapshots; with etcd, reports go to the control planes found there)");
        }
        if (etcdOptions == null && (cpText == null) == (snapshotFile == null)) {
            throw f.problem("control_plane", "expected exactly one of control_plane (a URL), snapshot_file and etcd");
        }
        URI cp = cpText == null ? null : controlPlane(f, cpText);
        BearerToken token = f.token(cp != null || etcdOptions != null);
        Settings settings = f.build(() -> {
            Duration longPollWait = f.duration("long_poll_wait", Duration.ofSeconds(30));
            int threads = f.integer("threads", Math.max(2, Runtime.getRuntime().availableProcessors()));
            Duration warmUp = f.duration("warm_up", Duration.ZERO);
            if (warmUp.compareTo(MAX_WARM_UP) > 0) {
                throw new IllegalArgumentException("warm_up: " + warmUp.toSeconds() + "s (expected: 0s, off, to "
                        + MAX_WARM_UP.toMinutes() + "m)");
            }
            Http.positive("long_poll_wait", longPollWait);
            if (threads < 1 || threads > MAX_THREADS) {
                throw new IllegalArgumentException("threads: " + threads + " (expected: 1.." + MAX_THREADS + ")");
            }
            ClientLimits limits = f.clientLimits(d.clientLimits());
            GatewayConfig c = GatewayConfig.builder(cluster).host(f.string("host", d.host())).port(run.port(f, 8080))
                    .maxBodyBytes(f.integer("max_body_bytes", d.maxBodyBytes()))
                    .connectTimeout(f.duration("connect_timeout", d.connectTimeout()))
                    .firstTokenTimeout(f.duration("first_token_timeout", d.firstTokenTimeout()))
                    .idleTimeout(f.duration("idle_timeout", d.idleTimeout()))
                    .totalTimeout(f.duration("total_timeout", d.totalTimeout()))
                    .drain(new Drain(f.duration("drain_window", Drain.DEFAULT_WINDOW),
                            f.duration("drain_timeout", d.drain().timeout())))
                    .controlPlane(cp).token(token).reportInterval(f.duration("report_interval", d.reportInterval()))
                    .accessLog(f.bool("access_log", true))
                    .options(DataPlaneOptions.builder()
                            .maxSnapshotAge(f.duration("max_snapshot_age", Duration.ofMinutes(5)))
                            .maxInFlightPerEngine(f.integer("max_in_flight_per_engine",
                                    DataPlaneOptions.defaults().maxInFlightPerEngine()))
                            .inFlightPerCapacity(f.number("in_flight_per_capacity",
                                    DataPlaneOptions.defaults().inFlightPerCapacity()))
                            .priorityReserve(f.number("priority_reserve",
                                    DataPlaneOptions.defaults().priorityReserve()))
                            .spreadSharedPrefixes(f.bool("spread_shared_prefixes", false))
                            .spacePrefills(f.bool("space_prefills", DataPlaneOptions.defaults().spacePrefills()))
                            .recentKeys(f.integer("recent_keys", DataPlaneOptions.defaults().recentKeys()))
                            .build())
                    .tls(f.serverTls()).clientTls(f.clientTls()).clientLimits(limits).http2(f.bool("http2", d.http2()))
                    .maxConcurrentStreams(f.integer("max_concurrent_streams", d.maxConcurrentStreams()))
                    .engineToken(f.tokenFile("engine_token_file")).snapshotCache(f.path("snapshot_cache_file"))
                    .busyPoll(f.bool("busy_poll", false)).probeInterval(f.duration("probe_interval", d.probeInterval()))
                    .engineKeepAlive(f.duration("engine_keep_alive", d.engineKeepAlive()))
                    .tenantsFile(tenantsFile(f)).residency(f.strings("residency"))
                    .maxConnections(f.integer("max_connections", d.maxConnections()))
                    .maxBufferedBodyBytes(f.integer("max_buffered_body_bytes", (int) d.maxBufferedBodyBytes())).build();
            return new Settings(c.withClassTimeouts(classTimeouts(f, c)), longPollWait, threads, warmUp);
        });
        GatewayConfig c = settings.config();
        Duration longPollWait = settings.longPollWait();
        int threads = settings.threads();
        Duration warmUp = settings.warmUp();
        // said here, by --check and the start alike, and once: a warm-up's throwaway gateway has the same loops
        warnIfBusyPollOnEveryCpu(f, c, threads);
        f.tlsContexts(c.tls(), c.clientTls()); // at the start too: an unusable PEM file is this file's problem, not a crash
        if (check) {
            readableSnapshot(f, snapshotFile);
            String from = sourceName(etcdOptions, cp, snapshotFile) + (snapshotFile == null ? ""
                    : " (version " + SnapshotJson.read(snapshotFile).version() + ")");
            out.println(config + ": ok: gateway cluster " + cluster + " on " + (c.tls() == null ? "http" : "https")
                    + "://" + c.host() + ":" + c.port() + ", snapshots from " + from
                    + (warmUp.isZero() ? "" : ", a warm-up of " + warmUp.toMillis() / 1000.0 + " s before listening")
                    + (c.busyPoll() ? ", busy-polling event loops (each keeps a core busy)" : "")
                    + (c.tenantsFile() == null ? ", open (no tenants_file: no API keys)" : ", tenants from "
                    + c.tenantsFile()) + (c.residency().isEmpty() ? "" : ", residency " + c.residency()));
            out.flush();
            return 0;
        }
        readableSnapshot(f, snapshotFile);
        SnapshotSource source = etcdOptions != null ? dev.sextant.etcd.Etcd.source(etcdOptions, cluster)
                : cp != null
                ? SnapshotSource.longPoll(cp, cluster, token, longPollWait, c.clientTls())
                : SnapshotSource.fixed(SnapshotJson.read(snapshotFile));
        if (!warmUp.isZero()) {
            Listen.check(c.host(), c.port()); // a port in use is said now, not after the warm-up
            warmUp(c, threads, warmUp);
        }
        Gateway gw = Gateway.start(c, source, threads);
        Path cache = gw.startedFromCache();
        String from = sourceName(etcdOptions, cp, snapshotFile);
        out.println("gateway " + cluster + " on " + (c.tls() == null ? "http" : "https") + "://" + c.host() + ":"
                + gw.port() + " (snapshot " + gw.plane().snapshot().version() + " from " + (cache != null
                ? "the snapshot cache " + cache + ": " + from + " sent none in time" : from) + ")");
        out.flush();
        Running.untilStopped(out, run.duration, gw);
        return 0;
    }

    /** What a gateway's file configures beyond its {@link GatewayConfig}. */
    private record Settings(GatewayConfig config, Duration longPollWait, int threads, Duration warmUp) {
    }

    /** Where this gateway's snapshots come from, as its start and {@code --check} say it: one of the three sources. */
    static String sourceName(dev.sextant.etcd.EtcdOptions etcd, URI controlPlane, Path snapshotFile) {
        return etcd != null ? "etcd " + etcd.endpoints() + " under " + etcd.prefix()
                : controlPlane != null ? "control plane " + controlPlane : "snapshot file " + snapshotFile;
    }

    /**
     * {@code tenants_file}, read now so that its problems stop the start (or {@code --check}) with their own file, line
     * and field; null for an open gateway. The gateway reads it again when it changes.
     */
    private static Path tenantsFile(ServerFile f) {
        Path file = f.path("tenants_file");
        if (file == null) {
            return null;
        }
        f.document("tenants_file", file, dev.sextant.config.YamlTree.MAX_DOCUMENT_CHARS);
        try {
            dev.sextant.server.tenants.Tenants.load(file);
        } catch (dev.sextant.config.ConfigException e) {
            throw new UsageException(e.getMessage()); // every problem, one a line
        }
        return file;
    }

    /** A missing snapshot file is a problem of the config file that names it, at its line. */
    private static void readableSnapshot(ServerFile f, Path snapshotFile) {
        if (snapshotFile != null) {
            f.document("snapshot_file", snapshotFile, dev.sextant.config.SnapshotJson.MAX_FILE_BYTES);
        }
    }

    /** Runs the warm-up ({@link WarmUp}) before the gateway binds its port, and says what it did. */
    private void warmUp(GatewayConfig c, int threads, Duration length)
            throws java.io.IOException, InterruptedException {
        out.println("gateway " + c.gatewayCluster() + ": warming up for " + length.toMillis() / 1000.0
                + " s before listening");
        out.flush();
        WarmUp.Result r = WarmUp.run(c, threads, length);
        out.println("gateway " + c.gatewayCluster() + ": warm-up done: " + r.requests() + " requests in "
                + String.format(Locale.ROOT, "%.1f", r.took().toMillis() / 1000.0) + " s, " + r.failures()
                + " failed" + (r.compilerMs() < 0 ? "" : ", " + r.compilerMs() + " ms of JIT compilation (the last "
                + String.format(Locale.ROOT, "%.1f", r.drain().toMillis() / 1000.0) + " s waiting for it to finish)"));
        if (r.failures() > 0) {
            out.println("gateway " + c.gatewayCluster() + ": warning: " + r.failures() + " warm-up requests were not"
                    + " answered 200 (the first: " + r.firstFailure() + "); starting anyway");
        }
        out.flush();
    }

    /**
     * Warns, at the line of {@code busy_poll}, of busy-polling loops on every CPU the JVM may use: spinning loops
     * then leave no CPU to the JVM's compiler and collector threads.
     */
    private void warnIfBusyPollOnEveryCpu(ServerFile f, GatewayConfig c, int threads) {
        int cpus = Runtime.getRuntime().availableProcessors();
        if (!c.busyPoll() || threads < cpus) {
            return;
        }
        out.println(f.located("busy_poll: warning: true with " + threads + " event loops (threads) on " + cpus
                + " CPUs: the loops keep every CPU busy, and the JVM's compiler and collector threads wait for them;"
                + " give the gateway fewer threads than CPUs (docs/servers.md, Busy polling)"));
        out.flush();
    }

    /**
     * {@code class_timeouts}: per class id, the timeouts it sets, the gateway's ({@code c}'s) for the others. A class
     * the snapshot does not have is kept all the same: snapshots change, and the file is read once.
     */
    static java.util.Map<String, dev.sextant.server.gateway.RequestTimeouts> classTimeouts(ServerFile f,
                                                                                          GatewayConfig c) {
        java.util.Map<String, dev.sextant.server.gateway.RequestTimeouts> out = new java.util.LinkedHashMap<>();
        f.durationsByEntry("class_timeouts", "a map of class id to its timeouts", CLASS_TIMEOUTS).forEach((id, t) -> {
            try {
                out.put(id, new dev.sextant.server.gateway.RequestTimeouts(
                        t.getOrDefault("first_token_timeout", c.firstTokenTimeout()),
                        t.getOrDefault("idle_timeout", c.idleTimeout()), t.getOrDefault("total_timeout", c.totalTimeout())));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("class_timeouts." + id + "." + e.getMessage(), e);
            }
        });
        return out;
    }

    /** The control plane's base URL, held to what an engine endpoint is ({@link Urls#isHttpBase}). */
    private static URI controlPlane(ServerFile f, String text) {
        if (!Urls.isHttpBase(text)) {
            throw f.problem("control_plane", "'" + text + "' (expected: an http:// or https:// URL with a host, such as"
                    + " http://127.0.0.1:7070)");
        }
        return URI.create(text);
    }
}
