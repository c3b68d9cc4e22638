package dev.sextant.bench.policy;

import dev.sextant.bench.fleet.Fleets;
import dev.sextant.policy.Policies;
import dev.sextant.policy.RoutingPolicy;
import dev.sextant.policy.SolveOptions;
import dev.sextant.snapshot.Objective;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;
import java.util.Locale;

/**
 * Newton steps of a chain of re-solves, as a control plane runs them: each after a ±5% change of every demand entry
 * of the last topology, warm-started from the last snapshot. {@code OptimizerBenchmark} times one re-solve from the
 * cold solve's snapshot; this shows whether the warm start stays as good when every previous snapshot is itself a
 * warm re-solve's. Counts, not times: deterministic.
 *
 * <pre>
 * java -cp sextant-bench/target/benchmarks.jar dev.sextant.bench.policy.WarmChain L 12 1e-4
 * </pre>
 *
 * Arguments: instance ({@code talk}, {@code M}, {@code L}, …), number of re-solves, gap tolerance. Prints one line
 * without and one with the default affinity discount: the cold solve's steps, then each re-solve's, and the worst gap.
 */
public final class WarmChain {
    private WarmChain() {
    }

    public static void main(String[] args) {
        String size = args.length > 0 ? args[0] : "L";
        int steps = args.length > 1 ? Integer.parseInt(args[1]) : 12;
        double gap = args.length > 2 ? Double.parseDouble(args[2]) : 1e-4;
        for (double discount : new double[] {0, Topology.DEFAULT_AFFINITY_DISCOUNT_MS}) {
            System.out.println(chain(Fleets.withAffinityDiscount(Instances.named(size), discount), steps, gap,
                    String.format(Locale.ROOT, "%s, affinity %.0f ms, gap %.0e:", size, discount, gap)));
        }
    }

    private static String chain(Topology t, int steps, double gap, String label) {
        RoutingPolicy optimal = Policies.optimal();
        SolveOptions options = SolveOptions.defaults().withGapTolerance(gap);
        Snapshot last = optimal.solve(t, options);
        StringBuilder out = new StringBuilder(label).append(" cold ").append(last.objective().iterations())
                .append(" | re-solves");
        int total = 0;
        double worst = 0;
        for (int i = 1; i <= steps; i++) {
            t = Fleets.withDemandScaled(t, Instances.CHANGE_SEED + i, Instances.CHANGE);
            last = optimal.solve(t, options.after(last));
            Objective o = last.objective();
            out.append(' ').append(o.iterations());
            total += o.iterations();
            worst = Math.max(worst, o.gapRelative());
        }
        return out.append(String.format(Locale.ROOT, " | total %d, worst gap %.2e", total, worst)).toString();
    }
}
