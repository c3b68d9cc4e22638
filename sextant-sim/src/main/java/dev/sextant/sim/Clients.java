package dev.sextant.sim;

/**
 * Who the clients are, for every class at once: each conversation's first turn starts with one of
 * {@code systemPrompts} shared system prompts of {@code systemPromptTokens} tokens, and {@code keyedShare} of the
 * clients send an explicit key (see {@code Scenario.ClassWorkload}). Overrides what a scenario's workload says of its
 * clients, so that every scenario can be measured with keyless clients ({@code simulate --keyed-share …}).
 */
public record Clients(double systemPromptTokens, int systemPrompts, double keyedShare) {
    /** Checks the values, naming the command-line option of each. */
    public Clients {
        // the bounds of a scenario file's workload (ScenarioLoader)
        if (!(systemPromptTokens >= 0 && systemPromptTokens <= ScenarioLoader.MAX_TOKENS)) {
            throw new IllegalArgumentException("--system-prompt-tokens: " + systemPromptTokens
                    + " (expected: a number from 0 to " + (long) ScenarioLoader.MAX_TOKENS + ")");
        }
        if (systemPrompts < 1 || systemPrompts > ScenarioLoader.MAX_COUNT) {
            throw new IllegalArgumentException("--system-prompts: " + systemPrompts + " (expected: an integer from 1 to "
                    + (long) ScenarioLoader.MAX_COUNT + ")");
        }
        if (!(keyedShare >= 0 && keyedShare <= 1)) {
            throw new IllegalArgumentException("--keyed-share: " + keyedShare + " (expected: in [0, 1])");
        }
    }

    /** The options that reproduce it, as {@code bin/sextant simulate} takes them. */
    String options() {
        return String.format(java.util.Locale.ROOT, "--keyed-share %s --system-prompts %d --system-prompt-tokens %s",
                plain(keyedShare), systemPrompts, plain(systemPromptTokens));
    }

    private static String plain(double v) {
        return java.math.BigDecimal.valueOf(v).stripTrailingZeros().toPlainString();
    }
}
