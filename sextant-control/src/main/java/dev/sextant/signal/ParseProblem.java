package dev.sextant.signal;

/**
 * A line the parser could not use. The line is skipped; the rest of the scrape is still parsed.
 *
 * @param lineNumber 1-based line number in the scraped text
 * @param line       the offending line, cut to at most 200 characters
 * @param message    what was wrong with it, e.g. {@code "invalid value \"1,0\""}
 */
public record ParseProblem(int lineNumber, String line, String message) {
    public ParseProblem {
        if (lineNumber < 1) {
            throw new IllegalArgumentException("lineNumber: " + lineNumber + " (expected: >= 1)");
        }
        line = line == null ? "" : line;
        message = message == null ? "" : message;
    }

    @Override
    public String toString() {
        return "line " + lineNumber + ": " + message + ": " + line;
    }
}
