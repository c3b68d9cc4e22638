package dev.sextant.app;

import dev.sextant.etcd.EngineRegistrar;
import dev.sextant.etcd.Etcd;
import dev.sextant.etcd.EtcdOptions;
import dev.sextant.server.control.Registration;
import dev.sextant.topology.PriorityScheduling;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code sextant register --etcd URL --id ID --endpoint URL --cluster C --hardware K --models M}: the registrar beside
 * one engine (docs/etcd.md, "Engine registration"). Keeps the engine registered under a lease while its
 * {@code /health} answers; Ctrl-C takes it out at once.
 */
@Command(name = "register", mixinStandardHelpOptions = true, versionProvider = Sextant.Version.class,
        description = "Register one engine in etcd while it answers its health checks, for the control planes to route"
                + " to it (docs/etcd.md).")
final class RegisterCommand implements Callable<Integer> {
    static final Set<String> KEYS = Set.of("etcd");
    private final PrintWriter out;

    @Option(names = "--etcd", paramLabel = "URL[,URL…]", description = "The etcd members (overrides the file's "
            + "etcd.endpoints).")
    String etcd;

    @Option(names = "--config", paramLabel = "REGISTRAR.yaml", description = "A file with an etcd map (prefix, TLS, "
            + "user, lease_ttl: docs/etcd.md), when --etcd alone is not enough.")
    Path config;

    @Option(names = "--id", required = true, paramLabel = "ID", description = "The engine's id, unique in the fleet.")
    String id;

    @Option(names = "--endpoint", required = true, paramLabel = "URL", description = "Its OpenAI-compatible API, "
            + "http://host:port.")
    String endpoint;

    @Option(names = "--cluster", required = true, paramLabel = "ENGINE-CLUSTER", description = "Its engine cluster,"
            + " one the topology names.")
    String cluster;

    @Option(names = "--hardware", required = true, paramLabel = "KIND", description = "Its hardware kind, one the "
            + "topology's hardware rates.")
    String hardware;

    @Option(names = "--models", required = true, split = ",", paramLabel = "MODEL[,MODEL…]", description = "The models"
            + " it serves.")
    List<String> models;

    @Option(names = "--priority-scheduling", paramLabel = "WORD", defaultValue = "none", description = "none, "
            + "lower_first (vLLM --scheduling-policy priority) or higher_first (SGLang); default: ${DEFAULT-VALUE}.")
    String priorityScheduling;

    @Option(names = "--metrics-path", paramLabel = "PATH", defaultValue = "/metrics", description = "Its Prometheus "
            + "metrics under the endpoint, or 'none' (judged from gateways and canaries); default: ${DEFAULT-VALUE}.")
    String metricsPath;

    @Option(names = "--health-interval", paramLabel = "SECONDS", defaultValue = "2", description = "How often its "
            + "/health is asked; after " + EngineRegistrar.FAILED_CHECKS + " failures in a row it is taken out until it"
            + " answers again; default: ${DEFAULT-VALUE}.")
    double healthInterval;

    @Option(names = "--duration", paramLabel = "SECONDS", description = "Stop after this long (default: until Ctrl-C).")
    double duration;

    RegisterCommand(PrintWriter out) {
        this.out = out;
    }

    @Override
    public Integer call() throws Exception {
        Running.checkSeconds(duration);
        // asked more often than ten times a second, each check's connect timeout (the interval, below 1 s) is too short
        // to answer in: 1e-9 took every engine out; less often than hourly, a dead engine stays in for hours
        if (!(healthInterval >= 0.1 && healthInterval <= 3600)) {
            throw new UsageException("--health-interval: " + healthInterval + " (expected: seconds from 0.1 to 3600)");
        }
        EtcdOptions options;
        if (config != null) {
            ServerFile f = ServerFile.load(config, KEYS);
            options = f.etcd(etcd);
            f.check();
        } else {
            try {
                options = etcd == null ? null : EtcdOptions.of(List.of(etcd.split(",")).stream().map(String::trim)
                        .map(java.net.URI::create).toList());
            } catch (IllegalArgumentException e) {
                // the flag named, not the file field it stands for
                String endpoint = ServerFile.endpointMessage(e.getMessage());
                throw new UsageException("--etcd: " + (endpoint != null ? endpoint : e.getMessage()));
            }
        }
        if (options == null) {
            throw new UsageException("--etcd: missing (expected: the etcd members, or --config with an etcd map)");
        }
        PriorityScheduling scheduling = PriorityScheduling.of(priorityScheduling);
        if (scheduling == null) {
            throw new UsageException("--priority-scheduling: '" + priorityScheduling + "' (expected: none, lower_first"
                    + " or higher_first)");
        }
        Registration r;
        try {
            r = new Registration(id, endpoint, cluster, hardware, models, scheduling,
                    metricsPath.equals("none") ? null : metricsPath);
        } catch (IllegalArgumentException e) {
            // the record names its field as the topology does; the option is the same word with dashes
            // (and a metrics path the record calls null is 'none' here)
            String m = e.getMessage().replace("or null for an engine without metrics", "or none for an engine without"
                    + " metrics");
            int colon = m.indexOf(':');
            throw new UsageException(colon < 0 ? m : "--" + m.substring(0, colon).replace('_', '-') + m.substring(colon));
        }
        EngineRegistrar registrar = Etcd.register(options, r,
                Duration.ofNanos(Math.round(healthInterval * 1_000_000_000L)));
        out.println("registering engine " + id + " (" + endpoint + ") under " + options.prefix() + " at "
                + options.endpoints() + " while its /health answers");
        out.flush();
        Running.untilStopped(out, duration, registrar);
        return 0;
    }
}
