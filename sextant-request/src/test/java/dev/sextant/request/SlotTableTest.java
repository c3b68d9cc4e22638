package dev.sextant.request;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.offset;

class SlotTableTest {

    @Test
    void of_twoEngines_givesExactSlotCountsInBlocks() {
        SlotTable t = SlotTable.of(List.of("a", "b"), new double[] {1, 3});
        assertThat(t.slotCount()).isEqualTo(4096);
        assertThat(t.slots(0)).isEqualTo(1024);
        assertThat(t.slots(1)).isEqualTo(3072);
    }

    @Test
    void rebalance_oneQuarterShifts_movesExactlyAQuarterOfTheSlots() {
        SlotTable before = SlotTable.of(List.of("a", "b"), new double[] {1, 3});
        SlotTable after = before.rebalance(List.of("a", "b"), new double[] {1, 1});
        assertThat(after.slots(0)).isEqualTo(2048);
        assertThat(movedFraction(before, after, 200_000, 1)).isCloseTo(0.25, offset(0.005));
    }

    @Test
    void first_millionKeys_sharesWithinHalfAPercentagePointOfWeights() {
        SplittableRandom rnd = new SplittableRandom(7);
        int n = 40;
        double[] w = new double[n];
        double sum = 0;
        for (int i = 0; i < n; i++) {
            w[i] = rnd.nextDouble() < 0.2 ? rnd.nextDouble() * 0.05 : rnd.nextDouble();
            sum += w[i];
        }
        SlotTable t = SlotTable.of(Fixtures.ids(n), w);
        int keys = 1_000_000;
        int[] hits = new int[n];
        for (int i = 0; i < keys; i++) {
            hits[t.first(rnd.nextLong())]++;
        }
        double maxErrorPp = 0;
        for (int i = 0; i < n; i++) {
            double weight = w[i] / sum;
            if (weight >= 0.01) {
                maxErrorPp = Math.max(maxErrorPp, Math.abs(hits[i] / (double) keys - weight) * 100);
            }
        }
        System.out.printf("share accuracy: %d engines, %,d keys, max |share - weight| = %.4f pp%n", n, keys,
                maxErrorPp);
        assertThat(maxErrorPp).isLessThanOrEqualTo(0.5);
    }

    @Test
    void first_thousandEngines_sharesWithinHalfAPercentagePoint() {
        SplittableRandom rnd = new SplittableRandom(11);
        int n = 1000;
        double[] w = new double[n];
        double sum = 0;
        for (int i = 0; i < n; i++) {
            w[i] = i < 10 ? 40 : rnd.nextDouble(); // ten heavy engines (~4% each), the rest small
            sum += w[i];
        }
        SlotTable t = SlotTable.of(Fixtures.ids(n), w);
        int keys = 1_000_000;
        int[] hits = new int[n];
        for (int i = 0; i < keys; i++) {
            hits[t.first(rnd.nextLong())]++;
        }
        double maxErrorPp = 0;
        for (int i = 0; i < n; i++) {
            maxErrorPp = Math.max(maxErrorPp, Math.abs(hits[i] / (double) keys - w[i] / sum) * 100);
        }
        System.out.printf("share accuracy: %d engines, %,d keys, max |share - weight| over all = %.4f pp%n", n,
                keys, maxErrorPp);
        assertThat(maxErrorPp).isLessThanOrEqualTo(0.5);
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
            List<String> ids = Fixtures.ids(n);
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
            SlotTable after = before.rebalance(ids, w2);
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
    void rebalance_smallChangesToAThousandWeights_movesAtMost1point1TimesTheTotalVariation() {
        SplittableRandom rnd = new SplittableRandom(13);
        int n = 1000;
        List<String> ids = Fixtures.ids(n);
        double worst = 0;
        for (double change : new double[] {0.02, 0.1, 0.5}) {
            double[] w = new double[n];
            double[] w2 = new double[n];
            for (int i = 0; i < n; i++) {
                w[i] = 0.2 + rnd.nextDouble();
                w2[i] = w[i] * (1 - change + 2 * change * rnd.nextDouble());
            }
            SlotTable before = SlotTable.of(ids, w);
            SlotTable after = before.rebalance(ids, w2);
            double ratio = movedFraction(before, after, 1_000_000, 7) / tv(w, w2);
            System.out.printf("disruption: 1,000 engines, every weight changed by up to ±%.0f%%: moved/TV %.3f%n",
                    change * 100, ratio);
            worst = Math.max(worst, ratio);
        }
        assertThat(worst).isLessThanOrEqualTo(1.1);
    }

    @Test
    void rebalance_engineJoinsAndLeaves_keepsOthersKeys() {
        SlotTable before = SlotTable.of(List.of("a", "b", "c"), new double[] {1, 1, 1});
        SlotTable after = before.rebalance(List.of("b", "c", "d"), new double[] {1, 1, 1});
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

    @Test
    void decode_ofEncode_choosesTheSameEnginesAsTheRebalancedTable() {
        List<String> ids = Fixtures.ids(30);
        SplittableRandom rnd = new SplittableRandom(9);
        double[] w2 = randomWeights(rnd, 30);
        SlotTable rebalanced = SlotTable.of(ids, randomWeights(rnd, 30)).rebalance(ids, w2);
        SlotTable copy = SlotTable.decode(ids, w2, rebalanced.encode());
        for (int i = 0; i < 10_000; i++) {
            long key = rnd.nextLong();
            assertThat(copy.first(key)).isEqualTo(rebalanced.first(key));
        }
    }

    @Test
    void decode_countsThatDoNotMatchTheWeights_isRejected() {
        List<String> ids = List.of("a", "b");
        String encoded = SlotTable.of(ids, new double[] {1, 3}).encode();
        assertThatThrownBy(() -> SlotTable.decode(ids, new double[] {1, 1}, encoded))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("slots: engine 'a' holds 1024 slots (expected: 2048 from its weight)");
        assertThatThrownBy(() -> SlotTable.decode(ids, new double[] {1, 3}, "xx"))
                .hasMessageStartingWith("slots: unknown encoding");
    }

    @Test
    void of_allZeroWeights_isRejectedWithTheField() {
        assertThatThrownBy(() -> SlotTable.of(List.of("a"), new double[] {0}))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("weights");
    }

    @Property(tries = 200)
    void fill_givesDistinctPositiveWeightEnginesStartingWithFirst(
            @ForAll @Size(min = 1, max = 40) List<@DoubleRange(min = 0, max = 1) Double> weights,
            @ForAll long key, @ForAll @IntRange(min = 1, max = 50) int want) {
        double[] w = weights.stream().mapToDouble(Double::doubleValue).toArray();
        if (sum(w) == 0) {
            w[0] = 1;
        }
        SlotTable t = SlotTable.of(Fixtures.ids(w.length), w);
        int[] out = new int[want];
        int k = t.fill(key, out);
        int positive = 0;
        for (double v : w) {
            positive += v > 0 ? 1 : 0;
        }
        assertThat(k).isEqualTo(Math.min(want, positive));
        assertThat(out[0]).isEqualTo(t.first(key));
        Set<Integer> seen = new HashSet<>();
        for (int i = 0; i < k; i++) {
            assertThat(w[out[i]]).isPositive();
            assertThat(seen.add(out[i])).isTrue();
        }
    }

    @Property(tries = 50)
    void rebalance_isAPureFunctionOfTableAndWeights(@ForAll @IntRange(min = 1, max = 30) int n, @ForAll long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        double[] w = randomWeights(rnd, n);
        double[] w2 = randomWeights(rnd, n);
        List<String> ids = Fixtures.ids(n);
        SlotTable a = SlotTable.of(ids, w).rebalance(ids, w2);
        SlotTable b = SlotTable.of(ids, w).rebalance(ids, w2);
        for (int i = 0; i < 1000; i++) {
            long key = rnd.nextLong();
            assertThat(a.first(key)).isEqualTo(b.first(key));
        }
    }

    // ------------------------------------------------------------------ helpers

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

    static double sum(double[] w) {
        double s = 0;
        for (double v : w) {
            s += v;
        }
        return s;
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
            double u = (Hashing.mix(key ^ Hashing.mix(j + 1L)) >>> 11) * 0x1.0p-53;
            double score = -Math.log(u == 0 ? Double.MIN_VALUE : u) / w[j];
            if (score < bestScore) {
                bestScore = score;
                best = j;
            }
        }
        return best;
    }
}
