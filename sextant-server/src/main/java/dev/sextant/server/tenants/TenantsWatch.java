package dev.sextant.server.tenants;

import dev.sextant.config.ConfigException;
import dev.sextant.server.internal.WatchedFile;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.logging.Logger;

/**
 * A tenants file in force, read again when its content changes, as the control plane reads its topology: the file is
 * looked at every {@link #CHECK} on a thread of its own (never an event loop), and a new reading is swapped in through
 * one volatile reference, so a request sees the old tenants or the new ones, never a mix. A file that became invalid
 * or unreadable is said once (SEVERE, with every problem's file, line and field) and the tenants read before stay in
 * force; keys removed from the file (revoked, rotated out) are refused from the next request after the reload.
 */
public final class TenantsWatch implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(TenantsWatch.class.getName());
    /** How often the file is looked at. */
    public static final Duration CHECK = Duration.ofSeconds(1);

    private final WatchedFile<Tenants> file;
    private final ScheduledExecutorService thread;
    private final LongAdder reloads = new LongAdder();
    private final LongAdder failures = new LongAdder();

    private TenantsWatch(WatchedFile<Tenants> file, Duration check) {
        this.file = file;
        this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "sextant-tenants-watch");
            t.setDaemon(true);
            return t;
        });
        thread.scheduleWithFixedDelay(this::check, check.toNanos(), check.toNanos(), TimeUnit.NANOSECONDS);
    }

    /**
     * Reads {@code file} and watches it.
     *
     * @throws ConfigException the file cannot be read or is invalid: every problem with its file, line and field
     */
    public static TenantsWatch start(Path file) throws ConfigException {
        return start(file, CHECK);
    }

    /** As {@link #start(Path)}, looking at the file every {@code check}. */
    public static TenantsWatch start(Path file, Duration check) throws ConfigException {
        return new TenantsWatch(WatchedFile.load(file, Tenants::load), check);
    }

    /** The tenants in force. */
    public Tenants current() {
        return file.current();
    }

    /** The file watched. */
    public Path file() {
        return file.file();
    }

    /** Readings of a changed file that were swapped in. */
    public long reloads() {
        return reloads.sum();
    }

    /** Readings of a changed file that were refused (invalid or unreadable); the tenants before stayed in force. */
    public long failures() {
        return failures.sum();
    }

    /** Looks at the file now, and swaps a changed valid one in (the watch thread does it every {@link #CHECK}). */
    public synchronized void check() {
        switch (file.refresh()) {
            case RELOADED -> {
                reloads.increment();
                Tenants next = file.current();
                LOG.info("tenants file " + file.file() + " reloaded: " + next.all().size() + " tenants, " + next.keys()
                        + " keys");
            }
            case REFUSED -> {
                failures.increment();
                LOG.severe("TENANTS RELOAD FAILED, keeping the tenants read before in force: " + file.error());
            }
            case RESTORED -> LOG.info("tenants file " + file.file() + " is back as it was; the tenants in force are its");
            case UNCHANGED -> { }
        }
    }

    @Override
    public void close() {
        thread.shutdownNow();
    }
}
