package dev.sextant.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sextant.server.control.Leadership;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Election and fencing against a real etcd (docs/etcd.md, "Election and fencing"; docs/design.md §8). */
class EtcdLeadershipIT extends OneEtcdMember {
    @Test
    void twoCandidates_oneLeads_andTheOtherTakesOverWhenTheLeaderIsKilled() {
        EtcdOptions o = etcd.options("/election-kill");
        EtcdLeadership a = (EtcdLeadership) Etcd.leadership(o);
        EtcdLeadership b = (EtcdLeadership) Etcd.leadership(o);
        try {
            a.join(URI.create("http://127.0.0.1:7001"));
            b.join(URI.create("http://127.0.0.1:7002"));
            assertThat(EtcdCluster.await(() -> a.leading() || b.leading(), Duration.ofSeconds(20))).isTrue();
            assertThat(a.leading() && b.leading()).as("never two leaders").isFalse();
            EtcdLeadership leader = a.leading() ? a : b;
            EtcdLeadership standby = leader == a ? b : a;

            leader.halt(); // killed: its lease is not revoked, it runs out
            assertThat(EtcdCluster.await(standby::leading, Duration.ofSeconds(20)))
                    .as("the standby leads once the killed leader's lease ran out").isTrue();
        } finally {
            a.close();
            b.close();
        }
    }

    @Test
    void leaderThatCloses_givesUpAtOnce() {
        EtcdOptions o = etcd.options("/election-close");
        Leadership a = Etcd.leadership(o);
        Leadership b = Etcd.leadership(o);
        try {
            a.join(URI.create("http://127.0.0.1:7001"));
            assertThat(EtcdCluster.await(a::leading, Duration.ofSeconds(20))).isTrue();
            b.join(URI.create("http://127.0.0.1:7002"));
            assertThat(b.leading()).isFalse();
            a.close();
            assertThat(EtcdCluster.await(b::leading, Duration.ofSeconds(20))).isTrue();
        } finally {
            a.close();
            b.close();
        }
    }

    @Test
    void deposedLeaderStillBelievingItLeads_isRefusedByEtcd() {
        EtcdOptions o = etcd.options("/fencing");
        AtomicLong now = new AtomicLong(); // a's clock stands still: it goes on believing it leads
        EtcdLeadership a = new EtcdLeadership(Clients.connect(o), o, now::get, Clock.systemUTC(), 1 << 20);
        EtcdLeadership b = (EtcdLeadership) Etcd.leadership(o);
        try (Client admin = Clients.connect(o)) {
            a.joinUnscheduled(URI.create("http://127.0.0.1:7001"));
            a.renew();
            assertThat(a.leading()).isTrue();
            a.publish(Snapshots.version(5));

            revokeLeaderLease(admin, o); // as if a's lease expired while it was paused
            b.join(URI.create("http://127.0.0.1:7002"));
            assertThat(EtcdCluster.await(b::leading, Duration.ofSeconds(20))).isTrue();

            assertThat(a.leading()).as("a has not noticed").isTrue();
            assertThatThrownBy(() -> a.publish(Snapshots.version(6))).isInstanceOf(Leadership.Deposed.class)
                    .hasMessageContaining("is over");
            assertThat(b.highestVersion()).as("a's refused publication reserved nothing").isEqualTo(5);
        } finally {
            a.close();
            b.close();
        }
    }

    @Test
    void leadershipLostPartWayThroughAPublication_itsNextViewIsRefused_andItEnds() {
        EtcdOptions o = etcd.options("/part-way");
        AtomicLong now = new AtomicLong(); // a's clock stands still: it goes on believing it leads
        AtomicBoolean armed = new AtomicBoolean();
        AtomicInteger submitted = new AtomicInteger();
        try (Client admin = Clients.connect(o)) {
            // each view made on a thread of its own; once armed, the second view (west's) is made only after the
            // first (east's) is in etcd and a's lease is revoked
            Executor encoders = task -> {
                int n = armed.get() ? submitted.incrementAndGet() : 0;
                new Thread(() -> {
                    try {
                        if (n == 2) {
                            // not asserted here but below: the publication waits for this task whatever happens
                            EtcdCluster.await(() -> viewVersion(admin, o, "east") == 6, Duration.ofSeconds(20));
                            revokeLeaderLease(admin, o);
                        }
                    } finally {
                        task.run();
                    }
                }).start();
            };
            EtcdLeadership a = new EtcdLeadership(Clients.connect(o), o, now::get, Clock.systemUTC(), 1 << 20, encoders);
            SimpleMeterRegistry meters = new SimpleMeterRegistry();
            a.bindTo(meters);
            try {
                a.joinUnscheduled(URI.create("http://127.0.0.1:7001"));
                a.renew();
                assertThat(a.leading()).isTrue();
                a.publish(Snapshots.version(5));
                assertThat(meters.get("sextant.etcd.publication.first.view").timer().count()).isEqualTo(1);
                assertThat(meters.get("sextant.etcd.publication.time").timer().count()).isEqualTo(1);

                armed.set(true);
                assertThatThrownBy(() -> a.publish(Snapshots.version(6))).isInstanceOf(Leadership.Deposed.class)
                        .hasMessageContaining("is over");
                assertThat(submitted.get()).as("the views made: east's and west's").isEqualTo(2);
                assertThat(viewVersion(admin, o, "east")).as("written before the lease was lost").isEqualTo(6);
                assertThat(viewVersion(admin, o, "west")).as("refused: it keeps the version before").isEqualTo(5);
                assertThat(meters.get("sextant.etcd.publication.first.view").timer().count())
                        .as("its first view was written").isEqualTo(2);
                assertThat(meters.get("sextant.etcd.publication.time").timer().count())
                        .as("a publication refused part-way is not a whole one").isEqualTo(1);
                assertThat(a.leading()).as("a knows now").isFalse();
                assertThatThrownBy(() -> a.publish(Snapshots.version(7))).isInstanceOf(Leadership.Deposed.class);
                assertThat(viewVersion(admin, o, "east")).isEqualTo(6);
            } finally {
                a.close();
            }
        }
    }

    /** The version of {@code gatewayCluster}'s view in etcd under {@code o}'s prefix; 0 when there is none. */
    private static long viewVersion(Client admin, EtcdOptions o, String gatewayCluster) {
        List<KeyValue> kvs = Clients.await(admin.getKVClient().get(
                ByteSequence.from(o.prefix() + "/views/" + gatewayCluster, StandardCharsets.UTF_8))).getKvs();
        return kvs.isEmpty() ? 0 : ViewCodec.header(kvs.get(0).getValue().getBytes()).version();
    }

    @Test
    void versionsStayMonotoneAcrossLeaders() {
        EtcdOptions o = etcd.options("/monotone");
        EtcdLeadership a = (EtcdLeadership) Etcd.leadership(o);
        EtcdLeadership b = (EtcdLeadership) Etcd.leadership(o);
        try {
            a.join(URI.create("http://127.0.0.1:7001"));
            assertThat(EtcdCluster.await(a::leading, Duration.ofSeconds(20))).isTrue();
            a.publish(Snapshots.version(7));
            assertThatThrownBy(() -> a.publish(Snapshots.version(7))).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("version: 7 (expected: above the reserved");
            b.join(URI.create("http://127.0.0.1:7002"));
            a.close();
            assertThat(EtcdCluster.await(b::leading, Duration.ofSeconds(20))).isTrue();

            assertThat(b.highestVersion()).isEqualTo(7);
            assertThatThrownBy(() -> b.publish(Snapshots.version(3))).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("version: 3");
            b.publish(Snapshots.version(8));
            assertThat(b.highestVersion()).isEqualTo(8);
        } finally {
            a.close();
            b.close();
        }
    }

    private static void revokeLeaderLease(Client admin, EtcdOptions o) {
        List<KeyValue> kvs = Clients.await(admin.getKVClient().get(
                ByteSequence.from(o.prefix() + "/leader", StandardCharsets.UTF_8))).getKvs();
        assertThat(kvs).hasSize(1);
        Clients.await(admin.getLeaseClient().revoke(kvs.get(0).getLease()));
    }
}
