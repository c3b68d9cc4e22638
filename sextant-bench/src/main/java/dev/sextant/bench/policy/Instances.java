package dev.sextant.bench.policy;

import dev.sextant.bench.fleet.Fleets;
import dev.sextant.topology.Topology;

/** The benchmark instances by their names in BENCHMARKS.md ("Instances"): {@code talk}, {@code M}, {@code L}. */
final class Instances {
    private Instances() {
    }

    /** Seed of the M and L fleets in every benchmark, so that all of them measure the same instances. */
    static final long FLEET_SEED = 1;

    /** Seed of the ±5% demand change of the warm-start benchmarks. */
    static final long CHANGE_SEED = 42;

    /** Relative size of the demand change of the warm-start benchmarks. */
    static final double CHANGE = 0.05;

    /** The named instance, with its own {@code affinity_discount_ms}. */
    static Topology named(String size) {
        return switch (size) {
            case "talk" -> Fleets.talk();
            case "M" -> Fleets.medium(FLEET_SEED);
            case "L" -> Fleets.large(FLEET_SEED);
            case "M-overloaded" -> Fleets.medium(FLEET_SEED, 1.2);
            case "L-overloaded" -> Fleets.large(FLEET_SEED, 1.2);
            default -> throw new IllegalArgumentException("size: '" + size
                    + "' (expected one of talk, M, L, M-overloaded, L-overloaded)");
        };
    }
}
