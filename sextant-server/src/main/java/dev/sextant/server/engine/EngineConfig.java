package dev.sextant.server.engine;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Configuration of one emulated engine: its identity, its continuous-batching latency model and its faults.
 *
 * <p>The latency model: at most {@code maxSequences} sequences run in the batch, the rest wait in FIFO order, or
 * with {@code priorityScheduling} in the order of their requests' {@code priority} (lower first, ties by arrival, as
 * vLLM's {@code --scheduling-policy priority}).
 * The engine works in steps; each step decodes one token for every running sequence and prefills the
 * sequences admitted at its start, and lasts
 * {@code (decodeBaseMs + decodeMsPerSequence · batch + prefillMsPerToken · uncachedPromptTokens) · slowdown}
 * milliseconds. A sequence's first token comes at the end of the step that prefilled it; each later step
 * gives it one more token.
 *
 * @param engineId            identifier sent in the {@code x-engine-id} response header, non-empty
 * @param host                address to bind, e.g. {@code 127.0.0.1}
 * @param port                TCP port, 0 for an ephemeral one
 * @param models              model ids served, at least one; the first one labels the metrics
 * @param maxSequences        maximum concurrent sequences in the batch, ≥ 1
 * @param prefillMsPerToken   prefill time per uncached prompt token, milliseconds, ≥ 0
 * @param decodeBaseMs        fixed part {@code a} of a step, milliseconds, ≥ 0
 * @param decodeMsPerSequence per-sequence part {@code c} of a step, milliseconds, ≥ 0
 * @param defaultMaxTokens    output tokens of a request that gives no {@code max_tokens}, ≥ 1
 * @param kvCacheTokens       KV-cache size in tokens, ≥ 1: a waiting request is admitted only while its prompt fits in
 *                            what the running sequences leave; {@code vllm:kv_cache_usage_perc} is the tokens of
 *                            running sequences over this
 * @param prefixCacheEntries  conversations whose prefix stays cached (least recently used evicted), ≥ 0
 * @param embeddingDimensions length of {@code /v1/embeddings} vectors, ≥ 1
 * @param seed                seed of every random choice (faults)
 * @param faults              faults at start
 * @param networkRttMs        the network emulated between each gateway cluster and this engine: gateway cluster id
 *                            (as a request's {@code x-sextant-gateway-cluster} names it) → round trip, milliseconds,
 *                            finite and ≥ 0; the key {@value #DEFAULT_RTT_KEY} for requests without that header or
 *                            from a gateway cluster not listed. Empty (or null): no delay. See
 *                            {@code docs/engine-emulator.md}, "The network"
 * @param priorityScheduling  order waiting requests by their {@code priority} field, lower first; without it, a
 *                            request with a non-zero {@code priority} is refused with 400, as vLLM refuses it
 */
public record EngineConfig(String engineId, String host, int port, List<String> models, int maxSequences,
                           double prefillMsPerToken, double decodeBaseMs, double decodeMsPerSequence,
                           int defaultMaxTokens, int kvCacheTokens, int prefixCacheEntries, int embeddingDimensions,
                           long seed, Faults faults, Map<String, Double> networkRttMs,
                           boolean priorityScheduling) {
    /** The key of {@link #networkRttMs()} for requests that name no gateway cluster, or one not listed. */
    public static final String DEFAULT_RTT_KEY = "default";

    public EngineConfig {
        if (engineId == null || engineId.isBlank()) {
            throw new IllegalArgumentException("engine_id: " + engineId + " (expected: a non-empty string)");
        }
        if (host == null || host.isBlank()) {
            throw new IllegalArgumentException("host: " + host + " (expected: an address to bind)");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port: " + port + " (expected: 0..65535)");
        }
        if (models == null || models.isEmpty() || models.stream().anyMatch(m -> m == null || m.isBlank())) {
            throw new IllegalArgumentException("models: " + models + " (expected: at least one non-empty model id)");
        }
        models = List.copyOf(models);
        atLeast("max_sequences", maxSequences, 1);
        nonNegative("prefill_ms_per_token", prefillMsPerToken);
        nonNegative("decode_base_ms", decodeBaseMs);
        nonNegative("decode_ms_per_sequence", decodeMsPerSequence);
        atLeast("default_max_tokens", defaultMaxTokens, 1);
        atLeast("kv_cache_tokens", kvCacheTokens, 1);
        atLeast("prefix_cache_entries", prefixCacheEntries, 0);
        atLeast("embedding_dimensions", embeddingDimensions, 1);
        if (faults == null) {
            faults = Faults.NONE;
        }
        networkRttMs = checkedRtts(networkRttMs);
    }

    private static Map<String, Double> checkedRtts(Map<String, Double> rtts) {
        if (rtts == null || rtts.isEmpty()) {
            return Map.of();
        }
        TreeMap<String, Double> out = new TreeMap<>();
        for (Map.Entry<String, Double> e : rtts.entrySet()) {
            String cluster = e.getKey();
            // the command line writes the map as id=ms pairs separated by commas: an id holding either is not one
            if (cluster == null || cluster.isBlank() || cluster.indexOf(',') >= 0 || cluster.indexOf('=') >= 0) {
                throw new IllegalArgumentException("network_rtt_ms: '" + cluster + "' (expected: a gateway cluster id,"
                        + " non-empty, without ',' or '=')");
            }
            Double ms = e.getValue();
            if (ms == null || !(ms >= 0) || ms.isInfinite()) {
                throw new IllegalArgumentException("network_rtt_ms." + cluster + ": " + ms
                        + " (expected: a round trip in ms, a finite number >= 0)");
            }
            out.put(cluster, ms);
        }
        return Collections.unmodifiableSortedMap(out);
    }

    /**
     * A configuration resembling one vLLM engine serving a 70B model on a loopback port chosen by the OS: 64
     * sequences, 0.02 ms per prefill token, steps of 8 ms + 0.15 ms per running sequence, 32 tokens by default.
     *
     * @param engineId the engine's identifier
     * @param model    the model it serves
     */
    public static EngineConfig defaults(String engineId, String model) {
        return new EngineConfig(engineId, "127.0.0.1", 0, List.of(model), 64, 0.02, 8, 0.15, 32, 200_000, 1024, 8,
                1, Faults.NONE, Map.of(), false);
    }

    /** This configuration with another port. */
    public EngineConfig withPort(int newPort) {
        return withAddress(host, newPort);
    }

    /** This configuration with another address to bind. */
    public EngineConfig withAddress(String newHost, int newPort) {
        return new EngineConfig(engineId, newHost, newPort, models, maxSequences, prefillMsPerToken, decodeBaseMs,
                decodeMsPerSequence, defaultMaxTokens, kvCacheTokens, prefixCacheEntries, embeddingDimensions, seed,
                faults, networkRttMs, priorityScheduling);
    }

    /** This configuration with another latency model. */
    public EngineConfig withLatency(int newMaxSequences, double newPrefillMsPerToken, double newDecodeBaseMs,
                                    double newDecodeMsPerSequence) {
        return new EngineConfig(engineId, host, port, models, newMaxSequences, newPrefillMsPerToken, newDecodeBaseMs,
                newDecodeMsPerSequence, defaultMaxTokens, kvCacheTokens, prefixCacheEntries, embeddingDimensions, seed,
                faults, networkRttMs, priorityScheduling);
    }

    /** This configuration with other faults at start and another seed. */
    public EngineConfig withFaults(Faults newFaults, long newSeed) {
        return new EngineConfig(engineId, host, port, models, maxSequences, prefillMsPerToken, decodeBaseMs,
                decodeMsPerSequence, defaultMaxTokens, kvCacheTokens, prefixCacheEntries, embeddingDimensions, newSeed,
                newFaults, networkRttMs, priorityScheduling);
    }

    /** This configuration with another default output length. */
    public EngineConfig withDefaultMaxTokens(int tokens) {
        return new EngineConfig(engineId, host, port, models, maxSequences, prefillMsPerToken, decodeBaseMs,
                decodeMsPerSequence, tokens, kvCacheTokens, prefixCacheEntries, embeddingDimensions, seed, faults,
                networkRttMs, priorityScheduling);
    }

    /** This configuration with another KV-cache size, tokens. */
    public EngineConfig withKvCacheTokens(int tokens) {
        return new EngineConfig(engineId, host, port, models, maxSequences, prefillMsPerToken, decodeBaseMs,
                decodeMsPerSequence, defaultMaxTokens, tokens, prefixCacheEntries, embeddingDimensions, seed, faults,
                networkRttMs, priorityScheduling);
    }

    /**
     * This configuration with another emulated network: gateway cluster id → round trip in ms (finite, ≥ 0), the key
     * {@value #DEFAULT_RTT_KEY} for every other request; empty for none.
     */
    public EngineConfig withNetworkRttMs(Map<String, Double> rtts) {
        return new EngineConfig(engineId, host, port, models, maxSequences, prefillMsPerToken, decodeBaseMs,
                decodeMsPerSequence, defaultMaxTokens, kvCacheTokens, prefixCacheEntries, embeddingDimensions, seed,
                faults, rtts, priorityScheduling);
    }

    /** This configuration with priority scheduling on or off. */
    public EngineConfig withPriorityScheduling(boolean on) {
        return new EngineConfig(engineId, host, port, models, maxSequences, prefillMsPerToken, decodeBaseMs,
                decodeMsPerSequence, defaultMaxTokens, kvCacheTokens, prefixCacheEntries, embeddingDimensions, seed,
                faults, networkRttMs, on);
    }

    private static void atLeast(String field, long value, long min) {
        if (value < min) {
            throw new IllegalArgumentException(field + ": " + value + " (expected: >= " + min + ")");
        }
    }

    private static void nonNegative(String field, double value) {
        if (!(value >= 0) || Double.isInfinite(value)) {
            throw new IllegalArgumentException(field + ": " + value + " (expected: a finite number >= 0)");
        }
    }
}
