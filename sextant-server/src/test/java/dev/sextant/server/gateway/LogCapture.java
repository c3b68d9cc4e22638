package dev.sextant.server.gateway;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/**
 * Everything logged through {@code java.util.logging} while open, at every level (the root logger's level is
 * lowered to {@code ALL} for the duration; the console keeps showing {@code INFO} and above), each record as its
 * formatted text with the stack trace of its exception. The JDK HTTP client's own byte-level debug logger stays at
 * {@code INFO}: it is the JDK's trace, off unless an operator asks for it, and at {@code ALL} it writes tens of
 * thousands of records per test.
 */
public final class LogCapture implements AutoCloseable {
    private static final Logger ROOT = Logger.getLogger("");

    private final List<String> lines = new CopyOnWriteArrayList<>();
    private static final Logger JDK_HTTP_DEBUG = Logger.getLogger("jdk.internal.httpclient.debug");

    private final Level previous = ROOT.getLevel();
    private final Level previousJdk = JDK_HTTP_DEBUG.getLevel();
    private final SimpleFormatter formatter = new SimpleFormatter();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord r) {
            StringBuilder sb = new StringBuilder(r.getLevel() + " " + r.getLoggerName() + ": "
                    + formatter.formatMessage(r));
            if (r.getThrown() != null) {
                StringWriter w = new StringWriter();
                r.getThrown().printStackTrace(new PrintWriter(w));
                sb.append('\n').append(w);
            }
            lines.add(sb.toString());
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    public LogCapture() {
        handler.setLevel(Level.ALL);
        ROOT.addHandler(handler);
        ROOT.setLevel(Level.ALL);
        JDK_HTTP_DEBUG.setLevel(Level.INFO);
        for (Handler h : ROOT.getHandlers()) {
            if (h != handler && h.getLevel().intValue() < Level.INFO.intValue()) {
                h.setLevel(Level.INFO); // keep the console as it was: INFO and above
            }
        }
    }

    /** The records so far, formatted. */
    public List<String> lines() {
        return List.copyOf(lines);
    }

    /** Whether some record so far contains every one of {@code parts}. */
    public boolean any(String... parts) {
        return lines.stream().anyMatch(l -> {
            for (String p : parts) {
                if (!l.contains(p)) {
                    return false;
                }
            }
            return true;
        });
    }

    @Override
    public void close() {
        ROOT.removeHandler(handler);
        ROOT.setLevel(previous);
        JDK_HTTP_DEBUG.setLevel(previousJdk);
    }
}
