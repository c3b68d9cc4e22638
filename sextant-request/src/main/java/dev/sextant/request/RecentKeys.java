package dev.sextant.request;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The conversation keys this gateway placed recently: whether a key is new (a conversation's first turn, with nothing
 * cached anywhere to lose) and, for a conversation spacing moved off its key's own engine, which engine took
 * it, so that its later turns go where its cache is (docs/request-path.md §4, "Spacing new conversations"); likewise
 * for a conversation spilled outside the weights while every engine they give its class is ejected, which of the
 * class's allowed engines took it.
 *
 * <p>Direct-mapped: one slot per hash of the key, the newest key wins. Its memory is fixed (8 bytes a slot),
 * and a lookup or a record is one atomic read or write of a long, with no lock and no allocation. A key pushed out
 * of its slot by another is taken for a new one again: it follows its key's order, as every key did before this
 * table. Each gateway process keeps its own; a turn that reaches another process of the cluster follows its key's
 * order there.
 *
 * <p>A slot holds, from the high bits down: 32 bits of the key (its slot's index is bits of another hash of it),
 * a bit that marks the slot used, a bit that marks a place among the class's allowed engines ({@link ClassRoute#near})
 * rather than its table, 14 bits of the engine's hash and the engine's place plus one (0: the key's own engine).
 */
final class RecentKeys {
    /** {@link #lookup}: a key not placed recently. */
    static final int NEW = -2;
    /**
     * {@link #lookup}: a key placed recently by its key's order (or moved to an engine no longer in the class's
     * table, or to one whose hash another engine of it shares).
     */
    static final int OWN = -1;

    private static final long USED = 1L << 31;
    private static final long NEAR = 1L << 30;
    private static final int HASH = 0x3FFF;
    private static final int PLACES = 0xFFFF;

    private final AtomicLongArray slots;
    private final int mask;

    /** A table of {@code size} slots, a power of two ({@link DataPlaneOptions#recentKeys()}). */
    RecentKeys(int size) {
        slots = new AtomicLongArray(size);
        mask = size - 1;
    }

    /**
     * How {@code key} was last placed: {@link #NEW}, {@link #OWN}, or the place in {@code k}'s table
     * ({@link ClassRoute#cells}) of the engine it was moved to, when that engine is still there ({@link #place}).
     */
    int lookup(ClassRoute k, long key) {
        long v = slots.get(slot(key));
        if ((v & USED) == 0 || (int) (v >>> 32) != (int) (key >>> 32)) {
            return NEW;
        }
        if ((v & PLACES) == 0 || (v & NEAR) != 0) {
            return OWN;
        }
        int place = place(k.cells, v);
        return place >= 0 ? place : OWN;
    }

    /**
     * The place among {@code k}'s allowed engines ({@link ClassRoute#near}) that {@code key} was last spilled to, when
     * it was and that engine is still there ({@link #place}); -1 otherwise.
     */
    int lookupSpill(ClassRoute k, long key) {
        long v = slots.get(slot(key));
        if ((v & USED) == 0 || (v & NEAR) == 0 || (int) (v >>> 32) != (int) (key >>> 32)) {
            return -1;
        }
        return place(k.near, v);
    }

    /**
     * Where in {@code cells} the engine slot value {@code v} names is now: at its recorded place when the engine there
     * has its hash; else, when a snapshot since gave the engines other places (an engine joined the class's table or
     * left it, and those after it moved up or down), the one engine of {@code cells} with that hash; -1 when none has
     * it, or more than one (14 bits of hash: among 100 engines, one shares its hash with another about once in 165;
     * the key is then taken for its key's order's rather than sent to an engine that may not hold its cache).
     */
    private static int place(EngineCell[] cells, long v) {
        int place = (int) (v & PLACES) - 1;
        long hash = (v >>> 16) & HASH;
        if (place >= 0 && place < cells.length && (cells[place].hash & HASH) == hash) {
            return place;
        }
        int found = -1;
        for (int i = 0; i < cells.length; i++) {
            if ((cells[i].hash & HASH) == hash) {
                if (found >= 0) {
                    return -1;
                }
                found = i;
            }
        }
        return found;
    }

    /** Records that {@code key} was spilled to engine {@code place} of {@code k}'s allowed engines. */
    void recordSpill(ClassRoute k, long key, int place) {
        write(key, place + 1 < PLACES ? NEAR | (k.near[place].hash & HASH) << 16 | (place + 1) : 0);
    }

    /**
     * Records that {@code key} was placed: by its key's order when {@code own}, else on engine {@code place} of
     * {@code k}'s table.
     */
    void record(ClassRoute k, long key, int place, boolean own) {
        write(key, !own && place + 1 < PLACES ? (k.cells[place].hash & HASH) << 16 | (place + 1) : 0);
    }

    /** Writes {@code key}'s slot: its bits, used, and {@code where} (0: its key's own engine). */
    private void write(long key, long where) {
        slots.set(slot(key), (key >>> 32) << 32 | USED | where);
    }

    private int slot(long key) {
        return (int) (Hashing.mix(key ^ Hashing.RECENT_SALT) & mask);
    }
}
