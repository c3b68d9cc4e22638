package dev.sextant.policy;

import dev.sextant.snapshot.Snapshot;
import java.util.Map;
import java.util.TreeMap;

/**
 * What a solve needs beyond the topology.
 *
 * @param version        the version to stamp on the snapshot, ≥ 0
 * @param previous       the previous snapshot (for the cache-affinity term and a warm start), or null
 * @param penalties      engine id → outlier penalty factor in (0, 1] applied to effective capacity;
 *                       a missing engine has factor 1
 * @param gapTolerance   stop when the certified relative gap is at most this, &gt; 0 (default 1e-6)
 */
public record SolveOptions(long version, Snapshot previous, Map<String, Double> penalties, double gapTolerance) {

    /** The default relative gap tolerance of the optimizer. */
    public static final double DEFAULT_GAP_TOLERANCE = 1e-6;

    public SolveOptions {
        if (version < 0) {
            throw new IllegalArgumentException("version: " + version + " (expected: >= 0)");
        }
        penalties = java.util.Collections.unmodifiableSortedMap(new TreeMap<>(penalties));
        penalties.forEach((e, f) -> {
            if (!(f > 0 && f <= 1)) {
                throw new IllegalArgumentException("penalties." + e + ": " + f + " (expected: in (0, 1])");
            }
        });
        if (!(gapTolerance > 0)) {
            throw new IllegalArgumentException("gap_tolerance: " + gapTolerance + " (expected: > 0)");
        }
    }

    /** Version 1, no previous snapshot, no penalties, the default tolerance. */
    public static SolveOptions defaults() {
        return new SolveOptions(1, null, Map.of(), DEFAULT_GAP_TOLERANCE);
    }

    /** These options with a previous snapshot, and version = previous + 1. */
    public SolveOptions after(Snapshot prev) {
        return new SolveOptions(prev.version() + 1, prev, penalties, gapTolerance);
    }

    /** These options with another tolerance. */
    public SolveOptions withGapTolerance(double tol) {
        return new SolveOptions(version, previous, penalties, tol);
    }

    /** These options with penalties. */
    public SolveOptions withPenalties(Map<String, Double> p) {
        return new SolveOptions(version, previous, p, gapTolerance);
    }
}
