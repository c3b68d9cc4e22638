package dev.sextant.request;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Snapshot;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Spacing new conversations (docs/request-path.md §4): a new conversation does not queue behind this gateway's
 * requests on its engine while another engine of its order holds fewer for its share, within the weights and the
 * plan; a conversation already placed keeps its engine; and the count of requests in flight is exact whatever ends an
 * attempt.
 */
class SpacingTest {
    final Fixtures.ManualTicker ticker = new Fixtures.ManualTicker();
    /** Four engines of one weight each. */
    static final Snapshot EVEN = Fixtures.simple(1, 0, 0.25, 0.25, 0.25, 0.25);

    DataPlane plane(Snapshot s) {
        return DataPlane.create("g", s, ticker, DataPlaneOptions.defaults());
    }

    static RequestMeta conversation(long key) {
        return RequestMeta.of("m", key, key);
    }

    /** A key never routed before whose own engine is {@code engine} (found on a plane of its own). */
    static long newKeyOn(Snapshot s, String engine, long from) {
        DataPlane probe = DataPlane.create("g", s, new Fixtures.ManualTicker(),
                DataPlaneOptions.builder().spacePrefills(false).build());
        for (long key = from; ; key++) {
            Decision d = probe.route(conversation(key));
            if (!d.routed()) { // shed by admission
                continue;
            }
            probe.onFinish(d, Outcome.SUCCESS, -1);
            if (d.engineId().equals(engine)) {
                return key;
            }
        }
    }

    /**
     * {@code n} prompts held on {@code engine}, of conversations placed there once before (so that none of them is
     * spaced), keys from {@code from} on.
     */
    static List<Decision> hold(DataPlane p, Snapshot s, String engine, int n, long from) {
        List<Long> keys = new ArrayList<>();
        for (long key = from; keys.size() < n; key = keys.get(keys.size() - 1) + 1) {
            keys.add(newKeyOn(s, engine, key));
        }
        keys.forEach(key -> p.onFinish(p.route(conversation(key)), Outcome.SUCCESS, 1));
        List<Decision> held = new ArrayList<>();
        keys.forEach(key -> held.add(p.route(conversation(key))));
        assertThat(held).extracting(Decision::engineId).containsOnly(engine);
        return held;
    }

    @Test
    void aNewConversation_behindAPromptOnItsEngine_goesToAnEngineWithNone_andStaysThere() {
        DataPlane p = plane(EVEN);
        long held = newKeyOn(EVEN, "e0", 1);
        long fresh = newKeyOn(EVEN, "e0", held + 1);
        Decision prompt = p.route(conversation(held));
        assertThat(prompt.engineId()).isEqualTo("e0");

        Decision moved = p.route(conversation(fresh));
        assertThat(moved.engineId()).isNotEqualTo("e0");
        assertThat(moved.reason()).isEqualTo("spaced:prefill");
        p.onFinish(moved, Outcome.SUCCESS, 1);
        p.onFinish(prompt, Outcome.SUCCESS, 1);

        // its next turn goes where its cache is, with nothing held anywhere
        Decision next = p.route(conversation(fresh));
        assertThat(next.engineId()).isEqualTo(moved.engineId());
        assertThat(next.reason()).isEqualTo("recent");
    }

    @Test
    void aConversationMovedBefore_findsItsEngine_whenANewSnapshotGivesTheEnginesOtherPlaces() {
        // e0 leaves the class's table: every engine after it takes the place before
        Snapshot without = Fixtures.simple(2, 0, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3);
        long held = newKeyOn(EVEN, "e0", 1);
        for (long fresh = held + 1; ; fresh++) {
            fresh = newKeyOn(EVEN, "e0", fresh);
            DataPlane p = plane(EVEN);
            Decision prompt = p.route(conversation(held));
            Decision moved = p.route(conversation(fresh));
            assertThat(moved.reason()).isEqualTo("spaced:prefill");
            if (newKeyOn(without, moved.engineId(), fresh) == fresh) {
                continue; // its key's order without e0 would send it there anyway: no test of the table
            }
            p.onFinish(moved, Outcome.SUCCESS, 1);
            p.onFinish(prompt, Outcome.SUCCESS, 1);
            assertThat(p.swap(without)).isTrue();

            Decision next = p.route(conversation(fresh));
            assertThat(next.engineId()).as("where its cache is, not its key's own engine").isEqualTo(moved.engineId());
            assertThat(next.reason()).isEqualTo("recent");
            return;
        }
    }

    @Test
    void aConversationPushedOutOfTheTable_isNewAgain_andFollowsItsKeysOrder() {
        DataPlane p = DataPlane.create("g", EVEN, ticker, DataPlaneOptions.builder().recentKeys(1024).build());
        long held = newKeyOn(EVEN, "e0", 1);
        long fresh = newKeyOn(EVEN, "e0", held + 1);
        Decision prompt = p.route(conversation(held));
        Decision moved = p.route(conversation(fresh));
        assertThat(moved.reason()).isEqualTo("spaced:prefill");
        p.onFinish(moved, Outcome.SUCCESS, 1);
        p.onFinish(prompt, Outcome.SUCCESS, 1);

        long other = 1L << 32; // another conversation whose key takes the same slot of the 1,024
        while (slotOf(other) != slotOf(fresh)) {
            other++;
        }
        p.onFinish(p.route(conversation(other)), Outcome.SUCCESS, 1);

        Decision next = p.route(conversation(fresh));
        assertThat(next.engineId()).as("its key's own engine, as before the table").isEqualTo("e0");
        assertThat(next.reason()).isEqualTo("key");
    }

    private static long slotOf(long key) {
        return Hashing.mix(key ^ Hashing.RECENT_SALT) & 1023;
    }

    @Test
    void aRequestPastItsFirstToken_stillCounts_untilItsAnswerEnds() {
        DataPlane p = plane(EVEN);
        long held = newKeyOn(EVEN, "e0", 1);
        Decision decoding = p.route(conversation(held));
        p.onFirstToken(decoding, DataPlane.NOT_STREAMED); // decoding: it still takes its part of the engine's batch

        long second = newKeyOn(EVEN, "e0", held + 1);
        assertThat(p.route(conversation(second)).engineId()).as("spaced while the other runs").isNotEqualTo("e0");
        p.onFinish(decoding, Outcome.SUCCESS, 1);
        Decision fresh = p.route(conversation(newKeyOn(EVEN, "e0", second + 1)));
        assertThat(fresh.engineId()).as("nothing in flight there now").isEqualTo("e0");
        assertThat(fresh.reason()).isEqualTo("key");
    }

    @Test
    void aConversationPlacedBefore_keepsItsEngine_behindPrompts() {
        DataPlane p = plane(EVEN);
        long known = newKeyOn(EVEN, "e0", 1);
        p.onFinish(p.route(conversation(known)), Outcome.SUCCESS, 1);
        hold(p, EVEN, "e0", 3, known + 1);
        assertThat(p.inFlight("e0")).isEqualTo(3);

        Decision turn = p.route(conversation(known));
        assertThat(turn.engineId()).as("its cache is there").isEqualTo("e0");
        assertThat(turn.reason()).isEqualTo("key");
    }

    @Test
    void anEngineHoldingNoMoreThanItsWeightsShare_keepsNewConversations() {
        Snapshot s = Fixtures.simple(1, 0, 0.9, 0.05, 0.05);
        DataPlane p = plane(s);
        List<Decision> held = hold(p, s, "e0", 5, 1);
        Decision fresh = p.route(conversation(newKeyOn(s, "e0", held.get(4).requestId + 1)));
        assertThat(fresh.engineId()).as("6 in flight is within ⌈90% × 6⌉").isEqualTo("e0");
    }

    @Test
    void anEngineHoldingMoreThanItsShare_spacesANewConversation_withinBoundedLoadsSlack() {
        // three in flight on e0 with its share 60%: ⌈1.8⌉ = 2 is its share, bounded load's ⌈1.25 × 1.8⌉ = 3 would keep it
        Snapshot s = Fixtures.simple(1, 0, 0.6, 0.4);
        DataPlane p = plane(s);
        List<Decision> held = hold(p, s, "e0", 2, 1);
        Decision fresh = p.route(conversation(newKeyOn(s, "e0", held.get(1).requestId + 1)));
        assertThat(fresh.engineId()).isEqualTo("e1");
        assertThat(fresh.reason()).isEqualTo("spaced:prefill");
    }

    @Test
    void noNewConversation_isSpacedOntoAnEngineThatFailedARequest_untilTheBaseEjectionTimeHasPassed() {
        DataPlane p = plane(EVEN);
        Decision failing = p.route(conversation(newKeyOn(EVEN, "e1", 1)));
        p.onFinish(failing, Outcome.SERVER_ERROR, DataPlane.NO_TOKEN_YET);
        Decision prompt = p.route(conversation(newKeyOn(EVEN, "e0", 1)));
        assertThat(prompt.engineId()).isEqualTo("e0");

        long key = prompt.requestId;
        List<String> within = new ArrayList<>();
        List<String> after = new ArrayList<>();
        for (List<String> to : List.of(within, after)) {
            for (int i = 0; i < 20; i++) {
                key = newKeyOn(EVEN, "e0", key + 1);
                Decision d = p.route(conversation(key));
                to.add(d.engineId());
                p.onFinish(d, Outcome.SUCCESS, 1);
            }
            ticker.advanceSeconds(DataPlaneOptions.defaults().ejectionBase().toSeconds());
        }
        assertThat(within).as("spaced, but never onto e1").contains("e2", "e3").doesNotContain("e0", "e1");
        assertThat(after).as("e1's failure is past").contains("e1").doesNotContain("e0");
    }

    @Test
    void anEngineWhoseWeightDoesNotCoverANewPrompt_isNotGivenIt() {
        // e0 holds three prompts (over its share of four), e1 is ejected, and e2's weight is a tenth of e0's: one
        // prompt there is more per unit of weight than four on e0
        Snapshot s = Fixtures.simple(1, 0, 0.45, 0.45, 0.1);
        DataPlane p = plane(s);
        long onE1 = newKeyOn(s, "e1", 1);
        for (int i = 0; i < 5; i++) {
            p.onFinish(p.route(conversation(onE1)), Outcome.SERVER_ERROR, -1);
        }
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactly("e1");
        List<Decision> held = hold(p, s, "e0", 3, onE1 + 1);
        Decision fresh = p.route(conversation(newKeyOn(s, "e0", held.get(2).requestId + 1)));
        assertThat(fresh.engineId()).isEqualTo("e0");
    }

    /**
     * Beyond the plan: four engines of 100 req/s (90 effective), each planned at 50 ms; the class sends 10 req/s from
     * this gateway, a quarter to each. e0 is filled by other gateways (no spare capacity: its allowance is this
     * gateway's 2.5 req/s) and runs 64 places; e1 to e3 have {@code othersRps} each from other gateways beside it, and
     * {@code places} places (in flight there by the plan: othersRps × 50 ms).
     */
    static Snapshot beyondThePlan(double places, double othersRps, double shed) {
        Fixtures.SnapshotBuilder b = new Fixtures.SnapshotBuilder("g").rtt("c", 1);
        b.engines.put("e0", FullBatchTest.engine(90, 50, 64));
        for (int i = 1; i < 4; i++) {
            b.engines.put("e" + i, FullBatchTest.engine(2.5 + othersRps, 50, places));
        }
        return b.route("k", "m", List.of(), 0, shed, Fixtures.weights(0.25, 0.25, 0.25, 0.25)).build();
    }

    /**
     * e0 offered 10 req/s (20 keys in the 2-s window, beyond its 2.5), its answers' first tokens 1 ms and then, if
     * {@code queue}, 100 ms (a queue), and holding one prompt: where a new key of it goes.
     */
    Decision newConversationBeyondThePlan(Snapshot s, boolean queue) {
        DataPlane p = plane(s);
        long key = 1;
        for (int i = 0; i < 20; i++) {
            key = newKeyOn(s, "e0", key) + 1;
            long ttftMs = queue && i >= 10 ? 100 : 1;
            p.onFinish(p.route(conversation(key - 1)), Outcome.SUCCESS, ttftMs * 1_000_000L);
        }
        Decision prompt = p.route(conversation(newKeyOn(s, "e0", key)));
        assertThat(prompt.engineId()).isEqualTo("e0");
        return p.route(conversation(newKeyOn(s, "e0", prompt.requestId + 1)));
    }

    @Test
    void beyondThePlan_aNewConversation_behindAQueue_goesToAnEngineWithinItsAllowance_withAFreePlace() {
        Decision fresh = newConversationBeyondThePlan(beyondThePlan(8, 0, 0), true);
        assertThat(fresh.engineId()).isNotEqualTo("e0");
        assertThat(fresh.reason()).isEqualTo("spaced:prefill");
    }

    @Test
    void beyondThePlan_aNewConversation_staysWhileItsEnginesAnswersShowNoQueue() {
        // offered beyond the allowance but answering as fast as ever: the rate alone is no evidence of a queue (an
        // engine rated too high elsewhere would take what this one can still serve)
        Decision fresh = newConversationBeyondThePlan(beyondThePlan(8, 0, 0), false);
        assertThat(fresh.engineId()).isEqualTo("e0");
    }

    @Test
    void beyondThePlan_aNewConversation_staysWhereTheOthersBatchesAreFull() {
        // 80 req/s from the others × 51 ms (the round trip included) is about 4 in flight on each of e1 to e3 by the
        // plan: their 4 places are taken, though each is offered less than its allowance of 10 req/s
        Decision fresh = newConversationBeyondThePlan(beyondThePlan(4, 80, 0), true);
        assertThat(fresh.engineId()).isEqualTo("e0");
    }

    @Test
    void beyondThePlan_aNewConversation_staysWhereTheOthersBatchesAreUnknown() {
        Decision fresh = newConversationBeyondThePlan(beyondThePlan(Double.NaN, 0, 0), true);
        assertThat(fresh.engineId()).isEqualTo("e0");
    }

    @Test
    void beyondThePlan_aNewConversation_staysWhileThePlanSheds() {
        // the fleet is short: the spill and the shedding handle it, spacing would spread the queue they read
        Decision fresh = newConversationBeyondThePlan(beyondThePlan(8, 0, 0.1), true);
        assertThat(fresh.engineId()).isEqualTo("e0");
    }

    @Test
    void anEngineOfferedMoreThanItsAllowance_keepsItsNewConversations_whereNoOtherHasRoom() {
        // no spare capacity anywhere: each engine may take only what the policy sends it, 2.5 req/s of 10
        Fixtures.SnapshotBuilder b = new Fixtures.SnapshotBuilder("g").rtt("c", 1);
        for (int i = 0; i < 4; i++) {
            b.engines.put("e" + i, new EngineState("c", "r", "http://c.invalid", List.of("m"), 90, 100, 90, 0.9,
                    100, 100, 0, 1));
        }
        Snapshot s = b.route("k", "m", List.of(), 0, 0, Fixtures.weights(0.25, 0.25, 0.25, 0.25)).build();
        DataPlane p = plane(s);
        long key = 1;
        for (int i = 0; i < 6; i++) { // 6 in the 2 s window: 3 req/s chose e0
            key = newKeyOn(s, "e0", key) + 1;
            Decision d = p.route(conversation(key - 1));
            p.onFinish(d, Outcome.SUCCESS, 1);
        }
        Decision prompt = p.route(conversation(newKeyOn(s, "e0", key)));
        assertThat(prompt.engineId()).isEqualTo("e0");
        Decision fresh = p.route(conversation(newKeyOn(s, "e0", prompt.requestId + 1)));
        assertThat(fresh.engineId()).isEqualTo("e0");
    }

    @Test
    void spacingOff_aNewConversationWaitsOnItsEngine() {
        DataPlane p = DataPlane.create("g", EVEN, ticker, DataPlaneOptions.builder().spacePrefills(false).build());
        long held = newKeyOn(EVEN, "e0", 1);
        p.route(conversation(held));
        assertThat(p.route(conversation(newKeyOn(EVEN, "e0", held + 1))).engineId()).isEqualTo("e0");
    }

    @Test
    void everyEndOfAnAttempt_countsItOutOfFlightOnce_whateverCameBefore() {
        DataPlane p = plane(EVEN);
        List<Decision> open = new ArrayList<>();
        for (long key = 1; key <= 40; key++) {
            open.add(p.route(conversation(key)));
        }
        assertThat(sum(p, DataPlane::inFlight)).isEqualTo(40);
        for (int i = 0; i < open.size(); i++) {
            Decision d = open.get(i);
            switch (i % 4) {
                case 0 -> { // first token, then a complete answer; a late duplicate of either changes nothing
                    p.onFirstToken(d, DataPlane.NOT_STREAMED);
                    p.onFirstToken(d, DataPlane.NOT_STREAMED);
                    p.onFinish(d, Outcome.SUCCESS, 1);
                    p.onFirstToken(d, DataPlane.NOT_STREAMED);
                }
                case 1 -> p.onFinish(d, Outcome.TIMEOUT, -1); // no token ever
                case 2 -> { // no connection, retried elsewhere, answered there
                    Decision again = p.retry(d, Outcome.CONNECT_ERROR);
                    assertThat(again.routed()).isTrue();
                    p.onFirstToken(again, DataPlane.NOT_STREAMED);
                    p.onFinish(again, Outcome.SUCCESS, 1);
                }
                default -> {
                    p.onFirstToken(d, DataPlane.NOT_STREAMED);
                    p.onFinish(d, Outcome.CANCELLED, 1);
                }
            }
        }
        assertThat(sum(p, DataPlane::inFlight)).isZero();
    }

    /** {@code s} with every engine's cache keeping a context {@code seconds} after its conversation's last request. */
    static Snapshot keeping(Snapshot s, double seconds) {
        java.util.Map<String, EngineState> engines = new java.util.LinkedHashMap<>();
        s.engines().forEach((id, e) -> engines.put(id, e.withContextKeptSeconds(seconds)));
        return s.withEngines(engines);
    }

    /**
     * Where a conversation placed on e0 before comes back {@code awaySeconds} after its answer, while a prompt of
     * another conversation is held on e0, on a plane reading the last ends from {@code lastEnds} (null: none).
     */
    Decision comesBack(Snapshot s, ReuseTimes lastEnds, double awaySeconds) {
        DataPlane p = DataPlane.create("g", s, ticker, DataPlaneOptions.defaults(), java.time.Duration.ZERO, lastEnds);
        long held = newKeyOn(s, "e0", 1);
        long back = newKeyOn(s, "e0", held + 1);
        Decision first = p.route(conversation(back));
        assertThat(first.engineId()).isEqualTo("e0");
        p.onFinish(first, Outcome.SUCCESS, 1);
        if (lastEnds != null) {
            lastEnds.ended(back, ticker.nanos());
        }
        ticker.advanceSeconds(awaySeconds);
        assertThat(p.route(conversation(held)).engineId()).isEqualTo("e0");
        return p.route(conversation(back));
    }

    @Test
    void aConversationAwayMoreThanTwiceItsEnginesCacheKeepsAContext_isSpacedAsANewOne() {
        Decision d = comesBack(keeping(EVEN, 10), new ReuseTimes(8), 21);
        assertThat(d.engineId()).as("nothing cached on e0 to lose").isNotEqualTo("e0");
        assertThat(d.reason()).isEqualTo("spaced:prefill");
    }

    @Test
    void aConversationBackWithinTwiceItsEnginesKeepingTime_orWithoutOneToGoBy_keepsItsEngine() {
        assertThat(comesBack(keeping(EVEN, 10), new ReuseTimes(8), 19).engineId())
                .as("back past the time, within twice it: some such contexts are still there").isEqualTo("e0");
        assertThat(comesBack(EVEN, new ReuseTimes(8), 1_000).engineId()).as("a snapshot without the time")
                .isEqualTo("e0");
        assertThat(comesBack(keeping(EVEN, 10), null, 1_000).engineId()).as("a plane without the last ends")
                .isEqualTo("e0");
    }

    private interface PerEngine {
        int count(DataPlane p, String engine);
    }

    private static int sum(DataPlane p, PerEngine f) {
        int total = 0;
        for (int e = 0; e < 4; e++) {
            total += f.count(p, "e" + e);
        }
        return total;
    }
}
