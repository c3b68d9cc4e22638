package dev.sextant.server.internal;

/**
 * Text from a request or an engine made safe for a log line: a model name, a path, an engine's error body. Such text
 * may hold line breaks (a JSON string's {@code \n} is a real one once decoded), which in a log read line by line would
 * end the line and begin one the sender wrote (CWE-117), and other control characters a terminal acts on. Each control
 * character (C0, DEL, C1) and Unicode's line and paragraph separators is written as its Java escape ({@code \n},
 * {@code \r}, {@code \t}, {@code \u0085}), so one event stays one line and what was sent can still be read.
 */
public final class LogText {
    private LogText() {
    }

    /** {@code s} with its control characters escaped; {@code s} itself when it has none. */
    public static String oneLine(String s) {
        int i = 0;
        while (i < s.length() && !escaped(s.charAt(i))) {
            i++;
        }
        if (i == s.length()) {
            return s;
        }
        StringBuilder b = new StringBuilder(s.length() + 16).append(s, 0, i);
        for (; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (escaped(c)) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.toString();
    }

    private static boolean escaped(char c) {
        return c < 0x20 || c >= 0x7f && c <= 0x9f || c == '\u2028' || c == '\u2029';
    }
}
