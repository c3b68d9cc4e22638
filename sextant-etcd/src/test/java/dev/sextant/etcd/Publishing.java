package dev.sextant.etcd;

import dev.sextant.server.control.Leadership;
import dev.sextant.snapshot.Snapshot;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * An etcd leadership that keeps the version of every snapshot it published (the fenced publication accepted), in
 * order: a test tells a new leader's versions from those its predecessor published just before it was killed.
 */
final class Publishing implements Leadership {
    final EtcdLeadership etcd;
    final List<Long> versions = new CopyOnWriteArrayList<>();

    Publishing(EtcdLeadership etcd) {
        this.etcd = etcd;
    }

    /** The last version this replica published, 0 before the first (as {@link Recording#last()}). */
    long last() {
        return versions.isEmpty() ? 0 : versions.get(versions.size() - 1);
    }

    /** The first version this replica published, or {@link Long#MAX_VALUE} before it published one. */
    long first() {
        return versions.isEmpty() ? Long.MAX_VALUE : versions.get(0);
    }

    @Override
    public void join(URI self) {
        etcd.join(self);
    }

    @Override
    public boolean leading() {
        return etcd.leading();
    }

    @Override
    public long highestVersion() {
        return etcd.highestVersion();
    }

    @Override
    public void publish(Snapshot snapshot) {
        etcd.publish(snapshot);
        versions.add(snapshot.version());
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        etcd.bindTo(registry);
    }

    @Override
    public void close() {
        etcd.close();
    }
}
