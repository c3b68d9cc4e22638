package dev.sextant.sim;

/** A scenario file is wrong; the message names the file and the field. */
public final class ScenarioException extends Exception {
    private static final long serialVersionUID = 1L;

    ScenarioException(String message) {
        super(message);
    }

    ScenarioException(String message, Throwable cause) {
        super(message, cause);
    }
}
