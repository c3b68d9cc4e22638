package dev.sextant.sim;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * An engine's prefix cache, per conversation and per shared system prompt (under keys of their own, see
 * {@link EngineSim}), with least-recently-used eviction in tokens. A finished
 * turn leaves its whole context (prompt and answer) cached; the next turn of the same conversation reuses
 * it. Running sequences take their KV space from the same pool, so the cache shrinks as the batch grows.
 */
final class PrefixCache {
    private final LinkedHashMap<Long, Integer> entries = new LinkedHashMap<>(16, 0.75f, true);
    private long tokens;

    /** Removes and returns the tokens cached for {@code conversation}, 0 when none (the running sequence owns them now). */
    int take(long conversation) {
        Integer t = entries.remove(conversation);
        if (t == null) {
            return 0;
        }
        tokens -= t;
        return t;
    }

    /** The tokens cached under {@code key}, 0 when none, marked most recently used and left cached (shared). */
    int peek(long key) {
        Integer t = entries.get(key);
        return t == null ? 0 : t;
    }

    /** Caches {@code count} tokens of {@code conversation} as most recently used, then evicts down to {@code limit}. */
    void put(long conversation, int count, long limit) {
        Integer old = entries.put(conversation, count);
        tokens += count - (old == null ? 0 : old);
        shrinkTo(limit);
    }

    /** Evicts least recently used entries until at most {@code limit} tokens are cached. */
    void shrinkTo(long limit) {
        Iterator<Map.Entry<Long, Integer>> it = entries.entrySet().iterator();
        while (tokens > limit && it.hasNext()) {
            tokens -= it.next().getValue();
            it.remove();
        }
    }

    /** Tokens cached. */
    long tokens() {
        return tokens;
    }

    /** Conversations cached. */
    int size() {
        return entries.size();
    }

    void clear() {
        entries.clear();
        tokens = 0;
    }
}
