package dev.sextant.server.internal;

import dev.sextant.config.SnapshotException;
import dev.sextant.config.SnapshotJson;
import dev.sextant.snapshot.Snapshot;
import java.nio.file.Path;

/**
 * How far a snapshot version that arrives from outside the control plane's own count may be believed: a gateway's
 * {@code If-None-Match}, the control plane's state file, a gateway's snapshot cache file. Versions are assigned by the
 * control plane alone, one more than the last; a claim is only ever a hint of where a previous run of it stopped, so
 * it is taken up to {@link #MAX_ADOPTED} and refused above (docs/design.md §6, 9).
 *
 * <p>Why 2<sup>53</sup> − 1: it is the largest integer every JSON reader holds exactly (a JavaScript number), and it
 * leaves 2<sup>63</sup> − 2<sup>53</sup> versions above it: at one publication a millisecond, 290 million years before
 * a {@code long} could overflow. A control plane that publishes every 10 s reaches it after 2.8 billion years; a
 * version above it can only be forged or corrupt.
 */
public final class Versions {
    /** The largest version a claim from outside may make the control plane adopt or a gateway start from. */
    public static final long MAX_ADOPTED = (1L << 53) - 1;

    private Versions() {
    }

    /** Whether a version found in a file or a request may be taken: in 1..{@link #MAX_ADOPTED}. */
    public static boolean adoptable(long version) {
        return version >= 1 && version <= MAX_ADOPTED;
    }

    /** Why {@code version} of {@code what} is refused, naming the bound. */
    public static String refusal(String what, long version) {
        return what + " version " + version + " (expected: 1.." + MAX_ADOPTED
                + "; above that a version is forged or corrupt: publications take billions of years to reach it)";
    }

    /**
     * The snapshot an earlier run kept in {@code file} (the control plane's state file, a gateway's snapshot cache),
     * if it may be started from: whole (its content matches its hash) and of an {@link #adoptable} version. Held, a
     * version above {@link #MAX_ADOPTED} would make every snapshot of the control plane look older, and make a control
     * plane without a state file catch up beyond any sane version.
     *
     * @throws SnapshotException        the file cannot be read or holds no snapshot
     * @throws IllegalArgumentException the snapshot was altered or cut short, or its version is refused: the message
     *                                  says which
     */
    public static Snapshot readKept(Path file) throws SnapshotException {
        Snapshot s = SnapshotJson.read(file);
        if (!s.hash().equals(s.contentHash())) {
            throw new IllegalArgumentException("its content does not match its hash (altered or cut short)");
        }
        if (!adoptable(s.version())) {
            throw new IllegalArgumentException(refusal("its", s.version()));
        }
        return s;
    }
}
