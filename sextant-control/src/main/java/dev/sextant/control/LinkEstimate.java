package dev.sextant.control;

/**
 * The round trip from one gateway cluster to one engine cluster the optimizer plans with.
 *
 * @param ms           the round trip, ms ({@link #UNREACHABLE_MS} when cut)
 * @param configuredMs the topology's network_rtt_ms
 * @param reachable    false when the gateways cannot connect to that cluster while others can
 * @param why          the evidence
 */
public record LinkEstimate(double ms, double configuredMs, boolean reachable, String why) {
    /** The round trip a cut link is priced with, ms: no traffic is planned across it while any other path exists. */
    public static final double UNREACHABLE_MS = 10_000;
}
