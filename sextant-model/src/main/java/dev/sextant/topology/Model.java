package dev.sextant.topology;

/**
 * A model that requests ask for ({@code "model"} in the OpenAI body).
 *
 * @param id           unique among models, non-empty
 * @param outputTokens expected output tokens per request, n̄ ≥ 1; engine-side latency counts
 *                     {@code outputTokens − 1} inter-token gaps after the first token
 */
public record Model(String id, int outputTokens) {
    /** The most output tokens per request: ten million, beyond any context window (as a scenario file's bound). */
    public static final int MAX_OUTPUT_TOKENS = 10_000_000;

    public Model {
        Checks.id("id", id);
        if (outputTokens < 1 || outputTokens > MAX_OUTPUT_TOKENS) {
            throw new IllegalArgumentException("output_tokens: " + outputTokens + " (expected: 1 to "
                    + MAX_OUTPUT_TOKENS + ")");
        }
    }
}
