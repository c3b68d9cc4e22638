package dev.sextant.server.control;

import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * Where engines register themselves (docs/etcd.md, "Engine registration"): the control plane merges what is registered
 * into the topology of its file, as a reload of the file would. A control plane without one ({@link #none()}) knows
 * the engines of its file only.
 */
public interface EngineRegistry extends AutoCloseable {

    /** The registrations now; never blocks on the store (it says what was last read). */
    Entries entries();

    /** Stops watching. */
    @Override
    void close();

    /**
     * What is registered at one time.
     *
     * @param generation grows whenever {@code values} changes; equal generations mean equal values
     * @param values     engine id → the value its registrar wrote ({@link Registration#json()}), unchecked
     */
    record Entries(long generation, SortedMap<String, String> values) {
        /** No registration. */
        public static final Entries NONE = new Entries(0, new TreeMap<>());

        public Entries {
            values = java.util.Collections.unmodifiableSortedMap(new TreeMap<>(values));
        }

        /** As read: {@code values} at {@code generation}. */
        public static Entries of(long generation, Map<String, String> values) {
            return new Entries(generation, new TreeMap<>(values));
        }
    }

    /** No registry: the topology file's engines only. */
    static EngineRegistry none() {
        return None.INSTANCE;
    }

    /** The control plane without a registry. */
    enum None implements EngineRegistry {
        INSTANCE;

        @Override
        public Entries entries() {
            return Entries.NONE;
        }

        @Override
        public void close() {
        }
    }
}
