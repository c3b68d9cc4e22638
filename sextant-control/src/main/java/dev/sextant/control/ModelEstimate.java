package dev.sextant.control;

/**
 * The output length of one model's requests the optimizer plans with.
 *
 * @param outputTokens           mean output tokens per request, ≥ 1
 * @param configuredOutputTokens the topology's output_tokens
 * @param why                    the evidence
 */
public record ModelEstimate(int outputTokens, int configuredOutputTokens, String why) {
}
