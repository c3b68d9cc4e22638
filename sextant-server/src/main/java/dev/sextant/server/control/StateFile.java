package dev.sextant.server.control;

import dev.sextant.config.SnapshotException;
import dev.sextant.config.SnapshotJson;
import dev.sextant.server.internal.Versions;
import dev.sextant.snapshot.Snapshot;
import io.micrometer.core.instrument.Counter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Logger;

/**
 * The control plane's {@code state_file}: the last published snapshot, kept on disk so that a restarted control plane
 * goes on from it. Its next snapshot then takes the following version (gateways refuse older ones) and is solved with
 * the kept one as the previous snapshot: warm-started, and with slot tables rebalanced from the tables the gateways
 * hold, so that a restart moves no more conversations off their engines than the weights' change requires.
 *
 * <p>Writes happen on their own thread, never the policy loop (the L fleet's snapshot is 32 MB of JSON); when several
 * publications come faster than a write, only the newest is written. Each write goes to a temporary file beside the
 * state file and is then moved over it atomically, so a crash leaves the old or the new snapshot, never half of one.
 * A write that fails is logged at SEVERE (once per kind of failure) and counted; the control plane serves on.
 */
final class StateFile implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(StateFile.class.getName());

    private final Path file;
    private final Counter failures;
    private final AtomicReference<Snapshot> pending = new AtomicReference<>();
    private final ExecutorService writer = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "sextant-state");
        t.setDaemon(true);
        return t;
    });
    private String lastProblem;

    StateFile(Path file, Counter failures) {
        this.file = file;
        this.failures = failures;
    }

    /**
     * The snapshot kept by a previous run, or null when there is none. A file that cannot be read or parsed, whose
     * content does not match its hash, or whose version is beyond what may be adopted ({@link Versions}) is logged at
     * SEVERE and ignored (the control plane then starts from version 1, and catches up with its gateways).
     */
    Snapshot restore() {
        if (!Files.exists(file)) {
            return null;
        }
        try {
            Snapshot s = Versions.readKept(file);
            LOG.info("state file " + file + ": going on from snapshot " + s.version());
            return s;
        } catch (SnapshotException | RuntimeException e) {
            LOG.severe("STATE FILE " + file + " unusable, starting afresh (version 1; gateways that hold a later"
                    + " version make this control plane catch up): " + e.getMessage());
            return null;
        }
    }

    /** Keeps {@code s} (soon, on the writer thread); a newer call before the write replaces it. */
    void save(Snapshot s) {
        if (pending.getAndSet(s) == null) {
            writer.execute(this::writePending);
        }
    }

    private void writePending() {
        Snapshot s = pending.getAndSet(null);
        if (s == null) {
            return;
        }
        try {
            dev.sextant.server.internal.Http.writeAtomically(file, SnapshotJson.write(s));
            lastProblem = null;
        } catch (IOException | RuntimeException e) {
            failures.increment();
            String problem = e.getClass().getSimpleName() + ": " + e.getMessage();
            if (!problem.equals(lastProblem)) {
                lastProblem = problem;
                LOG.severe("STATE FILE " + file + " not written (snapshot " + s.version() + "): " + problem
                        + "; a restart would start from an older snapshot or afresh");
            }
        }
    }

    /** Finishes the write in progress and the pending one, waiting up to 10 s. */
    @Override
    public void close() {
        writer.shutdown();
        try {
            if (!writer.awaitTermination(10, TimeUnit.SECONDS)) {
                LOG.warning("state file " + file + ": the last write did not finish within 10 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
