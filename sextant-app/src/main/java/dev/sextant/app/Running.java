package dev.sextant.app;

import java.io.PrintWriter;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** Keeps a server command running until Ctrl-C (or for a set time), then closes what it started, in order. */
final class Running {
    private Running() {
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
