package dev.sextant.control;

/** What the evidence says about an engine, in the order a penalty is worst. */
public enum Condition {
    /** Answering and as fast as its group's law predicts: full health. */
    HEALTHY,
    /** Answering but decoding slower than its group's law at the same load: priced slower, capacity cut alike. */
    SLOW,
    /** Not yet seen to answer (a new engine, or one whose metrics never answered): no traffic until it does. */
    UNPROVEN,
    /** Its gateways see too many of its attempts fail: no traffic until canaries succeed again. */
    FAILING,
    /**
     * Its metrics answer, but it holds requests and shows no sign of working on them (a hung engine core): no traffic
     * until it works or answers again.
     */
    STALLED,
    /** Neither its metrics nor anything else answers: no traffic until it does. */
    DOWN;

    /** True when the engine gets no planned traffic in this condition. */
    public boolean outOfService() {
        return this == UNPROVEN || this == FAILING || this == STALLED || this == DOWN;
    }
}
