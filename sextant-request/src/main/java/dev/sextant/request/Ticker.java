package dev.sextant.request;

/**
 * A monotonic time source in nanoseconds. The data plane reads time only through it, so a
 * simulator or a test can drive time by hand; only differences between readings matter.
 */
@FunctionalInterface
public interface Ticker {
    /** Nanoseconds since an arbitrary origin, never decreasing. */
    long nanos();

    /** The system's monotonic clock, {@link System#nanoTime()}. */
    static Ticker system() {
        return System::nanoTime;
    }
}
