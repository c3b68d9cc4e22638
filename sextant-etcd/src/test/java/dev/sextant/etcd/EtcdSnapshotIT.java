package dev.sextant.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.gateway.SnapshotSource;
import dev.sextant.snapshot.Snapshot;
import io.etcd.jetcd.Client;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * Views through etcd: round trips, chunks, and a gateway's source with etcd down (the L fleet's largest view: sextant-bench's
 * LargeFleetViewIT).
 */
class EtcdSnapshotIT extends OneEtcdMember {
    @Test
    void publishedView_reachesTheGatewayClustersSource_asPublished() {
        EtcdOptions o = etcd.options("/round-trip");
        try (EtcdLeadership l = EtcdCluster.leader(o, ViewCodec.MAX_VALUE_BYTES);
             Recording east = new Recording(Etcd.source(o, "east", Duration.ofSeconds(1)))) {
            Snapshot s = Snapshots.version(3);
            l.publish(s);
            java.util.concurrent.atomic.AtomicReference<Snapshot> got = new java.util.concurrent.atomic.AtomicReference<>();
            east.start(got::set);
            assertThat(EtcdCluster.await(() -> got.get() != null, Duration.ofSeconds(20))).isTrue();
            assertThat(got.get()).isEqualTo(s.forGateway("east"));
            assertThat(east.controlPlanes()).containsExactly(URI.create("http://127.0.0.1:7001"));

            l.publish(Snapshots.version(4));
            assertThat(EtcdCluster.await(() -> east.last() == 4, Duration.ofSeconds(20))).isTrue();
            assertThat(east.versions).isSorted();
        }
    }

    @Test
    void nextView_isTakenAtTheWatchEvent_notAtThePeriodicRead() {
        EtcdOptions o = etcd.options("/watched");
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (EtcdLeadership l = EtcdCluster.leader(o, ViewCodec.MAX_VALUE_BYTES);
             Recording east = new Recording(Etcd.source(o, "east", Duration.ofHours(1)))) {
            east.bindTo(meters);
            l.publish(Snapshots.version(3));
            east.start(s -> { });
            assertThat(EtcdCluster.await(() -> east.last() == 3, Duration.ofSeconds(20))).isTrue();

            // no periodic read within the deadline: only the watch can bring these
            for (long v = 4; v <= 6; v++) {
                // a 2 s lease on a busy machine may lapse between publications; this test is not about that
                assertThat(EtcdCluster.await(l::leading, Duration.ofSeconds(20))).isTrue();
                l.publish(Snapshots.version(v));
                long expected = v;
                assertThat(EtcdCluster.await(() -> east.last() == expected, Duration.ofSeconds(20))).isTrue();
            }
            assertThat(lagCount(meters, "first")).isEqualTo(1);
            assertThat(lagCount(meters, "watch")).isEqualTo(3);
            assertThat(lagCount(meters, "periodic")).isZero();
            assertThat(meters.get("sextant.etcd.watch.ended").functionCounter().count()).isZero();
        }
    }

    @Test
    void viewWrittenBetweenTheReadAndTheWatch_isAnEventOfTheWatch() {
        EtcdOptions o = etcd.options("/gap");
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (EtcdLeadership l = EtcdCluster.leader(o, ViewCodec.MAX_VALUE_BYTES)) {
            publishWhenLeading(l, 3);
            AtomicBoolean once = new AtomicBoolean();
            // the source has read version 3 and not yet asked for its watch when version 4 is written
            Runnable beforeWatch = () -> {
                if (once.compareAndSet(false, true)) {
                    publishWhenLeading(l, 4);
                }
            };
            try (Recording east = new Recording(new EtcdSource(Clients.connect(o), o, "east", Duration.ofHours(1),
                    Clock.systemUTC(), beforeWatch))) {
                east.bindTo(meters);
                east.start(s -> { });
                // no periodic read within the deadline: only the watch can bring version 4
                assertThat(EtcdCluster.await(() -> east.last() == 4, Duration.ofSeconds(20))).isTrue();
                assertThat(east.versions).containsExactly(3L, 4L);
                assertThat(lagCount(meters, "first")).isEqualTo(1);
                assertThat(lagCount(meters, "watch")).isEqualTo(1);
                assertThat(lagCount(meters, "periodic")).isZero();
            }
        }
    }

    @Test
    void watchFromACompactedRevision_isMadeAgainAfterANewRead() {
        EtcdOptions o = etcd.options("/compacted");
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (EtcdLeadership l = EtcdCluster.leader(o, ViewCodec.MAX_VALUE_BYTES);
             Client admin = Clients.connect(o)) {
            publishWhenLeading(l, 3);
            AtomicBoolean once = new AtomicBoolean();
            // after the source's first read, version 4 is written and etcd compacted past that read's revision
            Runnable beforeWatch = () -> {
                if (once.compareAndSet(false, true)) {
                    publishWhenLeading(l, 4);
                    long now = Clients.await(admin.getKVClient().get(Keys.bytes(o.prefix() + "/version")))
                            .getHeader().getRevision();
                    Clients.await(admin.getKVClient().compact(now));
                }
            };
            try (Recording east = new Recording(new EtcdSource(Clients.connect(o), o, "east", Duration.ofHours(1),
                    Clock.systemUTC(), beforeWatch))) {
                east.bindTo(meters);
                east.start(s -> { });
                assertThat(EtcdCluster.await(() -> east.last() == 4, Duration.ofSeconds(20))).isTrue();
                assertThat(meters.get("sextant.etcd.watch.compacted").functionCounter().count()).isEqualTo(1);
                assertThat(meters.get("sextant.etcd.watch.ended").functionCounter().count()).isEqualTo(1);
                assertThat(lagCount(meters, "rewatch")).isEqualTo(1);

                // the watch made again after that read brings the next version
                publishWhenLeading(l, 5);
                assertThat(EtcdCluster.await(() -> east.last() == 5, Duration.ofSeconds(20))).isTrue();
                assertThat(east.versions).containsExactly(3L, 4L, 5L);
                assertThat(lagCount(meters, "watch")).isEqualTo(1);
                assertThat(lagCount(meters, "periodic")).isZero();
            }
        }
    }

    /** Publishes version {@code v} once {@code l} leads (a 2 s lease on a busy machine may lapse between two). */
    private static void publishWhenLeading(EtcdLeadership l, long v) {
        assertThat(EtcdCluster.await(l::leading, Duration.ofSeconds(20))).isTrue();
        l.publish(Snapshots.version(v));
    }

    private static long lagCount(SimpleMeterRegistry meters, String read) {
        return meters.get("sextant.etcd.watch.lag").tag("read", read).timer().count();
    }

    @Test
    void viewLargerThanOneValue_travelsInChunks() {
        EtcdOptions o = etcd.options("/chunks");
        try (EtcdLeadership l = EtcdCluster.leader(o, 256);
             SnapshotSource west = Etcd.source(o, "west", Duration.ofSeconds(1))) {
            Snapshot s = Snapshots.version(9);
            assertThat(ViewCodec.encode(s.forGateway("west"), 0, 256).chunks()).hasSizeGreaterThan(1);
            l.publish(s);
            java.util.concurrent.atomic.AtomicReference<Snapshot> got = new java.util.concurrent.atomic.AtomicReference<>();
            west.start(got::set);
            assertThat(EtcdCluster.await(() -> got.get() != null, Duration.ofSeconds(20))).isTrue();
            assertThat(got.get()).isEqualTo(s.forGateway("west"));
        }
    }

    @Test
    void sourceKeepsItsSnapshot_whileEtcdIsDown_andCatchesUpWhenItReturns() throws Exception {
        EtcdOptions o = etcd.options("/down");
        EtcdLeadership l = EtcdCluster.leader(o, ViewCodec.MAX_VALUE_BYTES);
        EtcdSource source = (EtcdSource) Etcd.source(o, "east", Duration.ofMillis(200));
        try (Recording east = new Recording(source)) {
            l.publish(Snapshots.version(2));
            java.util.concurrent.atomic.AtomicReference<Snapshot> got = new java.util.concurrent.atomic.AtomicReference<>();
            east.start(got::set);
            assertThat(EtcdCluster.await(() -> east.last() == 2, Duration.ofSeconds(20))).isTrue();

            etcd.stop();
            int delivered = east.versions.size();
            // the source's reads fail; what it delivered stays, and it delivers nothing else
            assertThat(EtcdCluster.await(() -> !source.reachable(), Duration.ofSeconds(30))).isTrue();
            assertThat(east.versions).hasSize(delivered);
            assertThat(got.get().version()).isEqualTo(2);

            etcd.restart();
            assertThat(EtcdCluster.await(l::leading, Duration.ofSeconds(30))).isTrue();
            l.publish(Snapshots.version(3));
            assertThat(EtcdCluster.await(() -> east.last() == 3, Duration.ofSeconds(30))).isTrue();
            assertThat(east.versions).isSorted();
        } finally {
            l.close();
        }
    }
}
