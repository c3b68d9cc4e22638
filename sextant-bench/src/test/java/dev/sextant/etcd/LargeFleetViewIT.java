package dev.sextant.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.bench.fleet.Fleets;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.server.gateway.SnapshotSource;
import dev.sextant.snapshot.Snapshot;
import java.time.Duration;
import java.util.Comparator;
import org.junit.jupiter.api.Test;

/**
 * The L fleet's largest gateway view through etcd: under its request limit, and whole at the gateway. Here rather than
 * in the etcd module because the L fleet is this module's (the etcd module's test helpers come as its test jar).
 */
class LargeFleetViewIT extends OneEtcdMember {
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
        try (EtcdLeadership l = EtcdCluster.leader(o, ViewCodec.MAX_VALUE_BYTES);
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
}
