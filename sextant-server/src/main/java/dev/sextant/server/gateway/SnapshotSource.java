package dev.sextant.server.gateway;

import dev.sextant.snapshot.Snapshot;
import java.net.URI;
import java.time.Duration;
import java.util.function.Consumer;

/**
 * Where a gateway gets its snapshots from (docs/design.md §8): the control plane's HTTP long-poll today, an etcd
 * watch later. A source delivers each new snapshot to its listener, and the held one again whenever the
 * publisher confirms it is still current (which resets the data plane's snapshot age). It never delivers a
 * version older than one it delivered before.
 */
public interface SnapshotSource extends AutoCloseable {

    /**
     * Starts delivering to {@code listener}, from a background thread; returns at once. Called once.
     * The listener must be quick and must not throw.
     */
    void start(Consumer<Snapshot> listener);

    /**
     * Tells the source, before {@link #start}, of a snapshot the gateway already has (kept from before a restart), so
     * that it asks for a newer one only and refuses older ones. Sources that are handed their snapshots ignore it.
     */
    default void hold(Snapshot held) {
    }

    /**
     * Snapshots this source refused so far, ≥ 0: an older version than one it delivered, or the same version with
     * other content. Each refusal is also a {@code SEVERE} log line.
     */
    default long refusals() {
        return 0;
    }

    /**
     * True when this source finds the control planes itself ({@link #controlPlanes}): a gateway without a
     * {@code control_plane} then sends its reports to them.
     */
    default boolean findsControlPlanes() {
        return false;
    }

    /**
     * The base URLs of the control planes known now (through etcd: every replica, the leader first), which the
     * gateway's reports go to; empty when none is known. Called from the report thread.
     */
    default java.util.List<URI> controlPlanes() {
        return java.util.List.of();
    }

    /**
     * The longest a present control plane leaves between two words through this source (a new snapshot or the held
     * one confirmed), or null when the source knows no such bound. A gateway's data plane takes silence beyond twice
     * it as the control plane being away until it has learned the cadence itself (docs/request-path.md §4).
     */
    default Duration cadence() {
        return null;
    }

    /** Registers this source's meters (for example its watch lag) with the gateway's. */
    default void bindTo(io.micrometer.core.instrument.MeterRegistry registry) {
    }

    /**
     * Why a source must refuse {@code next} after {@code held}, or null when it may deliver it: a hash that does not
     * match its content, an older version, or the held version with other content (docs/design.md §6, 9).
     */
    static String refusal(Snapshot held, Snapshot next) {
        return LongPollSource.refusal(held, next);
    }

    /** Stops delivering and releases the source's thread and connections. */
    @Override
    void close();

    /** A source holding {@code first}; {@link StaticSource#publish} hands it newer ones (tests, single-node setups). */
    static StaticSource fixed(Snapshot first) {
        return new StaticSource(first);
    }

    /**
     * The long-poll client of a control plane: {@code GET {controlPlane}/v1/snapshot?gateway=ID&wait=…} with
     * {@code If-None-Match}. While the control plane is unreachable it keeps the last snapshot (the gateway keeps
     * serving from it) and retries with a growing back-off up to 5 s.
     *
     * @param controlPlane   base URL, e.g. {@code http://127.0.0.1:7000}
     * @param gatewayCluster the gateway cluster id to ask for
     * @param token          bearer token, or null
     * @param wait           how long the control plane may hold a poll open, &gt; 0
     */
    static SnapshotSource longPoll(URI controlPlane, String gatewayCluster, String token, Duration wait) {
        return longPoll(controlPlane, gatewayCluster, token, wait, null);
    }

    /**
     * As {@link #longPoll(URI, String, String, Duration)}, verifying an {@code https} control plane with {@code tls}
     * (null: the JDK's default CAs). Only the configured URL is asked: redirects are not followed, and over TLS the
     * control plane's certificate must chain to a trusted CA and name its host.
     */
    static SnapshotSource longPoll(URI controlPlane, String gatewayCluster, String token, Duration wait,
                                   dev.sextant.server.tls.ClientTls tls) {
        return longPoll(controlPlane, gatewayCluster,
                token == null ? null : dev.sextant.server.auth.BearerToken.of(token), wait, tls);
    }

    /**
     * As {@link #longPoll(URI, String, String, Duration, dev.sextant.server.tls.ClientTls)} with a token that may be
     * read from a file: each poll sends the file's current first token, so a rotated token is sent without a restart.
     */
    static SnapshotSource longPoll(URI controlPlane, String gatewayCluster, dev.sextant.server.auth.BearerToken token,
                                   Duration wait, dev.sextant.server.tls.ClientTls tls) {
        return new LongPollSource(controlPlane, gatewayCluster, token, wait, tls);
    }
}
