package dev.sextant.etcd;

import dev.sextant.request.Ticker;
import dev.sextant.server.control.EngineRegistry;
import dev.sextant.server.control.Leadership;
import dev.sextant.server.control.Registration;
import dev.sextant.server.gateway.SnapshotSource;
import java.time.Clock;
import java.time.Duration;

/**
 * Several control planes and their gateways over etcd (docs/design.md §8, docs/etcd.md): a control plane's
 * {@link Leadership} (lease, leader key, fenced publication of every gateway cluster's view) and a gateway's
 * {@link SnapshotSource} (a watch of its view). Both are interchangeable with the single control plane and its
 * long-poll behind the same interfaces:
 * <pre>{@code
 * ControlPlane cp = ControlPlane.start(config, Etcd.leadership(EtcdOptions.of(List.of(URI.create("http://127.0.0.1:2379")))));
 * Gateway gw = Gateway.start(gatewayConfig, Etcd.source(options, "east"));
 * }</pre>
 */
public final class Etcd {
    /** How often a gateway reads its view even without a watch event (a confirmation, and a lost watch's cover). */
    public static final Duration CONFIRM_EVERY = Duration.ofSeconds(10);

    private Etcd() {
    }

    /**
     * A control plane's leadership among the replicas sharing {@code options.prefix()}; it campaigns once the control
     * plane calls {@link Leadership#join}.
     *
     * @throws IllegalArgumentException when a password or TLS file cannot be read or used (the message names it)
     */
    public static Leadership leadership(EtcdOptions options) {
        return new EtcdLeadership(Clients.connect(options), options, Ticker.system(), Clock.systemUTC(),
                ViewCodec.MAX_VALUE_BYTES);
    }

    /** As {@link #leadership(EtcdOptions)} cutting views into chunks above {@code maxValueBytes} (tests). */
    static Leadership leadership(EtcdOptions options, int maxValueBytes) {
        return new EtcdLeadership(Clients.connect(options), options, Ticker.system(), Clock.systemUTC(), maxValueBytes);
    }

    /**
     * A gateway's snapshots: the view of {@code gatewayCluster} under {@code options.prefix()}, watched. Its
     * {@link SnapshotSource#controlPlanes()} names the control planes (the leader first) for the gateway's reports.
     *
     * @throws IllegalArgumentException when a password or TLS file cannot be read or used (the message names it)
     */
    public static SnapshotSource source(EtcdOptions options, String gatewayCluster) {
        return source(options, gatewayCluster, CONFIRM_EVERY);
    }

    /** As {@link #source(EtcdOptions, String)}, reading at least every {@code confirmEvery}. */
    public static SnapshotSource source(EtcdOptions options, String gatewayCluster, Duration confirmEvery) {
        if (gatewayCluster == null || gatewayCluster.isEmpty() || gatewayCluster.contains("/")) {
            throw new IllegalArgumentException("gateway_cluster: " + gatewayCluster + " (expected: an id without /)");
        }
        return new EtcdSource(Clients.connect(options), options, gatewayCluster, confirmEvery, Clock.systemUTC());
    }

    /**
     * The engines registered under {@code options.prefix()}, watched, for a control plane to merge into its topology
     * ({@code ControlPlane.start(config, leadership, registry)}). Reads what is registered before it returns, when etcd
     * answers within a few seconds.
     *
     * @throws IllegalArgumentException when a password or TLS file cannot be read or used (the message names it)
     */
    public static EngineRegistry registry(EtcdOptions options) {
        return new EtcdRegistry(Clients.connect(options), options);
    }

    /**
     * Registers {@code engine} under {@code options.prefix()} with a lease of {@code options.leaseTtl()}, and keeps it
     * registered while its {@code /health} answers (checked every {@code healthInterval}); closing it takes the engine
     * out at once.
     *
     * @throws IllegalArgumentException when a password or TLS file cannot be read or used (the message names it), or
     *                                  {@code healthInterval} is not positive
     */
    public static EngineRegistrar register(EtcdOptions options, Registration engine, Duration healthInterval) {
        if (healthInterval == null || healthInterval.isNegative() || healthInterval.isZero()) {
            throw new IllegalArgumentException("health_interval: " + healthInterval + " (expected: > 0)");
        }
        return new EngineRegistrar(Clients.connect(options), options, engine, healthInterval);
    }
}
