package dev.sextant.control;

/**
 * A request the control loop asks its shell to send to an engine that has no other way to prove itself: one that
 * is penalized or failing and therefore gets little or no traffic, or one that is new and has not yet answered. A
 * short streamed completion: its first token and the gaps between the next ones are the evidence.
 *
 * @param engine    the engine's id
 * @param model     the model to ask for (one the engine serves)
 * @param maxTokens output tokens to ask for, ≥ 2 (so that a gap between tokens is measured)
 * @param why       why it is sent, for logs
 */
public record Canary(String engine, String model, int maxTokens, String why) {
    public Canary {
        if (engine == null || engine.isEmpty() || model == null || model.isEmpty()) {
            throw new IllegalArgumentException("engine, model: '" + engine + "', '" + model + "' (expected: ids)");
        }
        if (maxTokens < 2) {
            throw new IllegalArgumentException("max_tokens: " + maxTokens + " (expected: >= 2)");
        }
    }
}
