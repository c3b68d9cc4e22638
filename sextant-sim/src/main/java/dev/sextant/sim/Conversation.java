package dev.sextant.sim;

/**
 * A multi-turn conversation: each turn's prompt is the whole context so far (earlier prompts and
 * answers) plus the new user message, so an engine that still caches the earlier turns prefills only
 * the new tokens.
 */
final class Conversation {
    final long id;
    final int gateway;
    final int trafficClass;
    int turnsLeft;
    int contextTokens;

    Conversation(long id, int gateway, int trafficClass, int turns) {
        this.id = id;
        this.gateway = gateway;
        this.trafficClass = trafficClass;
        this.turnsLeft = turns;
    }
}
