package dev.sextant.server.internal;

/**
 * A server could not start for a reason outside the program and its input (a gateway whose control plane sent no
 * snapshot in time): not a bug, so the command line prints the message alone, without "internal error".
 */
public final class StartException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public StartException(String message, Throwable cause) {
        super(message, cause);
    }
}
