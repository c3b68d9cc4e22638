package dev.sextant.sim;

/**
 * One generated client request (one turn of a conversation) and its fate. Mutable, owned by the
 * simulation; the engine keeps its per-attempt sequence state here to avoid a second object.
 */
final class SimRequest {
    /** How a request ended; each request ends exactly once. */
    enum End { NONE, COMPLETED, SHED, FAILED }

    final long id;
    final Conversation conversation;
    final int gateway;
    final int trafficClass;
    /** Time the client sent it, ms. */
    final double arrivalMs;
    final int promptTokens;
    final int outputTokens;

    int attempts;
    int engine = -1;
    End end = End.NONE;
    double endMs = Double.NaN;
    double firstTokenMs = Double.NaN;
    boolean firstByteSent;

    /** When the current attempt left the gateway, ms. */
    double attemptStartMs;
    /** Wait before sending the next attempt, ms (set by a policy's retry). */
    double backoffMs;
    /** {@link #enginePriority} of an attempt that carries none. */
    static final int NO_PRIORITY = Integer.MIN_VALUE;
    /** The {@code priority} the current attempt's body carries to the engine, or {@link #NO_PRIORITY}. */
    int enginePriority = NO_PRIORITY;
    /** The policy's handle on the current attempt (the production data plane's decision). */
    Object decision;
    /** For a control plane's canary, not a client's request: told how it went; null for client requests. */
    Simulation.CanaryListener canary;

    // per-attempt engine state
    double engineArrivalMs;
    int prefillRemaining;
    int outputRemaining;
    int chunk;
    int cachedTokens;
    long kvReserved;

    SimRequest(long id, Conversation conversation, int gateway, int trafficClass, double arrivalMs, int promptTokens,
               int outputTokens) {
        this.id = id;
        this.conversation = conversation;
        this.gateway = gateway;
        this.trafficClass = trafficClass;
        this.arrivalMs = arrivalMs;
        this.promptTokens = promptTokens;
        this.outputTokens = outputTokens;
    }

    /** The affinity key: the conversation, so its turns hash to the engine holding its KV cache. */
    long affinityKey() {
        return conversation == null ? id : conversation.id;
    }

    /** Records the end; throws when the request already ended (conservation). */
    void end(End how, double atMs) {
        if (end != End.NONE) {
            throw new IllegalStateException("request " + id + ": ended twice (" + end + ", then " + how + ")");
        }
        end = how;
        endMs = atMs;
    }
}
