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
 * @param warmStart      the snapshot whose prices start the solve, where it is not {@code previous}, or null (then
 *                       {@code previous}'s): a plan solved under other constraints than this solve's, such as one kept
 *                       in its region, starts a solve far from its optimum, and a solution of the same problem
 *                       from a step before starts it near. It changes where the solve starts, not what it certifies
 */
public record SolveOptions(long version, Snapshot previous, Map<String, Double> penalties, double gapTolerance,
                           Snapshot warmStart) {

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

    /** Options whose solve starts from {@code previous}'s prices. */
    public SolveOptions(long version, Snapshot previous, Map<String, Double> penalties, double gapTolerance) {
        this(version, previous, penalties, gapTolerance, null);
    }

    /** Version 1, no previous snapshot, no penalties, the default tolerance. */
    public static SolveOptions defaults() {
        return new SolveOptions(1, null, Map.of(), DEFAULT_GAP_TOLERANCE);
    }

    /** These options with a previous snapshot, and version = previous + 1; the solve starts from its prices. */
    public SolveOptions after(Snapshot prev) {
        return new SolveOptions(prev.version() + 1, prev, penalties, gapTolerance);
    }

    /** These options with another tolerance. */
    public SolveOptions withGapTolerance(double tol) {
        return new SolveOptions(version, previous, penalties, tol, warmStart);
    }

    /** These options with penalties. */
    public SolveOptions withPenalties(Map<String, Double> p) {
        return new SolveOptions(version, previous, p, gapTolerance, warmStart);
    }

    /** These options starting the solve from {@code s}'s prices (null: from the previous snapshot's). */
    public SolveOptions withWarmStart(Snapshot s) {
        return new SolveOptions(version, previous, penalties, gapTolerance, s);
    }

    /** The snapshot whose prices start the solve, or null for a cold start. */
    public Snapshot warmFrom() {
        return warmStart != null ? warmStart : previous;
    }
}
