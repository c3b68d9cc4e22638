package dev.sextant.sim;

/**
 * A routing policy under simulation: where does each request go, and what happens after a failure. Every
 * policy sees the same workload, engines and faults; only these decisions differ. Implementations keep
 * their own state and may schedule periodic work (controllers) on the simulation's event loop.
 */
interface SimPolicy {
    /** {@link #select} answer: refuse the request (429). */
    int SHED = -1;
    /** {@link #select} answer: no engine may serve it (503). */
    int NO_ENGINE = -2;

    /** The policy's name in reports and summary.json. */
    String name();

    /** Called once before the first request, with the simulation it runs in. */
    void start(Simulation sim);

    /** The engine index for the first attempt of {@code r}, or {@link #SHED} / {@link #NO_ENGINE}. */
    int select(SimRequest r);

    /**
     * The engine for another attempt after {@code r} failed on {@code failedEngine} before its first byte
     * reached the client, or a negative number to give up (the client sees the failure).
     */
    int retry(SimRequest r, int failedEngine);

    /** How an attempt ended, as the gateway saw it. */
    enum AttemptEnd {
        /** A complete response. */
        OK,
        /** No connection (engine down, link cut). */
        CONNECT_ERROR,
        /** The engine failed the request (crash), before or after its first byte. */
        SERVER_ERROR,
        /** The client gave up waiting for the first token. */
        TIMEOUT
    }

    /** An attempt of {@code r} on {@code engine} ended. Called before {@link #retry} for a failed attempt. */
    /**
     * The policy's control plane is back from a restart (a {@code control_plane_restart} fault ends): a policy that
     * keeps state in a control plane starts it again from what it keeps on disk. Nothing for the others.
     */
    default void controlPlaneRestarted() {
    }

    default void attemptEnded(SimRequest r, int engine, AttemptEnd how) {
    }

    /** {@code engine} sent the first token of {@code r}'s attempt; it reaches the gateway half a round trip later. */
    default void firstToken(SimRequest r, int engine) {
    }

    /** The conversation of {@code r} has no more turns. */
    default void conversationEnded(Conversation c) {
    }

    /**
     * The weight this policy gives {@code engine} for class {@code cls} at {@code gateway}, for the weights
     * plot; NaN for a policy without weights.
     */
    default double weight(int gateway, int cls, int engine) {
        return Double.NaN;
    }
}
