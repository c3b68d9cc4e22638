package dev.sextant.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.gateway.SnapshotSource;
import dev.sextant.snapshot.Snapshot;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.time.Duration;
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
