package dev.sextant.hashing;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class SplitMix64Test {

    @Test
    void draw_seedZero_givesTheReferenceGeneratorsFirstOutputs() {
        // the first outputs of SplitMix64 seeded with 0, as the reference implementation prints them
        assertThat(SplitMix64.draw(0, 0)).isEqualTo(0xE220A8397B1DCDAFL);
        assertThat(SplitMix64.draw(0, 1)).isEqualTo(0x6E789E6AA1B965F4L);
        assertThat(SplitMix64.draw(0, 2)).isEqualTo(0x06C45D188009454FL);
    }

    @Test
    void unit_takesTheTop53Bits() {
        assertThat(SplitMix64.unit(0)).isZero();
        assertThat(SplitMix64.unit(-1L)).isEqualTo(1 - 0x1.0p-53);
        assertThat(SplitMix64.unit(1L << 63)).isEqualTo(0.5);
    }
}
