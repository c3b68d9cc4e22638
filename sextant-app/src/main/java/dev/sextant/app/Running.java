package dev.sextant.app;

import java.io.PrintWriter;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

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
     * Blocks until the process is asked to stop, or {@code seconds} passed (0: no limit), then closes
     * {@code parts} in order, once.
     */
    static void untilStopped(PrintWriter out, double seconds, AutoCloseable... parts) throws InterruptedException {
        CountDownLatch stop = new CountDownLatch(1);
        CountDownLatch closed = new CountDownLatch(1);
        Thread hook = new Thread(() -> {
            stop.countDown();
            try {
                closed.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
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
            for (AutoCloseable p : parts) {
                try {
                    if (p != null) {
                        p.close();
                    }
                } catch (Exception e) {
                    out.println("error while stopping: " + e);
                }
            }
            closed.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // already shutting down: the hook is running and waits for `closed`
            }
            out.println("stopped");
            out.flush();
        }
    }
}
