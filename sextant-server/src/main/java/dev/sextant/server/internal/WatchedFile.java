package dev.sextant.server.internal;

import dev.sextant.config.ConfigException;
import dev.sextant.config.ConfigProblem;
import dev.sextant.config.YamlTree;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * A file read into a value and read again when its content changes: the tenants file, the credentials file, a token
 * file. Whoever watches it calls {@link #refresh()} (a thread of its own, the control plane's policy thread, or the
 * next request that needs a token) and says what {@link Change} it found in its own words; {@link #current()} may be
 * called from any thread and sees one reading or the next, never a mix.
 *
 * <p>A change is told by the file's {@link FileFingerprint} (its content, not its modification time), and a content
 * is read once: a change that cannot be read or is invalid is refused as a whole and the value read before stays in
 * force, so a botched edit locks nobody out. {@link #error()} says why the file on disk is not in force, until it is.
 * A refused content is {@link Change#REFUSED} once, not at every look; so is each reason a file cannot be read (it is
 * looked at again and again while it is missing).
 *
 * @param <T> what the file is read into
 */
public final class WatchedFile<T> {
    /** Reads a file into a value. */
    @FunctionalInterface
    public interface Parser<T> {
        /**
         * Reads {@code file}.
         *
         * @throws IOException     it cannot be read
         * @throws ConfigException it is invalid: every problem, naming the file, the line and the field
         */
        T parse(Path file) throws IOException, ConfigException;
    }

    /** What a {@link #refresh()} found. */
    public enum Change {
        /** Nothing new: the content looked at before, or a problem already told. */
        UNCHANGED,
        /** New content, read and in force. */
        RELOADED,
        /** New content refused, or the file became unreadable; the value read before stays in force. */
        REFUSED,
        /** The file is readable again with the content in force: nothing to reload, nothing wrong any more. */
        RESTORED
    }

    private final Path file;
    /** Most bytes of the file read, to fingerprint it. */
    private final int maxBytes;
    private final Parser<T> parser;
    private volatile T current;
    private volatile String error;
    /** Whether the last look could not read the file at all (missing, or not readable), as against refusing it. */
    private volatile boolean unreadable;
    /** The fingerprint of the content in force (refresh only). */
    private String inForce;
    /** The fingerprint of the content last looked at, in force or refused; null after the file could not be read. */
    private String seen;

    private WatchedFile(Path file, int maxBytes, Parser<T> parser, T first, String fingerprint) {
        this.file = file;
        this.maxBytes = maxBytes;
        this.parser = parser;
        this.current = first;
        this.inForce = fingerprint;
        this.seen = fingerprint;
    }

    /**
     * Reads {@code file}, a configuration file (at most {@link YamlTree#MAX_DOCUMENT_CHARS} bytes), with {@code
     * parser}, to be watched.
     *
     * @throws IOException     it cannot be read
     * @throws ConfigException it is invalid: every problem, naming the file, the line and the field
     */
    public static <T> WatchedFile<T> read(Path file, Parser<T> parser) throws IOException, ConfigException {
        return read(file, YamlTree.MAX_DOCUMENT_CHARS, parser);
    }

    /**
     * As {@link #read(Path, Parser)}, a file of at most {@code maxBytes} bytes: a larger one cannot be read
     * ({@link dev.sextant.config.BoundedFile.TooLargeException}), at the start as at a later look.
     *
     * @throws IOException     it cannot be read, or is larger
     * @throws ConfigException it is invalid: every problem, naming the file, the line and the field
     */
    public static <T> WatchedFile<T> read(Path file, int maxBytes, Parser<T> parser)
            throws IOException, ConfigException {
        String fingerprint = FileFingerprint.of(file, maxBytes); // first: a change after it is seen at the next look
        return new WatchedFile<>(file, maxBytes, parser, parser.parse(file), fingerprint);
    }

    /**
     * As {@link #read}, with a file that cannot be read as a problem of its own.
     *
     * @throws ConfigException it cannot be read or is invalid: every problem, naming the file, the line and the field
     */
    public static <T> WatchedFile<T> load(Path file, Parser<T> parser) throws ConfigException {
        try {
            return read(file, parser);
        } catch (IOException e) {
            throw new ConfigException(List.of(new ConfigProblem(file.toString(), 0, "", ConfigProblem.cannotRead(e))));
        }
    }

    /** Looks at the file, and reads it again when its content changed since it was last looked at. */
    public synchronized Change refresh() {
        String fp;
        try {
            fp = FileFingerprint.of(file, maxBytes);
        } catch (IOException e) {
            seen = null; // whatever comes back is looked at again
            unreadable = true;
            return refused(file + ": " + ConfigProblem.cannotRead(e));
        }
        unreadable = false;
        if (fp.equals(seen)) {
            return Change.UNCHANGED;
        }
        boolean back = seen == null && fp.equals(inForce);
        seen = fp;
        if (back) {
            error = null;
            return Change.RESTORED;
        }
        T next;
        try {
            next = parser.parse(file);
        } catch (IOException e) {
            seen = null;
            unreadable = true;
            return refused(file + ": " + ConfigProblem.cannotRead(e));
        } catch (ConfigException e) {
            error = e.oneLine();
            return Change.REFUSED; // new content: told even when its problems are those of the content before
        }
        current = next;
        inForce = fp;
        error = null;
        return Change.RELOADED;
    }

    private Change refused(String why) {
        if (why.equals(error)) {
            return Change.UNCHANGED;
        }
        error = why;
        return Change.REFUSED;
    }

    /** The value in force: the last reading that was not refused. */
    public T current() {
        return current;
    }

    /** Why the file on disk is not in force (unreadable, or its problems), or null when it is. */
    public String error() {
        return error;
    }

    /**
     * Whether the last {@link #refresh()} could not read the file at all (it is missing or not readable): a
     * {@link Change#REFUSED} for that reason, not for its content.
     */
    public boolean unreadable() {
        return unreadable;
    }

    /** The file. */
    public Path file() {
        return file;
    }
}
