package dev.sextant.sim;

/**
 * A multi-turn conversation: each turn's prompt is the whole context so far (earlier prompts and
 * answers) plus the new user message, so an engine that still caches the earlier turns prefills only
 * the new tokens. Its first turn may start with a system prompt other conversations share.
 */
final class Conversation {
    final long id;
    final int gateway;
    final int trafficClass;
    int turnsLeft;
    int contextTokens;
    /** The shared system prompt its first turn starts with, -1 for none. */
    int systemPrompt = -1;
    /** Tokens of that system prompt, 0 for none. */
    int systemTokens;
    /** Whether its client sends an explicit key ({@code prompt_cache_key}); else the gateway derives one. */
    boolean keyed = true;
    /**
     * Whether its class's workload gives conversations a structured prompt ({@link Scenario.ClassWorkload#structured}):
     * then the sextant policy routes on the keys the production gateway derives from it.
     */
    boolean structured;
    /** The affinity and prefix keys the production gateway derives for it; set at its first request. */
    long gatewayKey;
    long gatewayPrefixKey;

    Conversation(long id, int gateway, int trafficClass, int turns) {
        this.id = id;
        this.gateway = gateway;
        this.trafficClass = trafficClass;
        this.turnsLeft = turns;
    }
}
