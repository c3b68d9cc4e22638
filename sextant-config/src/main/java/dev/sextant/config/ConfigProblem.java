package dev.sextant.config;

/**
 * One thing wrong with a configuration file, located for a person who will fix it.
 *
 * @param source  the file's display name, e.g. {@code talk.yaml}
 * @param line    1-based line in the file, or 0 when the problem has no line (e.g. the file is unreadable)
 * @param path    the field, in the file's own key names: {@code engines[1].capacity_rps}; empty for the
 *                whole file
 * @param message what is wrong and what was expected: {@code -3.0 (expected: a finite number > 0)}
 */
public record ConfigProblem(String source, int line, String path, String message) {

    /**
     * Why a file could not be read, in a person's words: {@code cannot read: no such file}, {@code … is a directory},
     * {@code … permission denied}; else the exception's own message (never its class name, nor the path again,
     * which the caller names). A file beyond its reader's limit is said as such, without {@code cannot read}: {@code
     * more than 16777216 bytes (expected: at most 16777216)}.
     */
    public static String cannotRead(Exception e) {
        if (e instanceof BoundedFile.TooLargeException) {
            return e.getMessage();
        }
        String why;
        if (e instanceof java.nio.file.NoSuchFileException) {
            why = "no such file";
        } else if (e instanceof java.nio.file.AccessDeniedException) {
            why = "permission denied";
        } else if (e.getMessage() != null && e.getMessage().equalsIgnoreCase("is a directory")) {
            why = "is a directory";
        } else if (e instanceof java.nio.charset.CharacterCodingException) {
            why = "not UTF-8 text";
        } else {
            why = e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
        }
        return "cannot read: " + why;
    }

    /** {@code source:line: path: message}, leaving out the parts that are absent. */
    @Override
    public String toString() {
        StringBuilder s = new StringBuilder(source);
        if (line > 0) {
            s.append(':').append(line);
        }
        s.append(": ");
        if (!path.isEmpty()) {
            s.append(path).append(": ");
        }
        return s.append(message).toString();
    }
}
