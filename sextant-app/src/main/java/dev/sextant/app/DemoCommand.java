package dev.sextant.app;

import dev.sextant.server.demo.Demo;
import dev.sextant.server.demo.LoadDriver;
import dev.sextant.server.internal.Numbers;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code sextant demo}: a control plane, two gateways and six emulated engines in one process. */
@Command(name = "demo", mixinStandardHelpOptions = true, versionProvider = Sextant.Version.class,
        description = "Run a control plane, two gateways and six emulated engines on loopback; "
        + "Ctrl-C stops it. With --load, also drive traffic and print a summary every few seconds.")
final class DemoCommand implements Callable<Integer> {
    private final PrintWriter out;

    @Option(names = "--load", paramLabel = "RPS", description = "Also send this many streaming requests per second, "
            + "split as the topology's demand (150: each class what the topology says), and plan for the demand the "
            + "gateways observe.")
    double load;

    @Option(names = "--port", paramLabel = "PORT", defaultValue = "8080",
            description = "Port of the first gateway (east); the second (eu) gets the next (default: ${DEFAULT-VALUE}; 0: any).")
    int port;

    @Option(names = "--control-port", paramLabel = "PORT", defaultValue = "7070",
            description = "Port of the control plane (default: ${DEFAULT-VALUE}; 0: any).")
    int controlPort;

    @Option(names = "--duration", paramLabel = "SECONDS", description = "Stop after this long (default: run until Ctrl-C).")
    double duration;

    @Option(names = "--every", paramLabel = "SECONDS", defaultValue = "5", description = "Summary interval with --load (default: ${DEFAULT-VALUE}).")
    double every;

    DemoCommand(PrintWriter out) {
        this.out = out;
    }

    @Override
    public Integer call() throws Exception {
        if (!(load >= 0 && load <= LoadDriver.MAX_RPS)) {
            throw new UsageException("--load: " + load + " (expected: 0.." + (int) LoadDriver.MAX_RPS + " requests per"
                    + " second)");
        }
        // a summary at least every day, at most ten a second: below a millisecond the schedule's period was 0, and the
        // demo ended in "internal error"
        if (!(every >= 0.1 && every <= 86_400)) {
            throw new UsageException("--every: " + every + " (expected: seconds from 0.1 to 86400)");
        }
        Running.checkPort("--port", port);
        Running.checkPort("--control-port", controlPort);
        Running.checkSeconds(duration);
        Demo demo;
        try {
            demo = Demo.start(controlPort, port, load > 0 ? Demo.Demand.OBSERVED : Demo.Demand.CONFIGURED);
        } catch (IllegalStateException e) {
            throw new UsageException("cannot start the demo: " + e.getMessage()
                    + " (is a port taken? try --port 0 --control-port 0)");
        }
        List<URI> gws = demo.gatewayUris();
        out.println("Sextant demo running on loopback:");
        out.println("  gateway east (us-east): " + gws.get(0));
        out.println("  gateway eu   (eu-west): " + gws.get(1));
        out.println("  control plane:          " + demo.controlPlaneUri() + "   (token " + demo.token() + ")");
        out.println("  topology:               " + demo.topologyFile() + "   (edit it: the control plane reloads it)");
        if (load > 0) {
            out.println("  demand:                 observed: the control plane plans for what the gateways see of the"
                    + " load,");
            out.println("                          " + Numbers.plain(load) + " req/s split as the topology's demand ("
                    + Demo.demandSummary() + ")");
        } else {
            out.println("  demand:                 configured: the control plane plans for the topology's demand_rps");
            out.println("                          (" + Demo.demandSummary() + "); with --load, for what the gateways"
                    + " observe");
        }
        out.println();
        out.println("Try:");
        out.println("  curl -N " + gws.get(0) + "/v1/chat/completions -H 'content-type: application/json' \\");
        out.println("       -d '{\"model\":\"" + Demo.MODEL + "\",\"stream\":true,\"max_tokens\":8,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}' -i");
        out.println("  curl -H 'authorization: Bearer " + demo.token() + "' '" + demo.controlPlaneUri()
                + "/v1/explain?gateway=east&class=chat&format=text'");
        out.println("  curl " + gws.get(0) + "/metrics ; curl " + gws.get(0) + "/healthz");
        out.println("Ctrl-C stops it.");
        out.flush();
        LoadDriver driver = null;
        if (load > 0) {
            driver = demo.loadDriver(load, Duration.ofMillis(Math.round(every * 1000)),
                    new PrintStream(System.out, true, java.nio.charset.StandardCharsets.UTF_8));
        }
        Running.untilStopped(out, duration, driver, demo);
        return 0;
    }
}
