package dev.sextant.server.control;

import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * Values made from one object (a published snapshot, a solved topology) and kept, by key, until that object
 * is replaced: asked about another object, it forgets the old values. Thread-safe; a race between two
 * objects only makes a value twice.
 */
final class KeptFor<O, K, V> {
    private record Kept<O, K, V>(O of, ConcurrentHashMap<K, V> values) {
    }

    private volatile Kept<O, K, V> kept;

    /** The value for {@code key} made from {@code of}, made by {@code make} the first time it is asked for. */
    V get(O of, K key, Function<K, V> make) {
        Kept<O, K, V> k = kept;
        if (k == null || k.of() != of) {
            k = new Kept<>(of, new ConcurrentHashMap<>());
            kept = k;
        }
        return k.values().computeIfAbsent(key, make);
    }
}
