package dev.sextant.request;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * With {@code spread_shared_prefixes}, a shared prefix spreads over a few of its engines as its load grows; without
 * (the default) it changes nothing: docs/request-path.md §4.
 */
class PrefixSpreadTest {
    final Fixtures.ManualTicker ticker = new Fixtures.ManualTicker();
    static final long PREFIX = PromptKey.ofMessages("system", "shared", "user", "x").prefix();

    DataPlane plane() {
        return DataPlane.create("g", Fixtures.simple(1, 0, 1, 1, 1, 1, 1, 1), ticker,
                DataPlaneOptions.builder().spreadSharedPrefixes(true).build());
    }

    static RequestMeta request(long conversation) {
        return new RequestMeta("m", List.of(), RequestMeta.NO_PRIORITY, conversation, PREFIX, conversation);
    }

    @Test
    void lowLoad_everyConversationOfAPrefix_onThePrefixsFirstEngine() {
        DataPlane p = plane();
        Set<String> engines = new HashSet<>();
        for (long c = 1; c <= 200; c++) {
            Decision d = p.route(request(c));
            engines.add(d.engineId());
            p.onFinish(d, Outcome.SUCCESS, -1);
        }
        assertThat(engines).hasSize(1);
    }

    @Test
    void growingLoad_spreadsThePrefix_theFirstRequestsStayTogether() {
        DataPlane p = plane();
        List<Decision> held = new ArrayList<>();
        for (long c = 1; c <= 60; c++) {
            held.add(p.route(request(c)));
        }
        assertThat(held.subList(0, 8)).extracting(Decision::engineId).containsOnly(held.get(0).engineId());
        assertThat(new HashSet<>(held.stream().map(Decision::engineId).toList())).hasSizeGreaterThanOrEqualTo(3);
    }

    @Test
    void aPauseBetweenWaves_keepsTheSpread() {
        DataPlane p = plane();
        List<Decision> wave = new ArrayList<>();
        for (int turn = 0; turn < 3; turn++) {
            List<Decision> next = new ArrayList<>();
            for (long c = 1; c <= 40; c++) {
                next.add(p.route(request(c)));
            }
            next.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
            if (turn == 2) { // the spread reached while the first wave came in holds through the pauses
                assertThat(next).extracting(Decision::engineId)
                        .containsExactlyElementsOf(wave.stream().map(Decision::engineId).toList());
            }
            wave = next;
        }
    }

    @Test
    void steadyLoad_aConversationKeepsItsEngine() {
        DataPlane p = plane();
        List<Decision> background = new ArrayList<>();
        for (long c = 1_000; c < 1_040; c++) {
            background.add(p.route(request(c)));
        }
        int kept = 0;
        for (long c = 1; c <= 100; c++) {
            Decision first = p.route(request(c));
            p.onFinish(first, Outcome.SUCCESS, -1);
            Decision later = p.route(request(c));
            p.onFinish(later, Outcome.SUCCESS, -1);
            kept += first.engineId().equals(later.engineId()) ? 1 : 0;
        }
        assertThat(kept).isEqualTo(100);
        assertThat(new HashSet<>(background.stream().map(Decision::engineId).toList())).hasSizeGreaterThan(1);
    }

    @Test
    void finishedRequests_releaseThePrefix_andItsSpreadFallsBack() {
        DataPlane p = plane();
        List<Decision> held = new ArrayList<>();
        for (long c = 1; c <= 60; c++) {
            held.add(p.route(request(c)));
        }
        held.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
        Set<String> engines = new HashSet<>();
        for (long c = 100; c <= 300; c++) {
            ticker.advanceSeconds(PrefixSpread.HOLD_S); // a step down per hold
            Decision d = p.route(request(c));
            if (c > 200) {
                engines.add(d.engineId());
            }
            p.onFinish(d, Outcome.SUCCESS, -1);
        }
        assertThat(engines).hasSize(1);
    }

    @Test
    void aLullShorterThanTheHold_movesNoConversation() {
        DataPlane p = plane();
        List<Decision> wave = new ArrayList<>();
        for (long c = 1; c <= 60; c++) {
            wave.add(p.route(request(c)));
        }
        wave.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
        wave.clear();
        for (long c = 1; c <= 60; c++) { // each conversation's engine at the spread the wave reached, nothing loaded
            Decision d = p.route(request(c));
            p.onFinish(d, Outcome.SUCCESS, -1);
            wave.add(d);
        }
        assertThat(new HashSet<>(wave.stream().map(Decision::engineId).toList())).hasSizeGreaterThanOrEqualTo(3);
        // the same conversations come back one at a time, each just under a hold after the prefix last needed its
        // spread: one in flight would fit on one probe, but the spread holds and none of them moves
        for (long c = 1; c <= 60; c++) {
            ticker.advanceSeconds(PrefixSpread.HOLD_S - 1);
            Decision d = p.route(request(c));
            assertThat(d.engineId()).as("conversation %d", c).isEqualTo(wave.get((int) c - 1).engineId());
            p.onFinish(d, Outcome.SUCCESS, -1);
            // and the load of a wave needs the spread again, which restarts the hold
            List<Decision> peak = new ArrayList<>();
            for (long other = 1_000; other < 1_060; other++) {
                peak.add(p.route(request(other)));
            }
            peak.forEach(x -> p.onFinish(x, Outcome.SUCCESS, -1));
        }
    }

    @Test
    void byDefault_aSharedPrefixChangesNothing_eachConversationGoesByItsOwnKey() {
        DataPlane spread = plane();
        DataPlane plain = DataPlane.create("g", Fixtures.simple(1, 0, 1, 1, 1, 1, 1, 1), ticker,
                DataPlaneOptions.defaults());
        DataPlane keyed = DataPlane.create("g", Fixtures.simple(1, 0, 1, 1, 1, 1, 1, 1), ticker,
                DataPlaneOptions.defaults());
        Set<String> spreadEngines = new HashSet<>();
        for (long c = 1; c <= 200; c++) {
            Decision d = plain.route(request(c));
            Decision own = keyed.route(new RequestMeta("m", List.of(), RequestMeta.NO_PRIORITY, c, 0, c));
            assertThat(d.engineId()).isEqualTo(own.engineId());
            plain.onFinish(d, Outcome.SUCCESS, -1);
            keyed.onFinish(own, Outcome.SUCCESS, -1);
            Decision s = spread.route(request(c));
            spreadEngines.add(s.engineId());
            spread.onFinish(s, Outcome.SUCCESS, -1);
        }
        assertThat(spreadEngines).as("spread, at this load: the prefix's first engine").hasSize(1);
    }

    @Test
    void jump_growingBuckets_movesOnlyKeysToTheNewBucket() {
        for (int s = 1; s < 40; s++) {
            int moved = 0;
            for (long key = 0; key < 20_000; key++) {
                long k = Hashing.mix(key);
                int a = PrefixSpread.jump(k, s);
                int b = PrefixSpread.jump(k, s + 1);
                assertThat(a).isBetween(0, s - 1);
                if (a != b) {
                    assertThat(b).isEqualTo(s);
                    moved++;
                }
            }
            assertThat(moved / 20_000.0).isBetween(0.8 / (s + 1), 1.2 / (s + 1));
        }
    }
}
