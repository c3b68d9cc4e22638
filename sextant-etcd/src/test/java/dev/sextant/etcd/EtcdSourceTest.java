package dev.sextant.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The watch a gateway's source makes after a read (the read-then-watch order itself: EtcdSnapshotIT). */
class EtcdSourceTest {
    @Test
    void watchOption_startsAtTheRevisionAfterTheRead() {
        assertThat(EtcdSource.watchOption(41).getRevision()).isEqualTo(42);
    }
}
