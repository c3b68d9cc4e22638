package dev.sextant.server.auth;

import dev.sextant.config.ConfigException;
import dev.sextant.server.internal.WatchedFile;
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

    private final WatchedFile<Credentials> file;

    private CredentialsFile(WatchedFile<Credentials> file) {
        this.file = file;
    }

    /**
     * Reads {@code file}.
     *
     * @throws ConfigException it cannot be read or is invalid: every problem, naming the file, the line and the field
     */
    public static CredentialsFile load(Path file) throws ConfigException {
        return new CredentialsFile(WatchedFile.load(file, Credentials::read));
    }

    @Override
    public Principal authenticate(String authorization) {
        return file.current().authenticate(authorization);
    }

    /**
     * Reads the file again when its content changed since it was last looked at.
     *
     * @return what the look found: a change refused, or an unreadable file, is {@link WatchedFile.Change#REFUSED} once,
     *         not at every look
     */
    public synchronized WatchedFile.Change reloadIfChanged() {
        WatchedFile.Change change = file.refresh();
        switch (change) {
            case RELOADED -> LOG.info("credentials reloaded from " + file.file() + " (" + current().summary() + ")");
            case REFUSED -> LOG.severe("CREDENTIALS RELOAD FAILED, keeping the credentials in force ("
                    + current().summary() + "): " + file.error());
            case RESTORED -> LOG.info("credentials file " + file.file() + " is readable again, unchanged");
            case UNCHANGED -> { }
        }
        return change;
    }

    /** The file. */
    public Path file() {
        return file.file();
    }

    /** Why the file on disk is not in force (its problems), or null when it is. */
    public String error() {
        return file.error();
    }

    /** The credentials in force. */
    public Credentials current() {
        return file.current();
    }

    @Override
    public String toString() {
        return "credentials from " + file.file();
    }
}
