package dev.sextant.server.control;

import dev.sextant.snapshot.Snapshot;

/**
 * Where the control plane publishes snapshots (docs/design.md §8): held in memory and served by HTTP long-poll today,
 * written to an etcd key later. Versions are monotone: publishing a version not newer than the current one is a
 * programming error.
 */
public interface SnapshotPublisher {

    /**
     * Makes {@code snapshot} the current one and wakes every waiting reader.
     *
     * @throws IllegalArgumentException when its version is not above the current one's
     */
    void publish(Snapshot snapshot);

    /** The current snapshot, or null before the first publication. */
    Snapshot current();

    /** An in-memory publisher whose readers wait with {@link InMemoryPublisher#onNext}. */
    static InMemoryPublisher inMemory() {
        return new InMemoryPublisher();
    }
}
