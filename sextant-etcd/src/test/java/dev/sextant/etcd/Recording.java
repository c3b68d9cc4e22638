package dev.sextant.etcd;

import dev.sextant.server.gateway.SnapshotSource;
import dev.sextant.snapshot.Snapshot;
import java.net.URI;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/** A source that passes everything through and keeps the version of every snapshot it delivered, in order. */
final class Recording implements SnapshotSource {
    final List<Long> versions = new CopyOnWriteArrayList<>();
    private final SnapshotSource inner;

    Recording(SnapshotSource inner) {
        this.inner = inner;
    }

    long last() {
        return versions.isEmpty() ? 0 : versions.get(versions.size() - 1);
    }

    @Override
    public void start(Consumer<Snapshot> listener) {
        inner.start(s -> {
            versions.add(s.version());
            listener.accept(s);
        });
    }

    @Override
    public void hold(Snapshot held) {
        inner.hold(held);
    }

    @Override
    public boolean findsControlPlanes() {
        return inner.findsControlPlanes();
    }

    @Override
    public List<URI> controlPlanes() {
        return inner.controlPlanes();
    }

    @Override
    public void bindTo(io.micrometer.core.instrument.MeterRegistry registry) {
        inner.bindTo(registry);
    }

    @Override
    public java.time.Duration cadence() {
        return inner.cadence();
    }

    @Override
    public long refusals() {
        return inner.refusals();
    }

    @Override
    public void close() {
        inner.close();
    }
}
