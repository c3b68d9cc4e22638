package dev.sextant.bench.request;

import dev.sextant.hashing.SplitMix64;

import java.util.Arrays;

/**
 * The alternatives the slot table is measured against, written plainly. Each maps a 64-bit key to
 * an engine index with probability proportional to its weight.
 */
final class NaiveSelectors {
    private NaiveSelectors() {
    }

    static long mix(long z) {
        return SplitMix64.mix(z);
    }

    static double unit(long h) {
        return SplitMix64.unit(h);
    }

    /**
     * Weighted random: a uniform number (here drawn from the key, so it is repeatable) looked up in
     * the cumulative weights by binary search. Exact shares, no affinity across weight changes: every
     * boundary after a changed weight shifts.
     */
    static final class WeightedRandom {
        private final double[] cumulative;

        WeightedRandom(double[] weights) {
            cumulative = new double[weights.length];
            double sum = 0;
            for (int i = 0; i < weights.length; i++) {
                sum += weights[i];
                cumulative[i] = sum;
            }
            for (int i = 0; i < weights.length; i++) {
                cumulative[i] /= sum;
            }
        }

        int pick(long key) {
            double u = unit(mix(key));
            int i = Arrays.binarySearch(cumulative, u);
            i = i >= 0 ? i + 1 : -i - 1;
            return Math.min(i, cumulative.length - 1);
        }
    }

    /**
     * A plain consistent-hash ring with virtual nodes (Karger et al. 1997): engine j gets
     * round(w_j × 100 × n) points, a key goes to the first point clockwise (binary search).
     */
    static final class VirtualNodeRing {
        private final long[] points;
        private final int[] owners;

        VirtualNodeRing(double[] weights) {
            int n = weights.length;
            double sum = Arrays.stream(weights).sum();
            int total = 0;
            int[] vnodes = new int[n];
            for (int j = 0; j < n; j++) {
                vnodes[j] = weights[j] > 0 ? Math.max(1, (int) Math.round(weights[j] / sum * 100.0 * n)) : 0;
                total += vnodes[j];
            }
            long[] raw = new long[total];
            int k = 0;
            for (int j = 0; j < n; j++) {
                for (int v = 0; v < vnodes[j]; v++) {
                    raw[k++] = mix(((long) j << 32) | v);
                }
            }
            // sort points, carrying owners along
            Integer[] order = new Integer[total];
            int[] ownerOf = new int[total];
            k = 0;
            for (int j = 0; j < n; j++) {
                for (int v = 0; v < vnodes[j]; v++) {
                    ownerOf[k++] = j;
                }
            }
            for (int i = 0; i < total; i++) {
                order[i] = i;
            }
            Arrays.sort(order, (a, b) -> Long.compareUnsigned(raw[a], raw[b]));
            points = new long[total];
            owners = new int[total];
            for (int i = 0; i < total; i++) {
                points[i] = raw[order[i]] ^ Long.MIN_VALUE; // signed order = unsigned order of raw
                owners[i] = ownerOf[order[i]];
            }
        }

        int pick(long key) {
            long h = mix(key) ^ Long.MIN_VALUE;
            int i = Arrays.binarySearch(points, h);
            i = i >= 0 ? i : -i - 1;
            return owners[i == points.length ? 0 : i];
        }
    }

    /**
     * Weighted rendezvous hashing (Schindelhauer and Schomaker 2005): argmin over engines of
     * −ln(u_kj)/w_j. Exact shares and no state, O(n) per key.
     */
    static final class WeightedRendezvous {
        private final double[] inverseWeights;
        private final long[] seeds;

        WeightedRendezvous(double[] weights) {
            inverseWeights = new double[weights.length];
            seeds = new long[weights.length];
            for (int j = 0; j < weights.length; j++) {
                inverseWeights[j] = weights[j] > 0 ? 1 / weights[j] : Double.POSITIVE_INFINITY;
                seeds[j] = mix(j + 1L);
            }
        }

        int pick(long key) {
            long k = mix(key);
            int best = 0;
            double bestScore = Double.POSITIVE_INFINITY;
            for (int j = 0; j < seeds.length; j++) {
                double u = unit(mix(k ^ seeds[j])) + 0x1.0p-54;
                double score = -Math.log(u) * inverseWeights[j];
                if (score < bestScore) {
                    bestScore = score;
                    best = j;
                }
            }
            return best;
        }
    }
}
