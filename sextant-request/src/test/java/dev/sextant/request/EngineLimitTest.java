package dev.sextant.request;

import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The per-engine limit derived from the snapshot: the priorities below the highest may fill an engine with a few times
 * what it holds from this gateway at its allowance, so that what a surge the control plane has not seen yet queues ahead
 * of the highest priority is about one batch; the highest has the fixed limit.
 */
class EngineLimitTest {
    final Fixtures.ManualTicker ticker = new Fixtures.ManualTicker();

    /**
     * Two engines planned {@code loadRps} each from this gateway (the classes' demand split evenly), of effective
     * capacity {@code effective} req/s and {@code latencyMs} at the planned load, 1 ms away. Class i of
     * {@code classes} has priority i.
     */
    static Snapshot fleet(long version, double loadRps, double effective, double latencyMs, String... classes) {
        Fixtures.SnapshotBuilder b = new Fixtures.SnapshotBuilder("g").version(version).rtt("c", 1);
        for (String id : List.of("e0", "e1")) {
            b.engines.put(id, new EngineState("c", "r", "http://" + id + ".invalid", List.of("m"), loadRps,
                    effective / 0.9, effective, loadRps / effective, latencyMs, latencyMs, 0, 1));
        }
        Map<String, Double> w = Map.of("e0", 0.5, "e1", 0.5);
        for (int p = 0; p < classes.length; p++) {
            b.routes.put(classes[p], new Route("m", List.of(), p, 2 * loadRps / classes.length, w, 0, Double.NaN));
        }
        return b.build();
    }

    static Snapshot fleet(long version, double loadRps, double effective, double latencyMs) {
        return fleet(version, loadRps, effective, latencyMs, "low", "high");
    }

    /** Twice what an engine holds (the numbers below are easier to follow than with the default three times). */
    static DataPlaneOptions.Builder twice() {
        return DataPlaneOptions.builder().inFlightPerCapacity(2);
    }

    /** No priority reserve: the lower priority may fill the whole derived limit. */
    static DataPlaneOptions.Builder noReserve() {
        return twice().priorityReserve(0);
    }

    /** Routes requests of priority {@code priority} until the first refusal; the number admitted. */
    static int fill(DataPlane p, int priority, List<Decision> held) {
        for (int i = 0; i < 10_000; i++) {
            Decision d = p.route(new RequestMeta("m", List.of(), priority, 1_000_000L * priority + i, i));
            if (!d.routed()) {
                assertThat(d.refusal()).isEqualTo(Refusal.ENGINE_LIMIT);
                return i;
            }
            held.add(d);
        }
        throw new AssertionError("never refused");
    }

    @Test
    void lowerPriority_mayFillTwiceWhatTheEngineHoldsAtItsAllowance_theHighestTheFixedLimit() {
        // planned 10 req/s on each, 40 effective: an allowance of 10 + 30 spare = 40 req/s; 99 + 1 ms in flight:
        // 4 held at the allowance, so 8 allowed
        DataPlane p = DataPlane.create("g", fleet(1, 10, 40, 99), ticker,
                noReserve().maxInFlightPerEngine(30).build());
        List<Decision> held = new ArrayList<>();
        assertThat(fill(p, 0, held)).isEqualTo(16);
        assertThat(p.inFlight("e0")).isEqualTo(8);
        assertThat(p.inFlight("e1")).isEqualTo(8);
        Decision refused = p.route(new RequestMeta("m", List.of(), 0, 99, 99));
        assertThat(refused.message()).contains("8 on e0", "8 on e1", "2 × what it holds at its planned capacity",
                "at most 30");
        assertThat(refused.retryAfterNanos()).isPositive();
        // the highest priority still has room, up to the fixed limit; the lower one counts it too (an engine's
        // requests in flight are one count), so none of it fits while the highest fills the engines
        List<Decision> high = new ArrayList<>();
        assertThat(fill(p, 1, high)).isEqualTo(2 * (30 - 8));
        assertThat(p.route(new RequestMeta("m", List.of(), 1, 8, 8)).message())
                .as("the highest's refusal names the fixed limit, not the derived one")
                .contains("30 on e0", "max_in_flight_per_engine 30").doesNotContain("× what it holds");
        p.onFinish(held.get(0), Outcome.SUCCESS, -1);
        assertThat(p.route(new RequestMeta("m", List.of(), 0, 7, 7)).refusal()).isEqualTo(Refusal.ENGINE_LIMIT);

        // the highest's requests finish: room for one more of the lower priority, where one of it finished
        high.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
        Decision next = p.route(new RequestMeta("m", List.of(), 0, 7, 7));
        assertThat(next.engineId()).isEqualTo(held.get(0).engineId());
    }

    @Test
    void byDefault_threeTimesWhatTheEngineHolds() {
        // 4 held at the allowance (as below), 12 allowed of the lower priority, 9 with the default reserve
        DataPlane p = DataPlane.create("g", fleet(1, 10, 40, 99), ticker, DataPlaneOptions.defaults());
        assertThat(fill(p, 0, new ArrayList<>())).isEqualTo(2 * 9);
    }

    @Test
    void limit_followsEachSnapshot() {
        DataPlane p = DataPlane.create("g", fleet(1, 10, 40, 99), ticker, noReserve().build());
        List<Decision> held = new ArrayList<>();
        assertThat(fill(p, 0, held)).isEqualTo(16);
        // the control plane finds twice the capacity: the same engines hold twice as many
        assertThat(p.swap(fleet(2, 10, 80, 99))).isTrue();
        assertThat(fill(p, 0, held) + 16).isEqualTo(32);
        assertThat(p.inFlight("e0")).isEqualTo(16);
    }

    @Test
    void limit_neverBelowTwo_neverAboveTheFixedOne() {
        // 1 req/s of capacity and 10 ms: a hundredth of a request held; still two allowed
        DataPlane small = DataPlane.create("g", fleet(1, 0.5, 1, 9), ticker, noReserve().build());
        assertThat(fill(small, 0, new ArrayList<>())).isEqualTo(2 * DataPlaneOptions.MIN_DERIVED_LIMIT);
        // 1,000 req/s for 10 s: 20,000 by the rule, 50 by the fixed limit
        DataPlane big = DataPlane.create("g", fleet(1, 100, 1_000, 9_999), ticker,
                noReserve().maxInFlightPerEngine(50).build());
        assertThat(fill(big, 0, new ArrayList<>())).isEqualTo(100);
    }

    @Test
    void engineWithoutAFiniteCapacity_orTheRuleOff_hasTheFixedLimit() {
        DataPlane unrated = DataPlane.create("g", fleet(1, 10, Double.POSITIVE_INFINITY, 99), ticker,
                noReserve().maxInFlightPerEngine(30).build());
        assertThat(fill(unrated, 0, new ArrayList<>())).isEqualTo(60);
        DataPlane off = DataPlane.create("g", fleet(1, 10, 40, 99), ticker,
                noReserve().maxInFlightPerEngine(30).inFlightPerCapacity(Double.POSITIVE_INFINITY).build());
        assertThat(fill(off, 0, new ArrayList<>())).isEqualTo(60);
    }

    @Test
    void onePriorityOnly_isTheHighest_andHasTheFixedLimit() {
        DataPlane p = DataPlane.create("g", fleet(1, 10, 40, 99, "k"), ticker,
                DataPlaneOptions.builder().maxInFlightPerEngine(30).build());
        assertThat(fill(p, 0, new ArrayList<>())).isEqualTo(60);
    }

    /**
     * A gateway serving a lower-priority class of one model and a higher-priority class of another: the engines of the
     * first serve no request of the second, so the lower class is the highest there and has the fixed limit; nothing
     * there is kept for a priority that cannot be sent there.
     */
    @Test
    void onEnginesNoHigherPriorityMayUse_aLowerPriorityHasTheFixedLimit() {
        Fixtures.SnapshotBuilder b = new Fixtures.SnapshotBuilder("g").version(1).rtt("c", 1);
        for (String id : List.of("e0", "e1")) {
            b.engines.put(id, new EngineState("c", "r", "http://" + id + ".invalid", List.of("m"), 10, 40 / 0.9, 40,
                    0.25, 99, 99, 0, 1));
        }
        b.engines.put("f0", new EngineState("c", "r", "http://f0.invalid", List.of("m2"), 10, 40 / 0.9, 40, 0.25, 99,
                99, 0, 1));
        b.routes.put("low", new Route("m", List.of(), 0, 20, Map.of("e0", 0.5, "e1", 0.5), 0, Double.NaN));
        b.routes.put("high", new Route("m2", List.of(), 1, 10, Map.of("f0", 1.0), 0, Double.NaN));
        DataPlane p = DataPlane.create("g", b.build(), ticker, twice().maxInFlightPerEngine(30).build());
        List<Decision> held = new ArrayList<>();
        assertThat(fill(p, 0, held)).as("the fixed limit on e0 and e1, not twice what each holds (8)")
                .isEqualTo(2 * 30);
        Decision refused = p.route(new RequestMeta("m", List.of(), 0, 99, 99));
        assertThat(refused.message()).contains("30 on e0", "max_in_flight_per_engine 30");

        // the same classes on the same engines: the lower one leaves room for the higher
        DataPlane shared = DataPlane.create("g", fleet(1, 10, 40, 99), ticker,
                twice().maxInFlightPerEngine(30).build());
        assertThat(fill(shared, 0, new ArrayList<>())).isEqualTo(2 * 6);
    }

    @Test
    void withTheDefaultReserve_eachLowerPriorityLeavesRoomForTheOneAbove() {
        // a limit of 8 (reserve 0.25, three priorities): ⌊8 × 0.75⌋ = 6 for low, ⌊8 × 0.875⌋ = 7 for normal
        DataPlane p = DataPlane.create("g", fleet(1, 10, 40, 99, "low", "normal", "high"), ticker,
                twice().maxInFlightPerEngine(20).build());
        List<Decision> held = new ArrayList<>();
        assertThat(fill(p, 0, held)).isEqualTo(12);
        assertThat(fill(p, 1, held)).isEqualTo(2);
        assertThat(fill(p, 2, held)).isEqualTo(2 * (20 - 7));

        // a limit of 2: rounded down, the lower ones get 1 each, never all of it
        DataPlane small = DataPlane.create("g", fleet(1, 5, 10, 99, "low", "normal", "high"), ticker,
                twice().build());
        List<Decision> more = new ArrayList<>();
        assertThat(fill(small, 0, more)).isEqualTo(2);
        assertThat(fill(small, 1, more)).isZero();
    }
}
