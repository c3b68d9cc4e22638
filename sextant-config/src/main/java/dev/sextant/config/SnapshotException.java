package dev.sextant.config;

import java.util.List;

/** A snapshot JSON file that cannot be read; see {@link ConfigException} for the message format. */
public final class SnapshotException extends ConfigException {
    private static final long serialVersionUID = 1L;

    /** @param problems at least one */
    public SnapshotException(List<ConfigProblem> problems) {
        super(problems);
    }
}
