package dev.sextant.policy;

import dev.sextant.hashing.SplitMix64;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.SlotCodec;
import dev.sextant.snapshot.SlotTable;
import dev.sextant.snapshot.SortedEngineIds;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Slot tables rebalanced from history (docs/design.md §4, 3): the slot-array rule moves the total variation
 * distance and no more, and the run-based form and the snapshot's batch give its very text.
 */
class SlotRebalancingTest {

    @Test
    void rebalance_oneQuarterShifts_movesExactlyAQuarterOfTheSlots() {
        SlotTable before = SlotTable.of(List.of("a", "b"), new double[] {1, 3});
        SlotTable after = SlotRebalancer.rebalance(before, List.of("a", "b"), new double[] {1, 1});
        assertThat(after.slots(0)).isEqualTo(2048);
        assertThat(movedFraction(before, after, 200_000, 1)).isCloseTo(0.25, org.assertj.core.data.Offset.offset(0.005));
    }

    @Test
    void rebalance_randomWeightChanges_movesAtMost1point1TimesTheTotalVariation() {
        SplittableRandom rnd = new SplittableRandom(3);
        double worst = 0;
        double worstRendezvous = 0;
        double sumRatio = 0;
        double sumRendezvous = 0;
        int trials = 20;
        for (int trial = 0; trial < trials; trial++) {
            int n = 5 + rnd.nextInt(60);
            List<String> ids = ids(n);
            double[] w = randomWeights(rnd, n);
            double[] w2 = w.clone();
            // every weight changes by up to ±50%, and now and then an engine leaves or arrives
            for (int i = 0; i < n; i++) {
                w2[i] = w[i] * (0.5 + rnd.nextDouble());
                if (rnd.nextDouble() < 0.05) {
                    w2[i] = 0;
                }
                if (w[i] == 0 && rnd.nextDouble() < 0.5) {
                    w2[i] = rnd.nextDouble();
                }
            }
            if (sum(w2) == 0) {
                w2[0] = 1;
            }
            double tv = tv(w, w2);
            SlotTable before = SlotTable.of(ids, w);
            SlotTable after = SlotRebalancer.rebalance(before, ids, w2);
            double moved = movedFraction(before, after, 200_000, trial);
            double ratio = moved / tv;
            double rv = rendezvousMoved(w, w2, 100_000, trial) / tv;
            worst = Math.max(worst, ratio);
            worstRendezvous = Math.max(worstRendezvous, rv);
            sumRatio += ratio;
            sumRendezvous += rv;
        }
        System.out.printf("disruption: moved/TV over %d random weight changes: slot table mean %.3f max %.3f;"
                + " weighted rendezvous (memoryless) mean %.3f max %.3f%n", trials, sumRatio / trials, worst,
                sumRendezvous / trials, worstRendezvous);
        assertThat(worst).isLessThanOrEqualTo(1.1);
    }

    @Test
    void rebalance_engineJoinsAndLeaves_keepsOthersKeys() {
        SlotTable before = SlotTable.of(List.of("a", "b", "c"), new double[] {1, 1, 1});
        SlotTable after = SlotRebalancer.rebalance(before, List.of("b", "c", "d"), new double[] {1, 1, 1});
        SplittableRandom rnd = new SplittableRandom(5);
        int stayed = 0;
        int onBOrC = 0;
        for (int i = 0; i < 100_000; i++) {
            long key = rnd.nextLong();
            String was = before.engineIds().get(before.first(key));
            String is = after.engineIds().get(after.first(key));
            if (!was.equals("a")) {
                onBOrC++;
                if (was.equals(is)) {
                    stayed++;
                }
            }
        }
        assertThat(stayed).isEqualTo(onBOrC);
    }

    @Property(tries = 50)
    void rebalance_isAPureFunctionOfTableAndWeights(@ForAll @IntRange(min = 1, max = 30) int n, @ForAll long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        double[] w = randomWeights(rnd, n);
        double[] w2 = randomWeights(rnd, n);
        List<String> ids = ids(n);
        SlotTable a = SlotRebalancer.rebalance(SlotTable.of(ids, w), ids, w2);
        SlotTable b = SlotRebalancer.rebalance(SlotTable.of(ids, w), ids, w2);
        for (int i = 0; i < 1000; i++) {
            long key = rnd.nextLong();
            assertThat(a.first(key)).isEqualTo(b.first(key));
        }
    }

    @Property(tries = 200)
    void rebalanceEncoded_givesTheTextOfDecodeRebalanceEncode(@ForAll @IntRange(min = 1, max = 300) int n,
                                                              @ForAll long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<String> ids = ids(n);
        double[] w = randomWeights(rnd, n);
        String text = SlotTableBatch.encodedOnce(ids, w);
        assertThat(text).isEqualTo(SlotTable.of(ids, w).encode());
        for (int step = 0; step < 6; step++) {
            // engines leave and join (the table may change size), weights move a little or a lot
            List<String> nextIds = new ArrayList<>();
            for (String id : ids) {
                if (rnd.nextDouble() >= 0.15) {
                    nextIds.add(id);
                }
            }
            for (int i = 0, joining = rnd.nextInt(1 + n / 2); i < joining; i++) {
                nextIds.add(String.format("j%d-%05d", step, i));
            }
            if (nextIds.isEmpty()) {
                nextIds.add("only");
            }
            double[] next = new double[nextIds.size()];
            boolean small = rnd.nextBoolean();
            for (int i = 0; i < next.length; i++) {
                int before = ids.indexOf(nextIds.get(i));
                next[i] = small && before >= 0 ? w[before] * (0.95 + 0.1 * rnd.nextDouble())
                        : rnd.nextDouble() < 0.1 ? 0 : rnd.nextDouble();
            }
            if (sum(next) == 0) {
                next[0] = 1;
            }
            String expected = SlotRebalancer.rebalance(SlotTable.decode(text, ids, w), nextIds, next).encode();
            String actual = SlotTableBatch.rebalancedOnce(text, ids, w, nextIds, next);
            assertThat(actual).as("step %d, %d -> %d engines", step, ids.size(), nextIds.size()).isEqualTo(expected);
            assertThat(new SlotTableBatch().rebalanceEncodedOnce(text, ids, w, nextIds, next)).isEqualTo(expected);
            // weights moved by less than a slot: the same table, given back as it was
            double[] nudged = next.clone();
            nudged[0] *= 1 + 1e-12;
            assertThat(new SlotTableBatch().rebalanceEncodedOnce(actual, nextIds, next, nextIds, nudged))
                    .isSameAs(actual);
            ids = nextIds;
            w = next;
            text = actual;
        }
    }

    @Property(tries = 300)
    void largestRemainder_givesTheLargestRemaindersTheExtraSlots_tiesToTheLowerIndex(
            @ForAll @IntRange(min = 1, max = 400) int n, @ForAll long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        double[] w = randomWeights(rnd, n);
        if (rnd.nextBoolean()) { // equal weights: every remainder ties
            for (int i = 0; i < n; i++) {
                w[i] = w[i] > 0 ? 1 : 0;
            }
            w[0] = 1;
        }
        int m = SlotTable.slotCountFor(n);
        int[] counts = SlotCodec.slotCounts(w, sum(w), m);
        // by the definition: floors, then one more for each of the largest (remainder, −index) pairs
        double total = sum(w);
        Integer[] byRemainder = new Integer[n];
        int[] expected = new int[n];
        int left = m;
        for (int i = 0; i < n; i++) {
            byRemainder[i] = i;
            expected[i] = (int) Math.floor(w[i] / total * m);
            left -= expected[i];
        }
        java.util.Arrays.sort(byRemainder, (a, b) -> {
            long ka = (long) ((w[a] / total * m - expected[a]) * 0x1.0p46);
            long kb = (long) ((w[b] / total * m - expected[b]) * 0x1.0p46);
            return ka != kb ? Long.compare(kb, ka) : Integer.compare(a, b);
        });
        for (int k = 0; k < n && left > 0; k++) {
            if (w[byRemainder[k]] > 0) {
                expected[byRemainder[k]]++;
                left--;
            }
        }
        assertThat(left).isZero();
        assertThat(counts).containsExactly(expected);
    }

    @Property(tries = 100)
    void batch_givesEveryRouteTheTextOfTheStaticMethods_sharedInputsOrNot(
            @ForAll @IntRange(min = 1, max = 200) int n, @ForAll long seed) {
        // routes as a snapshot has them: several share their previous table and engines, some of those also
        // their slot counts (weights equal, or equal but for their last bits), others differ
        SplittableRandom rnd = new SplittableRandom(seed);
        List<String> ids = ids(n);
        double[] w = positiveWeights(rnd, n);
        String previous = SlotTableBatch.encodedOnce(ids, w);
        SlotTableBatch batch = new SlotTableBatch();
        assertThat(batch.encodedOf(ids, w)).isEqualTo(previous);
        double[] moved = new double[n];
        for (int i = 0; i < n; i++) {
            moved[i] = w[i] * (0.9 + 0.2 * rnd.nextDouble());
        }
        for (int route = 0; route < 12; route++) {
            double[] next = moved.clone();
            switch (route % 3) {
                case 0 -> { } // the same weights as another route
                case 1 -> next[rnd.nextInt(n)] = Math.nextUp(next[rnd.nextInt(n)]); // the last bit differs
                default -> next[rnd.nextInt(n)] *= 1 + rnd.nextDouble(); // really different
            }
            String expected = SlotTableBatch.rebalancedOnce(previous, ids, w, ids, next);
            assertThat(batch.rebalanceEncoded(previous, ids, w, ids, next)).as("route %d", route).isEqualTo(expected);
            assertThat(batch.encodedOf(ids, next)).isEqualTo(SlotTableBatch.encodedOnce(ids, next));
        }
    }

    @Property(tries = 100)
    void batch_onRoutesWeights_givesTheTextOfTheStaticMethods_overSubsetsOfSharedIds(
            @ForAll @IntRange(min = 2, max = 120) int n, @ForAll long seed) {
        // as a policy builds routes: weights as ranks into one id list per snapshot (the previous snapshot
        // has its own, equal, list object). Routes share their previous table text and their slot counts
        // but not always their engines, before or now: only the engines tell those tables apart
        SplittableRandom rnd = new SplittableRandom(seed);
        List<String> all = ids(n);
        SortedEngineIds before = SortedEngineIds.of(all);
        SortedEngineIds now = SortedEngineIds.of(all);
        int size = 1 + rnd.nextInt(n);
        double[] previousWeights = fractions(rnd, size);
        double[] weights = fractions(rnd, size);
        int[][] subsets = {subset(rnd, n, size), subset(rnd, n, size), subset(rnd, n, size)};
        SlotTableBatch batch = new SlotTableBatch();
        for (int route = 0; route < 12; route++) {
            int[] previousRanks = subsets[route % 3];
            int[] ranks = subsets[route / 3 % 3];
            double[] next = route % 2 == 0 ? weights : fractions(rnd, size);
            Map<String, Double> previousRoute = Route.weights(before, previousRanks, previousWeights);
            Map<String, Double> nextRoute = Route.weights(now, ranks, next);
            List<String> previousIds = List.copyOf(previousRoute.keySet());
            List<String> ids = List.copyOf(nextRoute.keySet());
            String previous = SlotTableBatch.encodedOnce(previousIds, previousWeights);
            String expected = SlotTableBatch.rebalancedOnce(previous, previousIds, previousWeights, ids, next);

            assertThat(batch.encodedOf(nextRoute)).as("route %d, fresh", route)
                    .isEqualTo(SlotTableBatch.encodedOnce(ids, next));
            assertThat(batch.rebalanceEncoded(previous, previousRoute, nextRoute)).as("route %d", route)
                    .isEqualTo(expected);
            // routes given as plain maps take the other path to the same text
            assertThat(batch.rebalanceEncoded(previous, new java.util.TreeMap<>(previousRoute),
                    new java.util.TreeMap<>(nextRoute))).as("route %d, maps", route).isEqualTo(expected);
        }
    }

    @Test
    void batch_onRoutesWeights_checksThePreviousTableAgainstThatRoutesWeights() {
        SortedEngineIds ids = SortedEngineIds.of(ids(3));
        Map<String, Double> w = Route.weights(ids, new int[] {0, 1, 2}, new double[] {0.25, 0.25, 0.5});
        String good = SlotTableBatch.encodedOnce(List.copyOf(w.keySet()), new double[] {0.25, 0.25, 0.5});
        SlotTableBatch batch = new SlotTableBatch();
        assertThat(batch.rebalanceEncoded(good, w, w)).isEqualTo(good);
        Map<String, Double> other = Route.weights(ids, new int[] {0, 1, 2}, new double[] {0.6, 0.2, 0.2});
        assertThatThrownBy(() -> batch.rebalanceEncoded(good, other, w))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("holds");
    }

    /** Positive weights summing to 1, as a route's. */
    private static double[] fractions(SplittableRandom rnd, int n) {
        double[] w = positiveWeights(rnd, n);
        double total = java.util.Arrays.stream(w).sum();
        return java.util.Arrays.stream(w).map(x -> x / total).toArray();
    }

    /** An ascending subset of [0, n) of {@code size} elements. */
    private static int[] subset(SplittableRandom rnd, int n, int size) {
        int[] all = java.util.stream.IntStream.range(0, n).toArray();
        for (int i = 0; i < size; i++) { // a partial Fisher–Yates shuffle picks the first `size`
            int j = i + rnd.nextInt(n - i);
            int t = all[i];
            all[i] = all[j];
            all[j] = t;
        }
        int[] out = java.util.Arrays.copyOf(all, size);
        java.util.Arrays.sort(out);
        return out;
    }

    @Test
    void batch_checksThePreviousTableAgainstEachRoutesOwnWeights_evenWhenItParsedItBefore() {
        List<String> ids = ids(3);
        double[] w = {1, 1, 2};
        String good = SlotTableBatch.encodedOnce(ids, w);
        SlotTableBatch batch = new SlotTableBatch();
        assertThat(batch.rebalanceEncoded(good, ids, w, ids, new double[] {1, 2, 2})).isNotEmpty();
        assertThatThrownBy(() -> batch.rebalanceEncoded(good, ids, new double[] {4, 1, 1}, ids, w))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("holds");
        assertThatThrownBy(() -> batch.rebalanceEncoded("!!", ids, w, ids, w))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("base64url");
    }

    @Test
    void rebalanceEncoded_badPreviousTable_isRejectedLikeDecode() {
        List<String> ids = ids(3);
        double[] w = {1, 1, 2};
        String good = SlotTableBatch.encodedOnce(ids, w);
        assertThatThrownBy(() -> SlotTableBatch.rebalancedOnce(good, ids, new double[] {4, 1, 1}, ids, w))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("holds");
        assertThatThrownBy(() -> SlotTableBatch.rebalancedOnce("!!", ids, w, ids, w))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("base64url");
    }

    @Test
    void encode_freshAndRebalancedTables_decodeToTablesThatRouteEveryKeyAlike() {
        SplittableRandom rnd = new SplittableRandom(21);
        for (int n : new int[] {1, 2, 16, 300}) {
            List<String> ids = ids(n);
            double[] w = positiveWeights(rnd, n);
            SlotTable t = SlotTable.of(ids, w);
            for (int step = 0; step < 4; step++) {
                double[] w2 = positiveWeights(rnd, n);
                t = SlotRebalancer.rebalance(t, ids, w2);
                w = w2;
            }
            SlotTable back = SlotTable.decode(t.encode(), ids, w);
            assertThat(back.sameAs(t)).as("n = %d", n).isTrue();
            assertThat(back.encode()).isEqualTo(t.encode());
            for (int i = 0; i < 10_000; i++) {
                long key = rnd.nextLong();
                assertThat(back.first(key)).isEqualTo(t.first(key));
            }
        }
    }

    @Test
    void encode_freshOrOftenRebalanced_staysAFewCharactersPerEngine() {
        SplittableRandom rnd = new SplittableRandom(4);
        for (int n : new int[] {16, 1000}) {
            List<String> ids = ids(n);
            double[] w = positiveWeights(rnd, n);
            SlotTable t = SlotTable.of(ids, w);
            int fresh = t.encode().length();
            int after50 = 0;
            for (int step = 1; step <= 400; step++) {
                double[] w2 = w.clone();
                for (int i = 0; i < n; i++) {
                    w2[i] = Math.min(2, Math.max(0.05, w[i] * (0.8 + 0.4 * rnd.nextDouble())));
                }
                t = SlotRebalancer.rebalance(t, ids, w2);
                w = w2;
                after50 = step == 50 ? t.encode().length() : after50;
            }
            int after400 = t.encode().length();
            System.out.printf("slots encoding: %d engines, %d slots: %d characters built from weights, %d after 50"
                    + " rebalances of every weight by ±20%%, %d after 400%n", n, t.slotCount(), fresh, after50,
                    after400);
            assertThat(fresh).isLessThanOrEqualTo(8 + 4 * n);
            // Rebalancing gives up the shortest runs first, so fragmentation levels off instead of
            // growing with every snapshot.
            assertThat(after50).isLessThanOrEqualTo(64 + 16 * n);
            assertThat(after400).isLessThanOrEqualTo(64 + 16 * n);
        }
    }

    static double[] positiveWeights(SplittableRandom rnd, int n) {
        double[] w = new double[n];
        for (int i = 0; i < n; i++) {
            w[i] = 0.05 + rnd.nextDouble();
        }
        return w;
    }

    static double[] randomWeights(SplittableRandom rnd, int n) {
        double[] w = new double[n];
        for (int i = 0; i < n; i++) {
            w[i] = rnd.nextDouble() < 0.1 ? 0 : rnd.nextDouble();
        }
        if (sum(w) == 0) {
            w[0] = 1;
        }
        return w;
    }

    static double tv(double[] a, double[] b) {
        double sa = sum(a);
        double sb = sum(b);
        double d = 0;
        for (int i = 0; i < a.length; i++) {
            d += Math.abs(a[i] / sa - b[i] / sb);
        }
        return d / 2;
    }

    static double movedFraction(SlotTable before, SlotTable after, int keys, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed * 31 + 1);
        int moved = 0;
        for (int i = 0; i < keys; i++) {
            long key = rnd.nextLong();
            if (!before.engineIds().get(before.first(key)).equals(after.engineIds().get(after.first(key)))) {
                moved++;
            }
        }
        return moved / (double) keys;
    }

    /** Memoryless weighted rendezvous (argmin −ln(u)/w), the alternative the table was measured against. */
    static double rendezvousMoved(double[] w, double[] w2, int keys, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed * 17 + 3);
        int moved = 0;
        for (int i = 0; i < keys; i++) {
            long key = rnd.nextLong();
            if (rendezvous(w, key) != rendezvous(w2, key)) {
                moved++;
            }
        }
        return moved / (double) keys;
    }

    static int rendezvous(double[] w, long key) {
        int best = -1;
        double bestScore = Double.POSITIVE_INFINITY;
        for (int j = 0; j < w.length; j++) {
            if (w[j] <= 0) {
                continue;
            }
            double u = (SplitMix64.mix(key ^ SplitMix64.mix(j + 1L)) >>> 11) * 0x1.0p-53;
            double score = -Math.log(u == 0 ? Double.MIN_VALUE : u) / w[j];
            if (score < bestScore) {
                bestScore = score;
                best = j;
            }
        }
        return best;
    }

    static List<String> ids(int n) {
        return IntStream.range(0, n).mapToObj(i -> String.format("e%05d", i)).toList();
    }

    static double sum(double[] w) {
        return Arrays.stream(w).sum();
    }
}
