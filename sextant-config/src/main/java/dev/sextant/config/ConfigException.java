package dev.sextant.config;

import java.util.List;
import java.util.stream.Collectors;

/**
 * A configuration file that cannot be used, with every problem found in it. The message lists the
 * problems one per line, each as {@code file:line: field: what is wrong (expected: ...)}.
 */
public class ConfigException extends Exception {
    private static final long serialVersionUID = 1L;

    private final transient List<ConfigProblem> problems;

    /** @param problems at least one */
    public ConfigException(List<ConfigProblem> problems) {
        super(message(problems));
        this.problems = List.copyOf(problems);
    }

    private static String message(List<ConfigProblem> problems) {
        if (problems.isEmpty()) {
            throw new IllegalArgumentException("problems: empty (expected: at least one problem)");
        }
        return problems.stream().map(ConfigProblem::toString).collect(Collectors.joining("\n"));
    }

    /** Every problem on one line, separated by {@code "; "}: for a log line or a status field. */
    public String oneLine() {
        return problems.stream().map(ConfigProblem::toString).collect(Collectors.joining("; "));
    }

    /** Every problem found, in file order; never empty. */
    public List<ConfigProblem> problems() {
        return problems;
    }
}
