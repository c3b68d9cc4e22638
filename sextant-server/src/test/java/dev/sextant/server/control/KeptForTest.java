package dev.sextant.server.control;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class KeptForTest {

    @Test
    void get_makesEachValueOncePerObject_andForgetsThemWhenTheObjectIsReplaced() {
        KeptFor<Object, String, String> kept = new KeptFor<>();
        AtomicInteger made = new AtomicInteger();
        Object first = new Object();
        Object second = new Object();

        assertThat(kept.get(first, "a", k -> k + made.incrementAndGet())).isEqualTo("a1");
        assertThat(kept.get(first, "a", k -> k + made.incrementAndGet())).isEqualTo("a1");
        assertThat(kept.get(first, "b", k -> k + made.incrementAndGet())).isEqualTo("b2");
        assertThat(kept.get(second, "a", k -> k + made.incrementAndGet())).as("another object").isEqualTo("a3");
        assertThat(kept.get(first, "a", k -> k + made.incrementAndGet())).as("forgotten once replaced").isEqualTo("a4");
        assertThat(made.get()).isEqualTo(4);
    }
}
