package dev.sextant.server.control;

import dev.sextant.snapshot.Snapshot;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;

/**
 * Whether this control plane may publish, when several control planes serve one fleet (docs/design.md §8). Every
 * replica takes the same signals (scrapes, reports, canaries), so a standby's estimates are warm; only the one that
 * leads steps the loop and publishes. A publication is fenced: {@link #publish} refuses it once leadership is lost,
 * so two leaders never both publish, and a new leader continues above {@link #highestVersion()}.
 *
 * <p>A control plane alone ({@link #alone()}) always leads and publishes nowhere beyond its own long-poll.
 */
public interface Leadership extends AutoCloseable {

    /**
     * Called once the control plane listens: it campaigns from now on, advertising {@code self} (its base URL, where
     * gateways send reports).
     */
    void join(URI self);

    /** True while this replica leads, as far as it knows; a publication is still checked by {@link #publish}. */
    boolean leading();

    /** The highest snapshot version any leader reserved so far, ≥ 0: a new leader publishes above it. */
    long highestVersion();

    /**
     * Publishes {@code snapshot} beyond this process if, and only if, this replica still leads.
     *
     * @throws Deposed when it no longer leads: nothing of it is published from then on (the gateway clusters whose
     *                 views were written before keep them)
     */
    void publish(Snapshot snapshot);

    /** Registers this leadership's meters (leadership, publication size) with the control plane's. */
    default void bindTo(MeterRegistry registry) {
    }

    /** Stops campaigning, giving leadership up at once when held. */
    @Override
    void close();

    /** A control plane that is the only one: it always leads, and its publications stay in its long-poll. */
    static Leadership alone() {
        return Alone.INSTANCE;
    }

    /** A publication refused because this replica no longer leads. */
    final class Deposed extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        /** With why leadership was found lost. */
        public Deposed(String message) {
            super(message);
        }
    }

    /** The single control plane's leadership. */
    enum Alone implements Leadership {
        INSTANCE;

        @Override
        public void join(URI self) {
        }

        @Override
        public boolean leading() {
            return true;
        }

        @Override
        public long highestVersion() {
            return 0;
        }

        @Override
        public void publish(Snapshot snapshot) {
        }

        @Override
        public void close() {
        }
    }
}
