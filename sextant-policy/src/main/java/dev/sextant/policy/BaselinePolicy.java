package dev.sextant.policy;

import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * The policies users pick today, for comparison with the optimizer. None of them has prices, so their
 * snapshots carry NaN for the class price and the certificate.
 */
final class BaselinePolicy implements RoutingPolicy {
    private final String name;
    /** This policy's own memory of its last solve. */
    private final Instance.Memory instances = new Instance.Memory();

    BaselinePolicy(String name) {
        this.name = name;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Snapshot solve(Topology topology, SolveOptions options) {
        Instance inst = instances.of(topology, options);
        double[][] weights = new double[inst.sourceCount][];
        double[] shed = new double[inst.sourceCount];
        for (int k = 0; k < inst.sourceCount; k++) {
            weights[k] = new double[inst.sourceEngines[k].length];
        }
        switch (name) {
            case "nearest" -> nearest(inst, weights, shed);
            case "proportional" -> proportional(inst, weights, shed);
            case "waterfall" -> waterfall(inst, weights, shed);
            default -> throw new IllegalStateException("unknown baseline " + name);
        }
        double[] price = new double[inst.sourceCount];
        Arrays.fill(price, Double.NaN);
        return Assembler.assemble(inst, name, options, weights, shed, price, new double[inst.engines.size()],
                Double.NaN, Double.NaN, 0);
    }

    /** All of a source's traffic to its lowest-RTT allowed engines, split by effective capacity. */
    private static void nearest(Instance inst, double[][] weights, double[] shed) {
        for (int k = 0; k < inst.sourceCount; k++) {
            nearestOne(inst, k, weights[k]);
            shed[k] = sum(weights[k]) == 0 ? 1 : 0;
        }
    }

    /** Every allowed engine in proportion to its effective capacity. */
    private static void proportional(Instance inst, double[][] weights, double[] shed) {
        for (int k = 0; k < inst.sourceCount; k++) {
            splitByCapacity(inst, inst.sourceEngines[k], weights[k], j -> true);
            shed[k] = sum(weights[k]) == 0 ? 1 : 0;
        }
    }

    private static void splitByCapacity(Instance inst, int[] allowed, double[] w,
                                        java.util.function.IntPredicate chosen) {
        double total = 0;
        for (int j : allowed) {
            if (chosen.test(j)) {
                total += inst.costs[j].effectiveCapacity;
            }
        }
        if (total <= 0) {
            return;
        }
        for (int i = 0; i < allowed.length; i++) {
            if (chosen.test(allowed[i])) {
                w[i] = inst.costs[allowed[i]].effectiveCapacity / total;
            }
        }
    }

    /**
     * Nearest first, spilling over when full, as global load balancers do by region: (source, engine
     * cluster) pairs are filled in order of round trip (higher priority first on a tie), each up to the
     * remaining effective capacity of the cluster's allowed engines; what fits nowhere is shed.
     */
    private static void waterfall(Instance inst, double[][] weights, double[] shed) {
        int n = inst.engines.size();
        double[] room = new double[n];
        for (int j = 0; j < n; j++) {
            room[j] = inst.costs[j].effectiveCapacity;
        }
        double[] left = inst.demand.clone();
        record Pair(int source, String cluster, double rtt, int priority) {
        }
        List<Pair> pairs = new ArrayList<>();
        for (int k = 0; k < inst.sourceCount; k++) {
            List<String> seen = new ArrayList<>();
            for (int j : inst.sourceEngines[k]) {
                String c = inst.engines.get(j).cluster();
                if (!seen.contains(c)) {
                    seen.add(c);
                    pairs.add(new Pair(k, c, inst.rtt(k, j), inst.sourceClass[k].priority()));
                }
            }
        }
        pairs.sort(Comparator.comparingDouble(Pair::rtt).thenComparing(Comparator.comparingInt(Pair::priority)
                .reversed()));
        for (Pair p : pairs) {
            int k = p.source();
            if (left[k] <= 0) {
                continue;
            }
            int[] allowed = inst.sourceEngines[k];
            double free = 0;
            for (int j : allowed) {
                if (inst.engines.get(j).cluster().equals(p.cluster())) {
                    free += room[j];
                }
            }
            if (free <= 0) {
                continue;
            }
            double take = Math.min(left[k], free);
            for (int i = 0; i < allowed.length; i++) {
                int j = allowed[i];
                if (inst.engines.get(j).cluster().equals(p.cluster()) && room[j] > 0) {
                    double f = take * room[j] / free;
                    weights[k][i] += f / inst.demand[k];
                    room[j] -= f;
                }
            }
            left[k] -= take;
        }
        for (int k = 0; k < inst.sourceCount; k++) {
            if (inst.demand[k] > 0) {
                shed[k] = Math.max(0, left[k]) / inst.demand[k];
            } else {
                // no demand expected: a request that comes anyway goes to the nearest allowed engines
                nearestOne(inst, k, weights[k]);
                shed[k] = sum(weights[k]) == 0 ? 1 : 0;
            }
        }
    }

    private static void nearestOne(Instance inst, int k, double[] w) {
        int[] allowed = inst.sourceEngines[k];
        double best = Double.POSITIVE_INFINITY;
        for (int j : allowed) {
            if (inst.costs[j].effectiveCapacity > 0) {
                best = Math.min(best, inst.rtt(k, j));
            }
        }
        final double nearest = best;
        splitByCapacity(inst, allowed, w, j -> inst.rtt(k, j) == nearest);
    }

    private static double sum(double[] a) {
        double s = 0;
        for (double v : a) {
            s += v;
        }
        return s;
    }
}
