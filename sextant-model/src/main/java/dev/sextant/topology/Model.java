package dev.sextant.topology;

/**
 * A model that requests ask for ({@code "model"} in the OpenAI body).
 *
 * @param id           unique among models, non-empty
 * @param outputTokens expected output tokens per request, n̄ ≥ 1; engine-side latency counts
 *                     {@code outputTokens − 1} inter-token gaps after the first token
 */
public record Model(String id, int outputTokens) {
    public Model {
        Checks.id("id", id);
        if (outputTokens < 1) {
            throw new IllegalArgumentException("output_tokens: " + outputTokens + " (expected: >= 1)");
        }
    }
}
