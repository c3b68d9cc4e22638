package dev.sextant.server.engine;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The KV prefix cache, per conversation: how many tokens of a conversation's last turn (prompt and answer) are
 * still cached, evicting the least recently used conversation beyond a fixed number. Used from the scheduler
 * thread only.
 */
final class PrefixCache {
    private final LinkedHashMap<String, Integer> tokens;

    PrefixCache(int maxEntries) {
        this.tokens = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Integer> eldest) {
                return size() > maxEntries;
            }
        };
    }

    /**
     * Prompt tokens of a new turn that need no prefill: the cached prefix, but never the whole prompt, since the
     * last prompt token is always computed (as vLLM does).
     */
    int hit(String key, int promptTokens) {
        Integer cached = tokens.get(key);
        return cached == null ? 0 : Math.max(0, Math.min(cached, promptTokens - 1));
    }

    /** Records that the conversation's first {@code cachedTokens} tokens are now in the cache. */
    void store(String key, int cachedTokens) {
        tokens.put(key, cachedTokens);
    }
}
