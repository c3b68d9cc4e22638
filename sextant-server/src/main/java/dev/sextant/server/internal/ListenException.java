package dev.sextant.server.internal;

/** A server could not open its listening socket: {@code cannot listen on HOST:PORT: REASON}. */
public final class ListenException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ListenException(String host, int port, Throwable cause) {
        super("cannot listen on " + host + ":" + port + ": " + reason(cause), cause);
    }

    /** The operating system's words, without the native transport's {@code bind(..) failed with error(-98): }. */
    private static String reason(Throwable cause) {
        if (cause instanceof java.nio.channels.UnresolvedAddressException) {
            return "no such host or address";
        }
        String m = cause == null || cause.getMessage() == null ? String.valueOf(cause) : cause.getMessage();
        return m.replaceFirst("^bind\\(\\.\\.\\) failed with error\\(-?\\d+\\): ", "");
    }
}
