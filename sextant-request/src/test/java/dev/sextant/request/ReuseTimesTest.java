package dev.sextant.request;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.Test;

/** The times between a conversation's requests, as a gateway counts them. */
class ReuseTimesTest {
    private static final long S = 1_000_000_000L;

    @Test
    void aConversationsFirstRequest_isCountedApart_itsNextByTheTimeSinceTheLastEnded() {
        ReuseTimes t = new ReuseTimes(8);
        AtomicLongArray chat = t.counts("chat");
        t.arrived(chat, 42, 1_000, 10 * S);
        t.ended(42, 11 * S);
        t.arrived(chat, 42, 1_500, 14 * S); // 3 s after the end: the bucket [2 s, 4 s)

        Map<String, long[]> d = t.drain();
        assertThat(d).containsOnlyKeys("chat");
        long[] c = d.get("chat");
        assertThat(c[ReuseTimes.FIRST_SEEN]).as("the first request's size").isEqualTo(1_000);
        assertThat(c[ReuseTimes.REQUESTS]).isEqualTo(2);
        assertThat(c[ReuseTimes.bucket(3)]).as("the second's size, in its bucket").isEqualTo(1_500);
        assertThat(ReuseTimes.BOUNDS_SECONDS[ReuseTimes.bucket(3) - 1]).isEqualTo(2);
        assertThat(ReuseTimes.BOUNDS_SECONDS[ReuseTimes.bucket(3)]).isEqualTo(4);
        assertThat(t.drain()).as("reset by the drain; a class without counts is left out").isEmpty();
    }

    @Test
    void sinceEnd_isTheTimeSinceTheKeysLastRequestEnded_orMinusOneForAKeyTheTableDoesNotHold() {
        ReuseTimes t = new ReuseTimes(4);
        long a = 0x1234_5678_0000_0003L;
        long b = 0x9abc_def0_0000_0003L; // the same slot of 16, another key
        assertThat(t.sinceEnd(a, 5 * S)).as("never ended").isEqualTo(-1);
        t.ended(a, 2 * S);
        assertThat(t.sinceEnd(a, 5 * S)).isEqualTo(3 * S);
        assertThat(t.sinceEnd(a, 2 * S + S / 2)).as("to 1/64 s").isEqualTo(S / 2);
        assertThat(t.sinceEnd(0, 5 * S)).as("no key").isEqualTo(-1);
        t.ended(b, 3 * S);
        assertThat(t.sinceEnd(a, 5 * S)).as("its slot taken by another key").isEqualTo(-1);
        assertThat(t.sinceEnd(b, 5 * S)).isEqualTo(2 * S);
        assertThat(t.sinceEnd(b, 2 * S)).as("an end recorded after the reading").isZero();
    }

    @Test
    void aKeyWhoseSlotAnotherKeyTook_isAFirstRequest_andKeysWithout_areNotCounted() {
        ReuseTimes t = new ReuseTimes(4);
        AtomicLongArray chat = t.counts("chat");
        long a = 0x1234_5678_0000_0003L;
        long b = 0x9abc_def0_0000_0003L; // the same slot of 16, another key
        t.ended(a, 0);
        t.ended(b, S);
        t.arrived(chat, a, 10, 2 * S);
        t.arrived(chat, 0, 10, 2 * S);

        long[] c = t.drain().get("chat");
        assertThat(c[ReuseTimes.FIRST_SEEN]).isEqualTo(10);
        assertThat(c[ReuseTimes.REQUESTS]).as("the request without a key is not counted").isEqualTo(1);
    }

    @Test
    void timesBeyondTheLastBound_andLongAfterTheClockWraps_landInTheLastTimeBucket() {
        ReuseTimes t = new ReuseTimes(8);
        AtomicLongArray chat = t.counts("chat");
        t.ended(7, -5 * S); // a monotonic clock may be negative
        t.arrived(chat, 7, 1, 3 * 3600 * S);
        assertThat(t.drain().get("chat")[ReuseTimes.BOUNDS_SECONDS.length]).isEqualTo(1);
        assertThat(ReuseTimes.bucket(0)).isZero();
        assertThat(ReuseTimes.bucket(0.25)).isEqualTo(1);
        assertThat(ReuseTimes.bucket(1e9)).isEqualTo(ReuseTimes.BOUNDS_SECONDS.length);
        assertThatThrownBy(() -> new ReuseTimes(3)).hasMessageContaining("bits: 3 (expected: 4 to 26)");
    }
}
