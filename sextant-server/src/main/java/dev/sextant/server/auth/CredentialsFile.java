package dev.sextant.server.auth;

import dev.sextant.config.ConfigException;
import dev.sextant.config.ConfigProblem;
import dev.sextant.server.internal.FileFingerprint;
import java.io.IOException;
import java.nio.file.Path;
import java.util.logging.Logger;

/**
 * A control plane's credentials file ({@link Credentials}), read at start and again whenever its content changes, so
 * that tokens are added and revoked without a restart. A change that cannot be read or is invalid is refused as a
 * whole, logged at SEVERE with every problem (file, line, field), and the credentials read before stay in force: a
 * botched edit locks nobody out. {@link #reloadIfChanged()} is called by whoever watches the file (the control plane's
 * policy thread, with the topology); {@link #authenticate} from any thread.
 */
public final class CredentialsFile implements Authenticator {
    private static final Logger LOG = Logger.getLogger(CredentialsFile.class.getName());

    /** What a look at the file found. */
    public enum Reload {
        /** The same content as the credentials in force. */
        UNCHANGED,
        /** New content, read and in force. */
        RELOADED,
        /**
         * New content refused, or the file became unreadable (said once, not at every look); the credentials read
         * before stay in force.
         */
        FAILED
    }

    private final Path file;
    private volatile Credentials credentials;
    /** The fingerprint of the content last looked at (in force, or refused); touched by the watching thread only. */
    private String fingerprint;
    private volatile String error;
    /** The file could not be read at the last look (watching thread only). */
    private boolean unreadable;

    private CredentialsFile(Path file, Credentials credentials, String fingerprint) {
        this.file = file;
        this.credentials = credentials;
        this.fingerprint = fingerprint;
    }

    /**
     * Reads {@code file}.
     *
     * @throws ConfigException it cannot be read or is invalid: every problem, naming the file, the line and the field
     */
    public static CredentialsFile load(Path file) throws ConfigException {
        String fp = fingerprint(file);
        return new CredentialsFile(file, Credentials.read(file), fp);
    }

    private static String fingerprint(Path file) throws ConfigException {
        try {
            return FileFingerprint.of(file);
        } catch (IOException e) {
            throw new ConfigException(java.util.List.of(new ConfigProblem(file.toString(), 0, "",
                    ConfigProblem.cannotRead(e))));
        }
    }

    @Override
    public Principal authenticate(String authorization) {
        return credentials.authenticate(authorization);
    }

    /** Reads the file again when its content changed since it was last looked at. */
    public synchronized Reload reloadIfChanged() {
        String fp;
        try {
            fp = FileFingerprint.of(file);
        } catch (IOException e) {
            return failed(file + ": " + ConfigProblem.cannotRead(e), true);
        }
        if (fp.equals(fingerprint)) {
            if (error != null && unreadable) { // readable again, as it was: nothing to reload, nothing wrong
                LOG.info("credentials file " + file + " is readable again, unchanged");
                error = null;
            }
            unreadable = false;
            return Reload.UNCHANGED;
        }
        fingerprint = fp;
        Credentials next;
        try {
            next = Credentials.read(file);
        } catch (ConfigException e) {
            return failed(e.problems().stream().map(ConfigProblem::toString)
                    .collect(java.util.stream.Collectors.joining("; ")), false);
        }
        credentials = next;
        error = null;
        unreadable = false;
        LOG.info("credentials reloaded from " + file + " (" + next.summary() + ")");
        return Reload.RELOADED;
    }

    private Reload failed(String problems, boolean cannotRead) {
        boolean news = !problems.equals(error); // an unreadable file is told once, not at every look
        if (news) {
            LOG.severe("CREDENTIALS RELOAD FAILED, keeping the credentials in force (" + credentials.summary()
                    + "): " + problems);
        }
        error = problems;
        unreadable = cannotRead;
        return news ? Reload.FAILED : Reload.UNCHANGED;
    }

    /** The file. */
    public Path file() {
        return file;
    }

    /** Why the file on disk is not in force (its problems), or null when it is. */
    public String error() {
        return error;
    }

    /** The credentials in force. */
    public Credentials current() {
        return credentials;
    }

    @Override
    public String toString() {
        return "credentials from " + file;
    }
}
