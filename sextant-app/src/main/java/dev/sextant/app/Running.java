package dev.sextant.app;

import java.io.PrintWriter;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** Keeps a server command running until Ctrl-C (or for a set time), then closes what it started, in order. */
final class Running {
    private Running() {
    }

    /** {@code --duration}: seconds ≥ 0, finite (0: until Ctrl-C); else bad input, before anything starts. */
    static void checkSeconds(double seconds) {
        if (!(seconds >= 0) || Double.isInfinite(seconds)) {
            throw new UsageException("--duration: " + seconds + " (expected: seconds >= 0; 0 or none: until Ctrl-C)");
        }
    }

    /** A port option: 0..65535 (0: any free port). */
    static void checkPort(String option, int port) {
        if (port < 0 || port > 65535) {
            throw new UsageException(option + ": " + port + " (expected: 0..65535, 0 for any free port)");
        }
    }

    /**
     * Blocks until the process is asked to stop (Ctrl-C, SIGTERM), or {@code seconds} passed (0: no limit), then
     * closes {@code parts} in order, once. Asked by a signal, the process then exits with status 0 once they are
     * closed (1 if one failed to close), not with the JVM's 128 + the signal's number: a stop that was asked for and
     * went cleanly is no failure. Each part's close is bounded by its own settings (a gateway's drain window and
     * drain timeout), so the signal's wait for it is not.
     */
    static void untilStopped(PrintWriter out, double seconds, AutoCloseable... parts) throws InterruptedException {
        CountDownLatch stop = new CountDownLatch(1);
        CountDownLatch closed = new CountDownLatch(1);
        AtomicInteger closedParts = new AtomicInteger();
        Thread hook = new Thread(() -> {
            stop.countDown();
            while (closed.getCount() > 0) {
                try {
                    closed.await();
                } catch (InterruptedException e) {
                    // the JVM goes down when the hook returns: the parts must close first
                }
            }
            out.flush();
            // the only way to choose the exit status of a JVM that is shutting down for a signal
            Runtime.getRuntime().halt(closedParts.get() == parts.length ? 0 : 1);
        }, "sextant-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            if (seconds > 0) {
                stop.await(Math.round(seconds * 1000), TimeUnit.MILLISECONDS);
            } else {
                stop.await();
            }
            out.println("stopping …");
            out.flush();
        } finally {
            try {
                for (AutoCloseable p : parts) {
                    try {
                        if (p != null) {
                            p.close();
                        }
                    } catch (Exception e) {
                        out.println("error while stopping: " + e);
                        continue;
                    }
                    closedParts.incrementAndGet();
                }
                out.println("stopped");
                out.flush();
                try {
                    Runtime.getRuntime().removeShutdownHook(hook);
                } catch (IllegalStateException e) {
                    // already shutting down: the hook is running and waits for `closed`
                }
            } finally {
                closed.countDown();
            }
        }
    }
}
