package dev.sextant.server.gateway;

import dev.sextant.snapshot.Snapshot;
import java.util.function.Consumer;

/**
 * A snapshot source that delivers nothing until the test hands it a snapshot, and says whether the gateway started
 * and closed it: a control plane that has not answered yet, without a socket or a clock.
 */
final class HandFedSource implements SnapshotSource {
    private Consumer<Snapshot> listener;
    private boolean started;
    private boolean closed;

    @Override
    public synchronized void start(Consumer<Snapshot> l) {
        listener = l;
        started = true;
    }

    /** Delivers {@code s} as the control plane's answer; the gateway must have started the source. */
    synchronized void deliver(Snapshot s) {
        if (listener == null) {
            throw new IllegalStateException("not started");
        }
        listener.accept(s);
    }

    synchronized boolean started() {
        return started;
    }

    synchronized boolean closed() {
        return closed;
    }

    @Override
    public synchronized void close() {
        closed = true;
    }
}
