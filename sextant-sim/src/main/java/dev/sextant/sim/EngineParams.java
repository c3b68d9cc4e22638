package dev.sextant.sim;

/**
 * How one kind of GPU engine behaves, in the terms of a continuous-batching server like vLLM. A step
 * takes {@code stepMs + prefillMsPerToken · (prefill tokens in the step) + decodeMsPerSeq · (sequences
 * decoding)} milliseconds.
 *
 * @param stepMs            fixed cost of one step (a), ms, ≥ 0
 * @param prefillMsPerToken cost per prompt token prefilled in the step (b), ms, ≥ 0
 * @param decodeMsPerSeq    cost per sequence producing a token in the step (c), ms, ≥ 0
 * @param maxSeqs           most sequences running at once (vLLM {@code max_num_seqs}), ≥ 1
 * @param kvCacheTokens     KV cache size in tokens, shared by running sequences and the prefix cache, ≥ 1
 * @param chunkTokens       token budget per step (vLLM {@code max_num_batched_tokens}): decoding sequences
 *                          take one token each, prefill chunks take the rest, ≥ 1
 */
record EngineParams(double stepMs, double prefillMsPerToken, double decodeMsPerSeq, int maxSeqs,
                    long kvCacheTokens, int chunkTokens) {
    EngineParams {
        if (!(stepMs >= 0) || !(prefillMsPerToken >= 0) || !(decodeMsPerSeq >= 0)
                || stepMs + prefillMsPerToken + decodeMsPerSeq <= 0) {
            throw new IllegalArgumentException("step_ms, prefill_ms_per_token, decode_ms_per_seq: " + stepMs + ", "
                    + prefillMsPerToken + ", " + decodeMsPerSeq + " (expected: >= 0, not all 0)");
        }
        if (maxSeqs < 1) {
            throw new IllegalArgumentException("max_seqs: " + maxSeqs + " (expected: >= 1)");
        }
        if (kvCacheTokens < 1) {
            throw new IllegalArgumentException("kv_cache_tokens: " + kvCacheTokens + " (expected: >= 1)");
        }
        if (chunkTokens < 1) {
            throw new IllegalArgumentException("chunk_tokens: " + chunkTokens + " (expected: >= 1)");
        }
    }

    /**
     * Throughput in req/s when the engine runs {@code maxSeqs} sequences, each request bringing
     * {@code prefillTokens} uncached prompt tokens and {@code outputTokens} output tokens: per step every
     * sequence makes one token, so with step time s, μ = N / (n·s) and s = a + c·N + b·μ·P·s, which gives
     * μ = N / (n·(a + c·N) + b·P·N).
     */
    double saturationRps(double prefillTokens, double outputTokens) {
        double n = Math.max(1, outputTokens);
        int seqs = maxSeqs;
        return seqs * 1000.0 / (n * (stepMs + decodeMsPerSeq * seqs) + prefillMsPerToken * prefillTokens * seqs);
    }
}
