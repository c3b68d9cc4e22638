package dev.sextant.sim;

import dev.sextant.config.ConfigException;
import dev.sextant.config.ConfigProblem;
import java.util.List;

/** A scenario file is wrong; the message names the file, the line and the field (see {@link ConfigException}). */
public final class ScenarioException extends ConfigException {
    private static final long serialVersionUID = 1L;

    ScenarioException(List<ConfigProblem> problems) {
        super(problems);
    }
}
