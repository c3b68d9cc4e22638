package dev.sextant.server.control;

import dev.sextant.snapshot.Snapshot;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link SnapshotPublisher} in memory, backing the control plane's long-poll endpoint: a reader that already
 * holds the current version registers a callback and is woken on the next publication.
 */
public final class InMemoryPublisher implements SnapshotPublisher {
    private volatile Snapshot current;
    private final List<Runnable> waiters = new ArrayList<>();

    InMemoryPublisher() {
    }

    @Override
    public void publish(Snapshot snapshot) {
        List<Runnable> wake;
        synchronized (this) {
            if (current != null && snapshot.version() <= current.version()) {
                throw new IllegalArgumentException("version: " + snapshot.version() + " (expected: > "
                        + current.version() + ", the current version)");
            }
            current = snapshot;
            wake = new ArrayList<>(waiters);
            waiters.clear();
        }
        wake.forEach(Runnable::run);
    }

    @Override
    public Snapshot current() {
        return current;
    }

    /**
     * Runs {@code callback} once at the next publication after {@code version} (at once if one happened already).
     * The callback must be quick; a server hands it to its event loop.
     */
    public void onNext(long version, Runnable callback) {
        synchronized (this) {
            if (current == null || current.version() <= version) {
                waiters.add(callback);
                return;
            }
        }
        callback.run();
    }

    /** Forgets a callback registered with {@link #onNext} (a timed-out or closed poll). */
    public synchronized void cancel(Runnable callback) {
        waiters.remove(callback);
    }
}
