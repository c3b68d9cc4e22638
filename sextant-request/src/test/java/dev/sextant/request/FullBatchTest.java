package dev.sextant.request;

import static dev.sextant.request.SpacingTest.conversation;
import static dev.sextant.request.SpacingTest.hold;
import static dev.sextant.request.SpacingTest.newKeyOn;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.PriorityScheduling;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A full batch (docs/request-path.md §4, "Spacing new conversations"): a new conversation whose engine's batch is
 * estimated full, by this gateway's requests in flight and the other gateways' as the plan has them, goes to an engine
 * of its key's order with a free place, unless the snapshot's figures say that lengthens the request; its next turns
 * follow it; a conversation placed before keeps its engine.
 */
class FullBatchTest {
    final Fixtures.ManualTicker ticker = new Fixtures.ManualTicker();

    /**
     * e0 with 90% of the class's 10 req/s and a batch of {@code places0}, e1 with 10% and a batch of 8; each planned at
     * {@code latency0} and {@code latency1} ms; {@code othersRps} sent to e0 from other gateways by the plan.
     */
    static Snapshot fleet(double places0, double latency0, double latency1, double othersRps) {
        Fixtures.SnapshotBuilder b = new Fixtures.SnapshotBuilder("g").rtt("c", 1);
        b.engines.put("e0", engine(9 + othersRps, latency0, places0));
        b.engines.put("e1", engine(1, latency1, 8));
        return b.route("k", "m", List.of(), 0, 0, Fixtures.weights(0.9, 0.1)).build();
    }

    static EngineState engine(double loadRps, double latencyMs, double places) {
        return new EngineState("c", "r", "http://c.invalid", List.of("m"), loadRps, 100, 90, loadRps / 100,
                latencyMs, latencyMs, 0, 1, PriorityScheduling.NONE, places);
    }

    DataPlane plane(Snapshot s) {
        return DataPlane.create("g", s, ticker, DataPlaneOptions.defaults());
    }

    @Test
    void aNewConversation_onAFullBatch_goesToAnEngineWithAFreePlace_andItsNextTurnFollows() {
        Snapshot s = fleet(2, 1000, 1000, 0);
        DataPlane p = plane(s);
        List<Decision> held = hold(p, s, "e0", 2, 1); // both of e0's places, conversations placed before
        long fresh = newKeyOn(s, "e0", held.get(1).requestId + 1);

        Decision moved = p.route(conversation(fresh));
        assertThat(moved.engineId()).isEqualTo("e1");
        assertThat(moved.reason()).isEqualTo("spaced:full-batch");
        p.onFinish(moved, Outcome.SUCCESS, 1);
        held.forEach(d -> p.onFinish(d, Outcome.SUCCESS, 1));

        Decision next = p.route(conversation(fresh));
        assertThat(next.engineId()).as("where its cache is, with e0 empty now").isEqualTo("e1");
        assertThat(next.reason()).isEqualTo("recent");
    }

    @Test
    void aBatchWithAPlaceLeft_keepsItsNewConversations() {
        Snapshot s = fleet(3, 1000, 1000, 0);
        DataPlane p = plane(s);
        List<Decision> held = hold(p, s, "e0", 2, 1);
        Decision fresh = p.route(conversation(newKeyOn(s, "e0", held.get(1).requestId + 1)));
        assertThat(fresh.engineId()).as("the third of three places").isEqualTo("e0");
        assertThat(fresh.reason()).isEqualTo("key");
    }

    @Test
    void theOtherGatewaysRequests_asPlanned_fillTheBatchToo() {
        // e0 has 2 places; the plan sends it 0.99 req/s from other gateways for about 1 s each: one of them is there
        Snapshot s = fleet(2, 1000, 1000, 0.99);
        DataPlane p = plane(s);
        List<Decision> held = hold(p, s, "e0", 1, 1);
        Decision fresh = p.route(conversation(newKeyOn(s, "e0", held.get(0).requestId + 1)));
        assertThat(fresh.engineId()).isEqualTo("e1");
        assertThat(fresh.reason()).isEqualTo("spaced:full-batch");
    }

    @Test
    void anEngineSlowerByMoreThanTheWaitForAPlace_isNotGivenIt() {
        // one request beyond e0's 2 places waits about 1,000 / 2 ms for one; e1's request would take 1,000 ms longer
        Snapshot s = fleet(2, 1000, 2000, 0);
        DataPlane p = plane(s);
        List<Decision> held = hold(p, s, "e0", 2, 1);
        Decision fresh = p.route(conversation(newKeyOn(s, "e0", held.get(1).requestId + 1)));
        assertThat(fresh.engineId()).isEqualTo("e0");
        p.onFinish(fresh, Outcome.SUCCESS, 1);

        // with four held, a new one is three beyond the places and would wait about 1,500 ms: e1 is the sooner
        hold(p, s, "e0", 2, fresh.requestId + 1);
        Decision later = p.route(conversation(newKeyOn(s, "e0", fresh.requestId + 1000)));
        assertThat(later.engineId()).isEqualTo("e1");
        assertThat(later.reason()).isEqualTo("spaced:full-batch");
    }

    @Test
    void aBatchTheSnapshotDoesNotKnow_isNeverFull() {
        Snapshot s = fleet(Double.NaN, 1000, 1000, 0);
        DataPlane p = plane(s);
        List<Decision> held = hold(p, s, "e0", 4, 1);
        Decision fresh = p.route(conversation(newKeyOn(s, "e0", held.get(3).requestId + 1)));
        assertThat(fresh.engineId()).isEqualTo("e0");
    }

    @Test
    void aConversationPlacedBefore_keepsItsEngine_onAFullBatch() {
        Snapshot s = fleet(2, 1000, 1000, 0);
        DataPlane p = plane(s);
        long known = newKeyOn(s, "e0", 1);
        p.onFinish(p.route(conversation(known)), Outcome.SUCCESS, 1);
        hold(p, s, "e0", 2, known + 1);

        Decision turn = p.route(conversation(known));
        assertThat(turn.engineId()).as("its cache is there").isEqualTo("e0");
        assertThat(turn.reason()).isEqualTo("key");
    }
}
