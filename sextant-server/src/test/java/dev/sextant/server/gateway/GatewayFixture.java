package dev.sextant.server.gateway;

import java.util.function.UnaryOperator;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A {@link Fleet} of emulated engines and one gateway in front of it on a fixed snapshot, shared by a test class:
 * started before its first test, closed after its last. With {@link #watchingLeaks()}, Netty's leak detector runs at
 * its paranoid level for the class, and a leak it reports fails the class when the fixture closes.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final GatewayFixture GW = GatewayFixture.of(20, 2, config -> config.withMaxBodyBytes(4096));
 * ... GW.port() ... GW.fleet().engines ...
 * }</pre>
 */
public final class GatewayFixture implements BeforeAllCallback, AfterAllCallback {
    private final double fleetSize;
    private final int threads;
    private final UnaryOperator<GatewayConfig> config;
    private final boolean leakWatch;
    private Fleet fleet;
    private Gateway gateway;
    private LeakWatch leaks;

    private GatewayFixture(double fleetSize, int threads, UnaryOperator<GatewayConfig> config, boolean leakWatch) {
        this.fleetSize = fleetSize;
        this.threads = threads;
        this.config = config;
        this.leakWatch = leakWatch;
    }

    /**
     * @param fleetSize as {@link Fleet#Fleet(double)} takes it
     * @param threads   the gateway's event loops, ≥ 1
     * @param config    changes to {@code GatewayConfig.defaults("gw")} without its access log
     */
    public static GatewayFixture of(double fleetSize, int threads, UnaryOperator<GatewayConfig> config) {
        return new GatewayFixture(fleetSize, threads, config, false);
    }

    /** A gateway of {@code GatewayConfig.defaults("gw")} without its access log. */
    public static GatewayFixture of(double fleetSize, int threads) {
        return of(fleetSize, threads, UnaryOperator.identity());
    }

    /** The same fixture, with Netty's leak detector paranoid for the class and asserted clean at its end. */
    public GatewayFixture watchingLeaks() {
        return new GatewayFixture(fleetSize, threads, config, true);
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        if (leakWatch) {
            leaks = LeakWatch.paranoid();
        }
        fleet = new Fleet(fleetSize);
        gateway = Gateway.start(config.apply(GatewayConfig.defaults("gw").withAccessLog(false)),
                SnapshotSource.fixed(fleet.snapshot()), threads);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        try {
            if (gateway != null) {
                gateway.close();
            }
        } finally {
            if (fleet != null) {
                fleet.close();
            }
            if (leaks != null) {
                leaks.assertNoLeakThenClose();
            }
        }
    }

    public Fleet fleet() {
        return fleet;
    }

    public Gateway gateway() {
        return gateway;
    }

    /** The gateway's port on 127.0.0.1. */
    public int port() {
        return gateway.port();
    }
}
