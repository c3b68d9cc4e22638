package dev.sextant.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.bench.fleet.Fleets;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.server.gateway.SnapshotSource;
import dev.sextant.snapshot.Snapshot;
import java.net.URI;
import java.time.Duration;
import java.util.Comparator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Views through etcd: round trips, chunks, the L fleet's largest view, and a gateway's source with etcd down. */
class EtcdSnapshotIT {
    @TempDir
    static java.nio.file.Path dir;
    static EtcdCluster etcd;

    @BeforeAll
    static void startEtcd() throws Exception {
        etcd = new EtcdCluster(dir, 1);
    }

    @AfterAll
    static void stopEtcd() throws Exception {
        etcd.close();
    }

    private static EtcdLeadership leader(EtcdOptions o, int maxValueBytes) {
        EtcdLeadership l = (EtcdLeadership) Etcd.leadership(o, maxValueBytes);
        l.join(URI.create("http://127.0.0.1:7001"));
        assertThat(EtcdCluster.await(l::leading, Duration.ofSeconds(20))).isTrue();
        return l;
    }

    @Test
    void publishedView_reachesTheGatewayClustersSource_asPublished() {
        EtcdOptions o = etcd.options("/round-trip");
        try (EtcdLeadership l = leader(o, ViewCodec.MAX_VALUE_BYTES);
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
    void viewLargerThanOneValue_travelsInChunks() {
        EtcdOptions o = etcd.options("/chunks");
        try (EtcdLeadership l = leader(o, 256); SnapshotSource west = Etcd.source(o, "west", Duration.ofSeconds(1))) {
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
    void largeFleetsLargestView_fitsEtcdsRequestLimit_andRoundTrips() {
        Snapshot s = Policies.byName("optimal").solve(Fleets.large(1), SolveOptions.defaults()).sealed(1);
        String largest = s.routes().keySet().stream()
                .max(Comparator.comparingInt(g -> ViewCodec.encode(s.forGateway(g), 0, Integer.MAX_VALUE).gzipBytes()))
                .orElseThrow();
        long t0 = System.nanoTime();
        ViewCodec.Encoded e = ViewCodec.encode(s.forGateway(largest), 0, ViewCodec.MAX_VALUE_BYTES);
        long encodeMs = (System.nanoTime() - t0) / 1_000_000;
        System.out.printf("L fleet, largest view (%s): %d B of JSON, %d B gzipped, %d chunks, made and encoded in"
                + " %d ms%n", largest, e.jsonBytes(), e.gzipBytes(), e.chunks().size(), encodeMs);
        assertThat(e.value().length).as("one request, under etcd's 1.5 MiB").isLessThan(1_572_864);

        EtcdOptions o = etcd.options("/large");
        try (EtcdLeadership l = leader(o, ViewCodec.MAX_VALUE_BYTES);
             SnapshotSource gw = Etcd.source(o, largest, Duration.ofSeconds(1))) {
            for (int i = 0; i < 5; i++) {
                long p0 = System.nanoTime();
                l.publish(s.sealed(1 + i));
                System.out.printf("L fleet, publication %d: %d views written in %d ms%n", i + 1, s.routes().size(),
                        (System.nanoTime() - p0) / 1_000_000);
            }
            java.util.concurrent.atomic.AtomicReference<Snapshot> got = new java.util.concurrent.atomic.AtomicReference<>();
            gw.start(got::set);
            assertThat(EtcdCluster.await(() -> got.get() != null, Duration.ofSeconds(60))).isTrue();
            assertThat(got.get()).isEqualTo(s.sealed(5).forGateway(largest));
        }
    }

    @Test
    void sourceKeepsItsSnapshot_whileEtcdIsDown_andCatchesUpWhenItReturns() throws Exception {
        EtcdOptions o = etcd.options("/down");
        EtcdLeadership l = leader(o, ViewCodec.MAX_VALUE_BYTES);
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
