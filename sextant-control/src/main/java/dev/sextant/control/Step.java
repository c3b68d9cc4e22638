package dev.sextant.control;

import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;

/**
 * One turn of the control loop: the estimates, the solve they led to, and whether its snapshot is worth
 * publishing.
 *
 * @param atNanos     when, on the loop's ticker
 * @param snapshot    the snapshot to publish when {@code published}; else the candidate that was not (null when the
 *                    solve failed)
 * @param published   true when the shell should publish {@code snapshot} now
 * @param reason      why it was or was not published ("engine east-2 slow: …", "gain 0.3 ms per request, below
 *                    the threshold of 4.4 ms")
 * @param gainMs      the expected latency saved per request by publishing, ms (infinite when the held snapshot is
 *                    no longer feasible, NaN for the first)
 * @param thresholdMs the gain a publication needs, ms
 * @param solvedFor   the topology the solve priced: the estimates written into the topology's shape
 * @param estimates   the estimates themselves
 */
public record Step(long atNanos, Snapshot snapshot, boolean published, String reason, double gainMs,
                   double thresholdMs, Topology solvedFor, Estimates estimates) {
}
