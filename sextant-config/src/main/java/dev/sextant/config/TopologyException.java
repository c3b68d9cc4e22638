package dev.sextant.config;

import java.util.List;

/** A topology file that cannot be loaded; see {@link ConfigException} for the message format. */
public final class TopologyException extends ConfigException {
    private static final long serialVersionUID = 1L;

    /** @param problems at least one */
    public TopologyException(List<ConfigProblem> problems) {
        super(problems);
    }
}
