package dev.sextant.app;

/** Bad input that is not in a file: an option value, an unknown gateway cluster or class. Exit code 2. */
final class UsageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
        super(message);
    }
}
