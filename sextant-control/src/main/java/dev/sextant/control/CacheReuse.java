package dev.sextant.control;

/**
 * How much of an engine's prompts its prefix cache serves at a load of x requests per second: the more conversations
 * an engine is given, the fewer of their contexts its cache keeps until their next turns.
 *
 * <p>Implementation note. The cache evicts the least recently used context first (vLLM's and SGLang's prefix caches
 * free their blocks so). In Che's approximation of an LRU cache a context stays for a characteristic time T after
 * its last use, the same for all of them, such that what is held fills the cache. What is held is each conversation's
 * latest context: a request's context counts from its end until T has passed or its conversation's next request
 * replaces it by a longer one, so at x requests per second each leaving {@code context} tokens,
 * {@code x · context · ∫₀ᵀ (1 − r·G(t)) dt = K(x)} ({@link ReuseDistribution#keptFor}), with G the distribution of
 * the times between the end of a conversation's request and its next one (what the gateways measure), r the share of
 * requests a later one follows, and K(x) the tokens the cache has beside the running sequences (the KV space, less
 * what the batch busy at x holds). A request finds its conversation's context when that time is below T: the prompt
 * tokens served from the cache are {@code reusable · G(T(x))}, and {@code reusable}, the tokens a request would find
 * in a cache without limit, is read off the engine's present hit rate: the cached tokens per request now over G(T)
 * now. So the uncached prompt is {@code prompt − reusable · G(T(x))}: as observed at the present load, larger above
 * it, smaller below it; it grows with x, since T falls with x and G grows with T.
 *
 * @param prompt     prompt tokens per request, cached ones included, ≥ 0
 * @param reusable   prompt tokens per request a cache without limit would serve, in [0, prompt]
 * @param kvTokens   tokens the engine's KV cache holds, &gt; 0
 * @param context    tokens a finished request leaves in the cache (its prompt and its output), &gt; 0
 * @param busyPerRps batch places busy per request per second of load (the residence in seconds), ≥ 0
 * @param slots      the most places busy at once, ≥ 1
 * @param reuse      the distribution of the times between a conversation's requests
 * @param scale      how much longer a context stays than Che's approximation says, &gt; 0 (1 unless the present hit
 *                   rate needs more: see {@link GroupModel#cacheReuse})
 */
record CacheReuse(double prompt, double reusable, double kvTokens, double context, double busyPerRps, double slots,
                  ReuseDistribution reuse, double scale) {

    CacheReuse {
        if (!(prompt >= 0) || !(reusable >= 0) || reusable > prompt || !(kvTokens > 0) || !(context > 0)
                || !(busyPerRps >= 0) || !(slots >= 1) || !(scale > 0)) {
            throw new IllegalArgumentException("cache reuse: prompt " + prompt + ", reusable " + reusable + ", kv "
                    + kvTokens + ", context " + context + ", busy per rps " + busyPerRps + ", slots " + slots);
        }
    }

    /** Seconds a context stays in the cache after its last use at load x (infinite at no load). */
    double keptSeconds(double x) {
        if (!(x > 0)) {
            return Double.POSITIVE_INFINITY;
        }
        double free = Math.max(0, kvTokens - Math.min(slots, x * busyPerRps) * context);
        return scale * reuse.keptFor(free / (x * context));
    }

    /** Uncached prompt tokens per request at load x. */
    double uncached(double x) {
        return Math.max(0, prompt - reusable * reuse.cdf(keptSeconds(x)));
    }
}
