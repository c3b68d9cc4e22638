package dev.sextant.snapshot;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The request path's side of a slot table: shares, a key's order, the text form and its checks. Rebalancing from
 * history is tested with the policy that does it ({@code SlotRebalancingTest}).
 */
class SlotTableTest {

    @Test
    void of_twoEngines_givesExactSlotCountsInBlocks() {
        SlotTable t = SlotTable.of(List.of("a", "b"), new double[] {1, 3});
        assertThat(t.slotCount()).isEqualTo(4096);
        assertThat(t.slots(0)).isEqualTo(1024);
        assertThat(t.slots(1)).isEqualTo(3072);
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
        SlotTable t = SlotTable.of(ids(n), w);
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
        System.out.printf("share accuracy: %d engines, %,d keys, max |share - weight| = %.4f pp%n", n, keys, maxErrorPp);
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
        SlotTable t = SlotTable.of(ids(n), w);
        int keys = 1_000_000;
        int[] hits = new int[n];
        for (int i = 0; i < keys; i++) {
            hits[t.first(rnd.nextLong())]++;
        }
        double maxErrorPp = 0;
        for (int i = 0; i < n; i++) {
            maxErrorPp = Math.max(maxErrorPp, Math.abs(hits[i] / (double) keys - w[i] / sum) * 100);
        }
        System.out.printf("share accuracy: %d engines, %,d keys, max |share - weight| over all = %.4f pp%n", n, keys,
                maxErrorPp);
        assertThat(maxErrorPp).isLessThanOrEqualTo(0.5);
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
        SlotTable t = SlotTable.of(ids(w.length), w);
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

    @Test
    void decode_corruptTables_areRejectedWithWhatIsWrong() {
        List<String> ids = List.of("a", "b", "c");
        double[] w = {1, 1, 2};
        String good = SlotTable.of(ids, w).encode();
        byte[] raw = Base64.getUrlDecoder().decode(good);

        byte[] flipped = raw.clone();
        flipped[3] ^= 0x04; // the first run's owner becomes engine 2 instead of 0
        byte[] truncated = java.util.Arrays.copyOf(raw, raw.length - 1);
        byte[] trailing = java.util.Arrays.copyOf(raw, raw.length + 1);
        byte[] format = raw.clone();
        format[0] = 9;

        assertThatThrownBy(() -> SlotTable.decode("not base64!", ids, w)).hasMessageStartingWith("slots: not base64");
        assertThatThrownBy(() -> SlotTable.decode(encode(flipped), ids, w)).hasMessageStartingWith("slots: ");
        assertThatThrownBy(() -> SlotTable.decode(encode(truncated), ids, w))
                .hasMessageStartingWith("slots: truncated");
        assertThatThrownBy(() -> SlotTable.decode(encode(trailing), ids, w))
                .hasMessageContaining("after the last slot");
        assertThatThrownBy(() -> SlotTable.decode(encode(format), ids, w)).hasMessage("slots: format 9 (expected: 1)");
        assertThatThrownBy(() -> SlotTable.decode(good, List.of("a", "b"), new double[] {1, 1}))
                .hasMessageStartingWith("slots: 3 engines (expected: 2");
        // Well formed, but the shares are not the weights'.
        assertThatThrownBy(() -> SlotTable.decode(good, ids, new double[] {2, 1, 1}))
                .hasMessageStartingWith("slots: engine 0 (a) holds 1024 slots (expected: 2048 ± 1");
        assertThat(SlotTable.decode(good, ids, w).slots(2)).isEqualTo(2048);
    }

    // ------------------------------------------------------------------ helpers

    static String encode(byte[] b) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    static List<String> ids(int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(String.format("e%05d", i));
        }
        return out;
    }

    static double sum(double[] w) {
        double s = 0;
        for (double v : w) {
            s += v;
        }
        return s;
    }
}
