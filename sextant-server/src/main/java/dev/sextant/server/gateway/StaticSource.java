package dev.sextant.server.gateway;

import dev.sextant.snapshot.Snapshot;
import java.util.function.Consumer;

/** A {@link SnapshotSource} fed by hand: it delivers its first snapshot on start and each newer one published. */
public final class StaticSource implements SnapshotSource {
    private Snapshot held;
    private Consumer<Snapshot> listener;

    StaticSource(Snapshot first) {
        if (first == null) {
            throw new IllegalArgumentException("snapshot: missing (expected: a snapshot)");
        }
        this.held = first;
    }

    @Override
    public synchronized void start(Consumer<Snapshot> l) {
        this.listener = l;
        l.accept(held);
    }

    /**
     * Delivers {@code next} when its version is not older than the held one.
     *
     * @return false when refused as older
     */
    public synchronized boolean publish(Snapshot next) {
        if (next.version() < held.version()) {
            return false;
        }
        held = next;
        if (listener != null) {
            listener.accept(next);
        }
        return true;
    }

    /** The snapshot held now. */
    public synchronized Snapshot held() {
        return held;
    }

    @Override
    public void close() {
    }
}
