package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Netty's leak detector at {@code PARANOID} for one test class, with its reports collected so that the class can
 * fail on them instead of only logging them. Detection runs when a leaked buffer is collected and the next buffer
 * is tracked, so {@link #assertNoLeakReported()} collects garbage and allocates before looking.
 */
public final class LeakWatch {
    private static final Logger DETECTOR = Logger.getLogger(ResourceLeakDetector.class.getName());

    private final ResourceLeakDetector.Level previous = ResourceLeakDetector.getLevel();
    private final List<String> reports = new CopyOnWriteArrayList<>();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord r) {
            if (r.getLevel().intValue() >= Level.WARNING.intValue() && String.valueOf(r.getMessage()).contains("LEAK")) {
                reports.add(r.getMessage());
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    private LeakWatch() {
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        DETECTOR.addHandler(handler);
    }

    /** Sets the level to {@code PARANOID} and starts collecting reports; {@link #close()} restores the level. */
    public static LeakWatch paranoid() {
        return new LeakWatch();
    }

    /** Fails when a leak of a buffer collected by now was reported. */
    public void assertNoLeakReported() {
        for (int i = 0; i < 3; i++) {
            System.gc();
            System.runFinalization();
            // tracking a new buffer is what makes the detector look at the collected ones
            for (ByteBuf b : List.of(PooledByteBufAllocator.DEFAULT.buffer(8), UnpooledByteBufAllocator.DEFAULT.buffer(8),
                    PooledByteBufAllocator.DEFAULT.directBuffer(8), UnpooledByteBufAllocator.DEFAULT.directBuffer(8))) {
                b.release();
            }
        }
        assertThat(reports).as("Netty leak reports").isEmpty();
    }

    /** {@link #assertNoLeakReported()}, then {@link #close()} whatever it found. */
    public void assertNoLeakThenClose() {
        try {
            assertNoLeakReported();
        } finally {
            close();
        }
    }

    /** Stops collecting and restores the previous level. */
    public void close() {
        DETECTOR.removeHandler(handler);
        ResourceLeakDetector.setLevel(previous);
    }
}
