package dev.sextant.request;

import dev.sextant.snapshot.RetryBudget;
import dev.sextant.snapshot.SlotTable;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.PriorityScheduling;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.TreeMap;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.offset;

class DataPlaneTest {
    final Fixtures.ManualTicker ticker = new Fixtures.ManualTicker();

    DataPlane plane(Snapshot s) {
        return DataPlane.create("g", s, ticker, DataPlaneOptions.defaults());
    }

    /**
     * A plane without spacing (docs/request-path.md §4): every key's new conversation would otherwise move off an
     * engine holding more than its share, and what is tested is bounded load's bound alone.
     */
    DataPlane unspaced(Snapshot s) {
        return DataPlane.create("g", s, ticker, DataPlaneOptions.builder().spacePrefills(false).build());
    }

    /**
     * A data plane whose per-engine limit is the fixed one alone: for the tests whose requests never finish, so that
     * hundreds stay in flight on engines that would hold a few dozen at their capacity; what they test (bounded
     * load, spill, outliers) acts before any limit would. The derived limit is tested in {@link EngineLimitTest}.
     */
    DataPlane fixedLimit(Snapshot s) {
        return DataPlane.create("g", s, ticker, DataPlaneOptions.builder()
                .inFlightPerCapacity(Double.POSITIVE_INFINITY).build());
    }

    // ------------------------------------------------------------------ affinity

    @Test
    void route_sameKey_sameEngineInTwoIndependentInstances() {
        Snapshot s = Fixtures.simple(1, 0, 0.1, 0.2, 0.3, 0.4);
        Snapshot s2 = Fixtures.simple(2, 0, 0.4, 0.3, 0.2, 0.1);
        DataPlane a = plane(s);
        DataPlane b = DataPlane.create("g", s, new Fixtures.ManualTicker(),
                DataPlaneOptions.builder().seed(99).build());
        SplittableRandom rnd = new SplittableRandom(1);
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < 10_000; i++) {
                long key = rnd.nextLong();
                Decision da = a.route(RequestMeta.of("m", key, rnd.nextLong()));
                Decision db = b.route(RequestMeta.of("m", key, rnd.nextLong()));
                Decision again = a.route(RequestMeta.of("m", key, rnd.nextLong()));
                assertThat(db.engineId()).isEqualTo(da.engineId());
                assertThat(again.engineId()).isEqualTo(da.engineId());
                a.onFinish(da, Outcome.SUCCESS, -1);
                a.onFinish(again, Outcome.SUCCESS, -1);
                b.onFinish(db, Outcome.SUCCESS, -1);
            }
            a.swap(s2);
            b.swap(s2);
        }
    }

    @Test
    void route_followsTheSlotTableOfTheSnapshotWeights() {
        DataPlane p = plane(Fixtures.simple(1, 0, 0.25, 0.75));
        SlotTable t = SlotTable.of(List.of("e0", "e1"), new double[] {0.25, 0.75});
        for (long key = 0; key < 1000; key++) {
            Decision d = p.route(RequestMeta.of("m", key, key));
            assertThat(d.engineId()).isEqualTo(t.engineIds().get(t.first(key)));
            p.onFinish(d, Outcome.SUCCESS, -1);
        }
    }

    // ------------------------------------------------------------------ admission

    @Test
    void route_shedFraction_refusesExactlyThatFractionDeterministically() {
        DataPlane p = plane(Fixtures.simple(1, 0.3, 0.35, 0.35));
        int n = 200_000;
        int shed = 0;
        SplittableRandom rnd = new SplittableRandom(2);
        for (int i = 0; i < n; i++) {
            long id = rnd.nextLong();
            Decision d = p.route(RequestMeta.of("m", id, id));
            if (d.routed()) {
                p.onFinish(d, Outcome.SUCCESS, -1);
            } else {
                assertThat(d.refusal()).isEqualTo(Refusal.SHED);
                assertThat(d.refusal().status()).isEqualTo(429);
                assertThat(d.retryAfterNanos()).isEqualTo(Duration.ofSeconds(1).toNanos());
                shed++;
            }
            Decision again = p.route(RequestMeta.of("m", 5, id));
            assertThat(again.routed()).isEqualTo(d.routed()); // same id, same answer
            p.onFinish(again, Outcome.SUCCESS, -1);
        }
        assertThat(shed / (double) n).isCloseTo(0.3, offset(0.005));
    }

    @Test
    void route_sheddingDoesNotSkewEngineShares() {
        DataPlane p = plane(Fixtures.simple(1, 0.5, 0.1, 0.4));
        int[] hits = new int[2];
        SplittableRandom rnd = new SplittableRandom(3);
        for (int i = 0; i < 100_000; i++) {
            long id = rnd.nextLong();
            Decision d = p.route(RequestMeta.of("m", id, id)); // no affinity key: keyed by the request id
            if (d.routed()) {
                hits[d.engineId().equals("e0") ? 0 : 1]++;
                p.onFinish(d, Outcome.SUCCESS, -1);
            }
        }
        assertThat(hits[0] / (double) (hits[0] + hits[1])).isCloseTo(0.2, offset(0.01));
    }

    @Test
    void decision_carriesTheClassPriorityAsEachEngineOrdersIt_andNoneToAFirstComeFirstServedEngine() {
        Fixtures.SnapshotBuilder b = new Fixtures.SnapshotBuilder("g").rtt("c", 1);
        PriorityScheduling[] kinds = {PriorityScheduling.LOWER_FIRST, PriorityScheduling.HIGHER_FIRST,
                PriorityScheduling.NONE};
        for (int i = 0; i < kinds.length; i++) {
            b.engines.put("e" + i, new dev.sextant.snapshot.EngineState("c", "r", "http://e" + i + ".invalid",
                    List.of("m"), 10, 100, 90, 0.1, 100, 100, 0, 1, kinds[i]));
        }
        Snapshot s = b.route("low", "m", List.of(), 0, 0, Fixtures.weights(1, 1, 1))
                .route("high", "m", List.of(), 3, 0, Fixtures.weights(1, 1, 1)).build();
        DataPlane p = plane(s);

        Map<String, Integer> seen = new java.util.TreeMap<>();
        for (int key = 0; key < 300 && seen.size() < 6; key++) {
            for (int priority : new int[] {0, 3}) {
                Decision d = p.route(new RequestMeta("m", List.of(), priority, key, 10L * key + priority));
                seen.put(d.engineId() + "/" + d.classId(), d.enginePriority());
                p.onFinish(d, Outcome.SUCCESS, 1_000_000);
            }
        }

        assertThat(seen).containsExactlyInAnyOrderEntriesOf(Map.of(
                "e0/low", 0, "e0/high", -3, // vLLM: lower first, so the higher class is sent lower
                "e1/low", 0, "e1/high", 3,
                "e2/low", Decision.NO_ENGINE_PRIORITY, "e2/high", Decision.NO_ENGINE_PRIORITY));
        Decision shed = plane(Fixtures.simple(2, 1.0, 1.0)).route(RequestMeta.of("m", 1, 1));
        assertThat(shed.enginePriority()).isEqualTo(Decision.NO_ENGINE_PRIORITY);
    }

    @Test
    void route_everyAllowedEngineOutOfService_isAn503OutageNamingThem_notA429() {
        Fixtures.SnapshotBuilder b = new Fixtures.SnapshotBuilder("g").rtt("eu", 2).rtt("us", 80);
        for (String id : List.of("eu-1", "eu-2")) { // down: no capacity in the snapshot, so the policy sheds it all
            b.engines.put(id, new dev.sextant.snapshot.EngineState("eu", "eu-west", "http://" + id + ".invalid",
                    List.of("m"), 0, 100, 0, 0, 100, 100, 0, 1));
        }
        b.engine("us-1", "us", "us-east", 100, "m"); // in service, but outside the class's residency
        Snapshot s = b.route("k", "m", List.of("eu-west"), 0, 1.0, Map.of()).build();
        Decision d = plane(s).route(new RequestMeta("m", List.of(), RequestMeta.NO_PRIORITY, 1, 1));

        assertThat(d.refusal()).isEqualTo(Refusal.NO_ENGINE_IN_SERVICE);
        assertThat(d.refusal().status()).isEqualTo(503);
        assertThat(d.message()).contains("no engine in service", "eu-1", "eu-2").doesNotContain("us-1");
        assertThat(d.retryAfterNanos()).isPositive();

        // some engine in service, the rest of the demand over capacity: that is an overload (429)
        Snapshot busy = Fixtures.simple(2, 1.0, 1.0);
        assertThat(plane(busy).route(RequestMeta.of("m", 1, 1)).refusal()).isEqualTo(Refusal.SHED);
    }

    @Test
    void route_everyWeightedEngineAtItsLimit_spillsToAnAllowedEngineWithRoom_thenRefuses() {
        // the class is weighted on n1..n3, allowed on m1..m3 too: a full route is not a full class
        DataPlane p = DataPlane.create("g", threeNearThreeFarther(), ticker,
                DataPlaneOptions.builder().maxInFlightPerEngine(3).build());
        List<Decision> held = new ArrayList<>();
        for (int i = 0; i < 9; i++) {
            Decision d = p.route(RequestMeta.of("m", i, i));
            assertThat(d.engineId()).startsWith("n");
            held.add(d);
        }
        Decision spilled = p.route(RequestMeta.of("m", 9, 9));
        assertThat(spilled.engineId()).startsWith("m");
        assertThat(spilled.reason()).isEqualTo("spill:limit");
        held.add(spilled);
        for (int i = 10; i < 18; i++) {
            Decision d = p.route(RequestMeta.of("m", i, i));
            assertThat(d.routed()).as("request %d: %s", i, d).isTrue();
            held.add(d);
        }
        Decision full = p.route(RequestMeta.of("m", 18, 18));
        assertThat(full.refusal()).isEqualTo(Refusal.ENGINE_LIMIT);
        held.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
        assertThat(p.status().inFlight()).isZero();
    }

    @Test
    void route_concurrencyLimit_refusesWithRetryAfterOnceEveryEngineIsFull() {
        DataPlane p = DataPlane.create("g", Fixtures.simple(1, 0, 0.5, 0.5), ticker,
                DataPlaneOptions.builder().maxInFlightPerEngine(3).build());
        List<Decision> held = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            Decision d = p.route(RequestMeta.of("m", i, i));
            assertThat(d.routed()).isTrue();
            held.add(d);
        }
        Decision full = p.route(RequestMeta.of("m", 7, 7));
        assertThat(full.refusal()).isEqualTo(Refusal.ENGINE_LIMIT);
        assertThat(full.retryAfterNanos()).isPositive();
        assertThat(p.inFlight("e0")).isEqualTo(3);
        p.onFinish(held.get(0), Outcome.SUCCESS, -1);
        p.onFinish(held.get(0), Outcome.SUCCESS, -1); // a second end is ignored
        assertThat(p.status().inFlight()).isEqualTo(5);
        assertThat(p.route(RequestMeta.of("m", 7, 7)).routed()).isTrue();
    }

    // ------------------------------------------------------------------ bounded load

    @ParameterizedTest(name = "{0} in flight")
    @ValueSource(ints = {200, 2000})
    void route_hotKey_spillsPastItsEngineAtItsBound(int m) {
        DataPlane p = fixedLimit(Fixtures.simple(1, 0, 0.25, 0.25, 0.25, 0.25));
        String home = null;
        for (int i = 0; i < m; i++) {
            Decision d = p.route(RequestMeta.of("m", 42, i)); // one hot conversation, never finishing
            home = home == null ? d.engineId() : home;
        }
        int homeLoad = p.inFlight(home);
        for (int e = 0; e < 4; e++) {
            assertThat(p.inFlight("e" + e)).isLessThanOrEqualTo(bound(0.25 * (m + 1)));
        }
        if (m == 200) {
            // the key's own engine holds up to its bound, the rest walked on in the key's order: at 200 in flight
            // (a share of 50) three Poisson deviations above the share (71) is the looser bound
            assertThat(p.status().spills()).isZero();
            assertThat(homeLoad).isBetween(bound(0.25 * m) - 1, bound(0.25 * m) + 1);
        } else {
            // 2,000 at one instant, far beyond what every engine holds at its capacity (100 req/s × its planned
            // duration): bounded load would keep 625 (1 + ε of a share of 500) on the key's engine, and the spill
            // under load moves on what keeps it fuller than 1 + ε times the others
            int others = m - homeLoad;
            assertThat(p.status().spills()).isPositive();
            assertThat(homeLoad).isLessThan(bound(0.25 * m) - 1)
                    .isBetween((int) Math.floor(1.25 * others / 3) - 2, (int) Math.ceil(1.25 * (others / 3 + 1)) + 1);
        }
    }

    /** Bounded load's capacity for an engine whose share of the pool's requests in flight is {@code mean}. */
    private static int bound(double mean) {
        return (int) Math.ceil(Math.max(1.25 * mean, mean + 3 * Math.sqrt(mean)));
    }

    /**
     * A gateway serving a large model (requests 1.6 s in flight) and a small one (0.6 s), each over three engines at
     * the same rate: the large model's engines hold 8/3 as many requests, and that is what each key's own engine
     * must be allowed to hold.
     */
    static Snapshot twoModels() {
        Fixtures.SnapshotBuilder b = new Fixtures.SnapshotBuilder("g").rtt("c", 1);
        Map<String, Double> big = new java.util.TreeMap<>();
        Map<String, Double> small = new java.util.TreeMap<>();
        for (int i = 0; i < 3; i++) {
            b.engine("big" + i, "c", "r", 1600, "llama-70b");
            b.engine("small" + i, "c", "r", 600, "llama-8b");
            big.put("big" + i, 1.0 / 3);
            small.put("small" + i, 1.0 / 3);
        }
        return b.route("chat", "llama-70b", List.of(), 0, 0, big).route("assist", "llama-8b", List.of(), 0, 0, small)
                .build();
    }

    /**
     * Keys of {@code model} whose own engine is each engine of {@code counts} as many times as it says, from seed 1, in
     * turn (one for each engine that has keys left, in id order, then again), as conversations arriving over time.
     */
    List<Long> keysFor(Snapshot s, String model, Map<String, Integer> counts) {
        DataPlane probe = plane(s);
        Map<String, List<Long>> byEngine = new java.util.TreeMap<>();
        counts.keySet().forEach(e -> byEngine.put(e, new ArrayList<>()));
        int wanted = counts.values().stream().mapToInt(Integer::intValue).sum();
        SplittableRandom rng = new SplittableRandom(1);
        for (int found = 0; found < wanted; ) {
            long key = rng.nextLong();
            Decision d = probe.route(RequestMeta.of(model, key, key));
            probe.onFinish(d, Outcome.SUCCESS, -1);
            List<Long> mine = byEngine.get(d.engineId());
            if (mine.size() < counts.get(d.engineId())) {
                mine.add(key);
                found++;
            }
        }
        List<Long> keys = new ArrayList<>();
        for (int i = 0; keys.size() < wanted; i++) {
            for (List<Long> mine : byEngine.values()) {
                if (i < mine.size()) {
                    keys.add(mine.get(i));
                }
            }
        }
        return keys;
    }

    @Test
    void route_twoModelsOfDifferentDurations_keysStayOnTheirEnginesAtTheInFlightTheRatesAndDurationsImply() {
        Snapshot s = twoModels();
        // in flight in the ratio of the durations: 32 on a large-model engine (36, 32 and 28: keys are not spread
        // evenly), 12 on a small-model one
        List<Long> big = keysFor(s, "llama-70b", Map.of("big0", 36, "big1", 32, "big2", 28));
        List<Long> small = keysFor(s, "llama-8b", Map.of("small0", 12, "small1", 12, "small2", 12));
        DataPlane p = unspaced(s);
        DataPlane alone = plane(s);
        int moved = 0;
        int j = 0;
        for (int i = 0; i < big.size(); i++) { // arriving interleaved, as they would
            List<String[]> arriving = new ArrayList<>();
            arriving.add(new String[] {"llama-70b", Long.toString(big.get(i))});
            for (; j < (i + 1) * small.size() / big.size(); j++) {
                arriving.add(new String[] {"llama-8b", Long.toString(small.get(j))});
            }
            for (String[] a : arriving) {
                long key = Long.parseLong(a[1]);
                Decision first = alone.route(RequestMeta.of(a[0], key, key));
                alone.onFinish(first, Outcome.SUCCESS, -1);
                moved += p.route(RequestMeta.of(a[0], key, key)).engineId().equals(first.engineId()) ? 0 : 1;
            }
        }
        // compared with their share of the rate (1/6 each), the large-model engines would pass their bound at 28, and
        // the requests of the fullest walk to the least loaded
        assertThat(moved).isZero();
        assertThat(p.inFlight("big0") + p.inFlight("big1") + p.inFlight("big2")).isEqualTo(96);
    }

    @Test
    void route_aModelOnItsOwnEngines_isBoundedByItsOwnRequestsInFlight_notByAnotherModelsLull() {
        Snapshot s = twoModels();
        // the small model's traffic is idle: the large model's keys are bounded within its own pool (1.25 × 1/3 ×
        // 97 = 40.4), not within the gateway's (1.25 × 8/22 × 97 = 29.4, which the fullest passes)
        DataPlane p = unspaced(s);
        DataPlane alone = plane(s);
        int moved = 0;
        for (long key : keysFor(s, "llama-70b", Map.of("big0", 36, "big1", 32, "big2", 28))) {
            Decision first = alone.route(RequestMeta.of("llama-70b", key, key));
            alone.onFinish(first, Outcome.SUCCESS, -1);
            moved += p.route(RequestMeta.of("llama-70b", key, key)).engineId().equals(first.engineId()) ? 0 : 1;
        }
        assertThat(moved).isZero();
    }

    @Test
    void decision_saysWhyThisEngine_inStableWords() {
        DataPlane p = fixedLimit(Fixtures.simple(1, 0, 0.25, 0.25, 0.25, 0.25));
        Decision first = p.route(RequestMeta.of("m", 42, 0));
        assertThat(first.reason()).isEqualTo("key");
        List<String> reasons = new ArrayList<>();
        for (int i = 1; i < 60; i++) { // one hot conversation, never finishing: bounded load walks it on
            reasons.add(p.route(RequestMeta.of("m", 42, i)).reason());
        }
        assertThat(reasons).contains("key", "spill:bounded-load");
        Decision retried = p.retry(first, Outcome.CONNECT_ERROR);
        assertThat(retried.reason()).startsWith("retry:connect-error,");

        DataPlane spilling = fixedLimit(farWeightedNearFree());
        List<Decision> open = surge(spilling, 200, 3, new ArrayList<>());
        assertThat(open).extracting(Decision::reason).contains("key", "spill:overload");

        Snapshot shedAll = Fixtures.simple(2, 1.0, 1.0);
        assertThat(plane(shedAll).route(RequestMeta.of("m", 1, 1)).reason()).isEqualTo("refused:shed");
    }

    // ------------------------------------------------------------------ outlier ejection

    @Test
    void onFinish_fiveConsecutiveFailures_ejectsForBaseWithJitterThenReturns() {
        List<Ejection> seen = new ArrayList<>();
        DataPlane p = DataPlane.create("g", Fixtures.simple(1, 0, 0.5, 0.5), ticker, DataPlaneOptions.builder()
                .listener(new DataPlaneListener() {
                    @Override
                    public void onEjection(Ejection e) {
                        seen.add(e);
                    }
                }).build());
        long key = keyOn(p, "e0");
        for (int i = 0; i < 4; i++) {
            p.onFinish(p.route(RequestMeta.of("m", key, i)), Outcome.CONNECT_ERROR, -1);
        }
        assertThat(p.ejections()).isEmpty();
        p.onFinish(p.route(RequestMeta.of("m", key, 5)), Outcome.SUCCESS, 1); // resets the count
        for (int i = 0; i < 4; i++) {
            p.onFinish(p.route(RequestMeta.of("m", key, i)), Outcome.SERVER_ERROR, -1);
        }
        assertThat(p.ejections()).isEmpty();
        p.onFinish(p.route(RequestMeta.of("m", key, 9)), Outcome.TIMEOUT, -1);

        List<Ejection> ej = p.ejections();
        assertThat(ej).hasSize(1);
        Ejection e = ej.get(0);
        assertThat(e.engineId()).isEqualTo("e0");
        assertThat(e.reason()).contains("5 consecutive failures").contains("TIMEOUT");
        assertThat(e.multiplier()).isEqualTo(1);
        long duration = e.untilNanos() - e.sinceNanos();
        assertThat(duration).isBetween(Duration.ofSeconds(30).toNanos(), Duration.ofSeconds(33).toNanos());
        assertThat(seen).containsExactly(e);
        assertThat(p.status().ejectedEngines()).isEqualTo(1);
        assertThat(p.route(RequestMeta.of("m", key, 1)).engineId()).isEqualTo("e1");

        ticker.advanceSeconds(33.1);
        assertThat(p.ejections()).isEmpty();
        assertThat(p.route(RequestMeta.of("m", key, 1)).engineId()).isEqualTo("e0");
    }

    /** Two engines e0, e1 of class "k" half and half; e0 planned knowing that a quarter of its attempts fail. */
    static Snapshot e0AtLastResort(long version) {
        return new Fixtures.SnapshotBuilder("g").version(version).rtt("c", 1).engine("e0", "c", "r", 100, "m")
                .engine("e1", "c", "r", 100, "m").penalty("e0", 0.75)
                .route("k", "m", List.of(), 0, 0, Fixtures.weights(0.5, 0.5)).build();
    }

    @Test
    void onFinish_serverErrorsOfAnEngineThePolicyPlansKnowingItFails_doNotEjectIt_timeoutsStillDo() {
        DataPlane p = plane(e0AtLastResort(1));
        long key = keyOn(p, "e0");
        for (int i = 0; i < 10; i++) {
            p.onFinish(p.route(RequestMeta.of("m", key, i)), Outcome.SERVER_ERROR, -1);
        }
        assertThat(p.ejections()).isEmpty();
        failRun(p, key, Outcome.TIMEOUT);
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactly("e0");
    }

    @Test
    void swap_toASnapshotThatPlansAFailingEngineAsLastResort_endsItsEjectionForErrors_notOneForHanging() {
        List<String> ended = new ArrayList<>();
        DataPlane p = DataPlane.create("g", Fixtures.simple(1, 0, 0.5, 0.5), ticker, DataPlaneOptions.builder()
                .listener(new DataPlaneListener() {
                    @Override
                    public void onEjectionEnded(Ejection e, String why) {
                        ended.add(e.engineId() + ": " + why);
                    }
                }).build());
        long key = keyOn(p, "e0");
        failRun(p, key, Outcome.SERVER_ERROR);
        assertThat(p.ejections()).hasSize(1);

        assertThat(p.swap(e0AtLastResort(2))).isTrue();
        assertThat(p.ejections()).isEmpty();
        assertThat(ended).containsExactly("e0: the policy plans it knowing that a share of its attempts fail");
        assertThat(p.route(RequestMeta.of("m", key, 1)).engineId()).isEqualTo("e0");

        DataPlane hung = plane(Fixtures.simple(1, 0, 0.5, 0.5));
        failRun(hung, key, Outcome.TIMEOUT);
        hung.swap(e0AtLastResort(2));
        assertThat(hung.ejections()).extracting(Ejection::engineId).containsExactly("e0");
    }

    @Test
    void onFinish_repeatedEjections_growByBaseTimesKUpToTheCap_andDecayWhileHealthy() {
        DataPlane p = plane(Fixtures.simple(1, 0, 0.5, 0.5));
        long key = keyOn(p, "e0");
        List<Integer> ks = new ArrayList<>();
        for (int round = 0; round < 12; round++) {
            failRun(p, key, Outcome.CONNECT_ERROR);
            Ejection e = p.ejections().get(0);
            ks.add(e.multiplier());
            assertThat(e.untilNanos() - e.sinceNanos()).isLessThanOrEqualTo(Duration.ofSeconds(300).toNanos());
            ticker.advanceMillis((e.untilNanos() - e.sinceNanos()) / 1_000_000 + 1);
        }
        assertThat(ks).startsWith(1, 2, 3, 4);
        Ejection last = null;
        ticker.advanceSeconds(30 * 20); // healthy for twenty base intervals
        failRun(p, key, Outcome.CONNECT_ERROR);
        last = p.ejections().get(0);
        assertThat(last.multiplier()).isEqualTo(1);
    }

    @Test
    void onFinish_neverEjectsMoreThanTheClassCapAndAlwaysLeavesOne() {
        DataPlane p = plane(Fixtures.simple(1, 0, 0.5, 0.5));
        for (String engine : List.of("e0", "e1")) {
            long key = keyOn(p, engine);
            failRun(p, key, Outcome.CONNECT_ERROR);
        }
        assertThat(p.ejections()).hasSize(1);
    }

    @Test
    void onFinish_atTheCap_aFailingEngineTakesThePlaceOfOneEjectedForSlownessOnly() {
        List<String> events = new ArrayList<>();
        DataPlane p = DataPlane.create("g", Fixtures.simple(1, 0, 0.34, 0.33, 0.33), ticker, DataPlaneOptions.builder()
                .listener(new DataPlaneListener() {
                    @Override
                    public void onEjection(Ejection e) {
                        events.add("ejected " + e.engineId() + ": " + e.reason());
                    }

                    @Override
                    public void onEjectionEnded(Ejection e, String why) {
                        events.add("ended " + e.engineId() + ": " + why);
                    }
                }).build());
        long slowKey = keyOn(p, "e0");
        long deadKey = keyOn(p, "e1");
        long otherKey = keyOn(p, "e2");
        for (int i = 0; i < 5; i++) {
            p.onFinish(p.route(RequestMeta.of("m", slowKey, i)), Outcome.SUCCESS, 600_000_000L); // > 5 × 101 ms
        }
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactly("e0"); // the cap: one of three
        failRun(p, deadKey, Outcome.CONNECT_ERROR);
        assertThat(p.ejections()).singleElement().satisfies(e -> {
            assertThat(e.engineId()).isEqualTo("e1");
            assertThat(e.reason()).contains("5 consecutive failures (last: CONNECT_ERROR)")
                    .contains("in place of e0 (ejected for slowness only)");
        });
        assertThat(p.route(RequestMeta.of("m", slowKey, 1)).engineId()).isEqualTo("e0");
        assertThat(events).hasSize(3);
        assertThat(events.get(1)).startsWith("ended e0: its place went to e1");
        assertThat(events.get(2)).startsWith("ejected e1: ");

        // the slow engine, back, cannot take the place back; nor can another failing engine displace a failing one
        for (int i = 0; i < 5; i++) {
            p.onFinish(p.route(RequestMeta.of("m", slowKey, i)), Outcome.SUCCESS, 600_000_000L);
            p.onFinish(p.route(RequestMeta.of("m", otherKey, i)), Outcome.SERVER_ERROR, -1);
        }
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactly("e1");
        assertThat(events).hasSize(3);
    }

    @Test
    void onFinish_atTheCap_aHungEngineTakesThePlaceOfOneThatFailsFast_notTheOtherWayRound() {
        // two engines, one ejection allowed: one answers 500 at once, the other takes requests and never answers
        DataPlane p = plane(Fixtures.simple(1, 0, 0.5, 0.5));
        long failingKey = keyOn(p, "e0");
        long hungKey = keyOn(p, "e1");
        failRun(p, failingKey, Outcome.SERVER_ERROR);
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactly("e0");
        failRun(p, hungKey, Outcome.TIMEOUT);
        // each request sent to the hung engine waits the whole timeout; one sent to the failing one costs a retry
        assertThat(p.ejections()).singleElement().satisfies(e -> {
            assertThat(e.engineId()).isEqualTo("e1");
            assertThat(e.reason()).contains("last: TIMEOUT").contains("in place of e0 (ejected for failing fast)");
        });
        assertThat(p.route(RequestMeta.of("m", hungKey, 9)).engineId()).isEqualTo("e0");

        // back in rotation, the failing engine fails again: it does not take the hung one's place
        for (int i = 0; i < 5; i++) {
            p.onFinish(p.route(RequestMeta.of("m", failingKey, 10 + i)), Outcome.SERVER_ERROR, -1);
        }
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactly("e1");
    }

    @Test
    void onFinish_anEjectionWhoseRunHadAnErrorIsNotForSlownessOnly_evenIfItsLastFailureWasSlow() {
        DataPlane p = plane(Fixtures.simple(1, 0, 0.34, 0.33, 0.33));
        long k0 = keyOn(p, "e0");
        long k1 = keyOn(p, "e1");
        for (int i = 0; i < 4; i++) {
            p.onFinish(p.route(RequestMeta.of("m", k0, i)), Outcome.CONNECT_ERROR, -1);
        }
        p.onFinish(p.route(RequestMeta.of("m", k0, 4)), Outcome.SUCCESS, 600_000_000L); // back, and slow
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactly("e0");
        failRun(p, k1, Outcome.CONNECT_ERROR);
        assertThat(p.ejections()).as("e0 keeps the place: it failed, too").extracting(Ejection::engineId)
                .containsExactly("e0");
    }

    @Test
    void onFinish_atTheCap_aSlowEngineDoesNotDisplaceAnotherSlowOne() {
        DataPlane p = plane(Fixtures.simple(1, 0, 0.34, 0.33, 0.33));
        for (String engine : List.of("e0", "e1")) {
            long key = keyOn(p, engine);
            for (int i = 0; i < 5; i++) {
                p.onFinish(p.route(RequestMeta.of("m", key, i)), Outcome.SUCCESS, 600_000_000L);
            }
        }
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactly("e0");
    }

    @Test
    void onFinish_ttftFarAboveTheProfilePrediction_countsAsAFailure() {
        DataPlane p = plane(Fixtures.simple(1, 0, 0.5, 0.5)); // engine latency 100 ms, rtt 1 ms
        long key = keyOn(p, "e0");
        for (int i = 0; i < 5; i++) {
            p.onFinish(p.route(RequestMeta.of("m", key, i)), Outcome.SUCCESS, 400_000_000L); // 4× : fine
        }
        assertThat(p.ejections()).isEmpty();
        for (int i = 0; i < 5; i++) {
            p.onFinish(p.route(RequestMeta.of("m", key, i)), Outcome.SUCCESS, 600_000_000L); // > 5 × 101 ms
        }
        assertThat(p.ejections()).singleElement().satisfies(e ->
                assertThat(e.reason()).contains("TTFT 600 ms > 5.0 × expected 101 ms"));
    }

    @Test
    void onFinish_aClientGoneBeforeTheFirstToken_afterWaitingBeyondTheOutlierBound_countsAsASlowAnswer() {
        DataPlane p = plane(Fixtures.simple(1, 0, 0.5, 0.5)); // engine latency 100 ms, rtt 1 ms
        long key = keyOn(p, "e0");
        for (int i = 0; i < 5; i++) {
            Decision d = p.route(RequestMeta.of("m", key, i));
            ticker.advanceMillis(400); // 4×: a client that gives up this soon says nothing of the engine
            p.onFinish(d, Outcome.CANCELLED, -1);
            assertThat(d.stalled()).isFalse();
        }
        assertThat(p.ejections()).isEmpty();
        for (int i = 0; i < 5; i++) {
            Decision d = p.route(RequestMeta.of("m", key, i));
            ticker.advanceMillis(600); // > 5 × 101 ms, and no first token: a hung engine's clients time out first
            p.onFinish(d, Outcome.CANCELLED, -1);
            assertThat(d.stalled()).as("what the gateway reports a timeout").isTrue();
        }
        assertThat(p.ejections()).singleElement().satisfies(e -> assertThat(e.reason())
                .contains("no first token after 600 ms, when the client went away > 5.0 × expected 101 ms"));
    }

    @Test
    void awaitingFirstToken_pastTheBound_withNothingFromTheEngine_countsOnce_andFiveEjectIt() {
        DataPlane p = plane(Fixtures.simple(1, 0, 0.5, 0.5)); // expected TTFT 101 ms: the bound is 505 ms
        long key = keyOn(p, "e0");
        List<Decision> waiting = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            Decision d = p.route(RequestMeta.of("m", key, i));
            assertThat(p.awaitingFirstToken(d)).as("ask again past the bound").isEqualTo(505_000_001L);
            waiting.add(d);
        }
        ticker.advanceMillis(400);
        assertThat(p.awaitingFirstToken(waiting.get(0))).isEqualTo(105_000_001L);
        ticker.advanceMillis(106);
        for (Decision d : waiting.subList(0, 4)) {
            assertThat(p.awaitingFirstToken(d)).as("counted: nothing more to ask").isEqualTo(-1);
            assertThat(d.stalled()).isTrue();
            assertThat(p.awaitingFirstToken(d)).isEqualTo(-1);
        }
        assertThat(p.ejections()).as("four of the five the rule needs").isEmpty();
        // each counted once: an answer that comes after all, or a client that leaves, counts nothing more
        p.onFinish(waiting.get(0), Outcome.SUCCESS, 900_000_000L);
        p.onFinish(waiting.get(1), Outcome.CANCELLED, DataPlane.NO_TOKEN_YET);
        assertThat(p.ejections()).isEmpty();
        assertThat(p.awaitingFirstToken(waiting.get(4))).isEqualTo(-1);
        assertThat(p.ejections()).singleElement().satisfies(e -> {
            assertThat(e.engineId()).isEqualTo("e0");
            assertThat(e.reason()).contains("5 consecutive failures (last: no first token after 506 ms, none from the "
                    + "engine meanwhile > 5.0 × expected 101 ms)");
        });
    }

    @Test
    void awaitingFirstToken_anEngineThatSentAFirstTokenMeanwhile_isNotCounted_itsAnswerJudgedWhenItComes() {
        DataPlane p = plane(Fixtures.simple(1, 0, 0.5, 0.5));
        long key = keyOn(p, "e0");
        Decision waiting = p.route(RequestMeta.of("m", key, 1));
        Decision other = p.route(RequestMeta.of("m", key, 2));
        ticker.advanceMillis(300);
        p.onFirstToken(other, DataPlane.NOT_STREAMED); // the engine works: behind a queue or a long prompt, this one will be judged by its TTFT
        ticker.advanceMillis(300);
        assertThat(p.awaitingFirstToken(waiting)).as("the engine works: nothing more to ask").isEqualTo(-1);
        assertThat(waiting.stalled()).isFalse();
        p.onFirstToken(waiting, DataPlane.NOT_STREAMED);
        assertThat(p.awaitingFirstToken(waiting)).as("its token came").isEqualTo(-1);
        p.onFinish(p.route(RequestMeta.of("m", key, 3)), Outcome.SUCCESS, DataPlane.NOT_STREAMED);
        Decision ended = p.route(RequestMeta.of("m", key, 4));
        p.onFinish(ended, Outcome.CANCELLED, DataPlane.NO_TOKEN_YET);
        assertThat(p.awaitingFirstToken(ended)).as("it ended").isEqualTo(-1);
    }

    @Test
    void awaitingFirstToken_isNoOutlierWhereThePeersAreAsSlow() {
        DataPlane p = plane(Fixtures.simple(1, 0, 0.5, 0.5));
        long k0 = keyOn(p, "e0");
        long k1 = keyOn(p, "e1");
        for (int i = 0; i < 10; i++) { // the peer's first tokens come after 400 ms, within the profile's bound
            p.onFinish(p.route(RequestMeta.of("m", k1, i)), Outcome.SUCCESS, 400_000_000L);
        }
        Decision d = p.route(RequestMeta.of("m", k0, 1));
        ticker.advanceMillis(600);
        assertThat(p.awaitingFirstToken(d)).as("within 5 × the peers' 400 ms: asked again").isEqualTo(600_000_000L);
        ticker.advanceMillis(1_500);
        assertThat(p.awaitingFirstToken(d)).as("beyond it").isEqualTo(-1);
        assertThat(d.stalled()).isTrue();
    }

    @Test
    void onFinish_anAnswerNotStreamed_isNeverALatencyOutlier_howeverLongItsGeneration() {
        DataPlane p = plane(Fixtures.simple(1, 0, 0.5, 0.5)); // expected TTFT 101 ms on both engines
        long k0 = keyOn(p, "e0");
        long k1 = keyOn(p, "e1");
        for (int i = 0; i < 10; i++) { // the peer answers streams at the profile's pace
            p.onFinish(p.route(RequestMeta.of("m", k1, i)), Outcome.SUCCESS, 100_000_000L);
        }
        for (int i = 0; i < 10; i++) {
            Decision d = p.route(RequestMeta.of("m", k0, i));
            ticker.advanceSeconds(3); // 300 tokens, sent whole: its first byte came with its last token
            p.onFinish(d, Outcome.SUCCESS, DataPlane.NOT_STREAMED);
        }
        for (int i = 0; i < 10; i++) {
            Decision d = p.route(RequestMeta.of("m", k0, i));
            ticker.advanceSeconds(3); // a client that stopped waiting for a whole answer
            p.onFinish(d, Outcome.CANCELLED, DataPlane.NOT_STREAMED);
            assertThat(d.stalled()).as("not reported as a timeout").isFalse();
        }
        assertThat(p.ejections()).isEmpty();
        // the control: the same waits for streams eject the engine
        for (int i = 0; i < 5; i++) {
            Decision d = p.route(RequestMeta.of("m", k0, i));
            ticker.advanceSeconds(3);
            p.onFinish(d, Outcome.SUCCESS, 3_000_000_000L);
        }
        assertThat(p.ejections()).singleElement().satisfies(e -> assertThat(e.engineId()).isEqualTo("e0"));
    }

    @Test
    void onFinish_ttftSlowOnEveryEngineOfTheClass_isNoOnesFault_butSlowerThanItsPeersIs() {
        DataPlane p = plane(Fixtures.simple(1, 0, 0.5, 0.5)); // expected TTFT 101 ms on both engines
        long k0 = keyOn(p, "e0");
        long k1 = keyOn(p, "e1");
        for (int i = 0; i < 10; i++) { // the whole class at 600 ms: beyond 5 × the profile, but so is every peer
            p.onFinish(p.route(RequestMeta.of("m", k0, i)), Outcome.SUCCESS, 600_000_000L);
            p.onFinish(p.route(RequestMeta.of("m", k1, i)), Outcome.SUCCESS, 610_000_000L);
        }
        assertThat(p.ejections()).isEmpty();

        for (int i = 0; i < 60; i++) { // e1 recovers to 100 ms (its recent mean follows within ~60 answers)
            p.onFinish(p.route(RequestMeta.of("m", k1, i)), Outcome.SUCCESS, 100_000_000L);
        }
        for (int i = 0; i < 5; i++) {
            p.onFinish(p.route(RequestMeta.of("m", k0, i)), Outcome.SUCCESS, 600_000_000L);
        }
        assertThat(p.ejections()).singleElement().satisfies(e -> {
            assertThat(e.engineId()).isEqualTo("e0");
            assertThat(e.reason()).contains("TTFT 600 ms > 5.0 × expected 101 ms");
        });
    }

    // ------------------------------------------------------------------ retries

    @Test
    void retry_goesToTheNextEngineOfTheKeysOrderThenGivesUpAfterThreeAttempts() {
        Snapshot s = Fixtures.simple(1, 0, 0.2, 0.2, 0.2, 0.2, 0.2);
        DataPlane p = plane(s);
        long key = 12345;
        SlotTable t = SlotTable.of(List.of("e0", "e1", "e2", "e3", "e4"), new double[] {1, 1, 1, 1, 1});
        int[] order = new int[3];
        t.fill(key, order);
        Decision d1 = p.route(RequestMeta.of("m", key, 1));
        Decision d2 = p.retry(d1, Outcome.CONNECT_ERROR); // the floor's first token
        ticker.advanceSeconds(1);                          // the floor pays one retry a second
        Decision d3 = p.retry(d2, Outcome.SERVER_ERROR);
        ticker.advanceSeconds(1);
        Decision d4 = p.retry(d3, Outcome.TIMEOUT);
        assertThat(List.of(d1.engineId(), d2.engineId(), d3.engineId())).containsExactly(
                "e" + order[0], "e" + order[1], "e" + order[2]);
        assertThat(List.of(d1.attempt(), d2.attempt(), d3.attempt())).containsExactly(1, 2, 3);
        assertThat(d2.backoffNanos()).isZero();
        assertThat(d4.refusal()).isEqualTo(Refusal.ATTEMPTS_EXHAUSTED);
        assertThat(p.status().inFlight()).isZero();
    }

    @Test
    void retry_systemOverloaded_isNeverRetried() {
        DataPlane p = plane(Fixtures.simple(1, 0, 0.5, 0.5));
        Decision d = p.retry(p.route(RequestMeta.of("m", 1, 1)), Outcome.SYSTEM_OVERLOADED);
        assertThat(d.refusal()).isEqualTo(Refusal.NOT_RETRYABLE);
        assertThat(p.status().inFlight()).isZero();
    }

    @Test
    void retry_notSent_goesToTheSameEngineAtOnce_spendsAToken_andIsNoFailure() {
        DataPlane p = plane(Fixtures.simple(1, 0, 0.25, 0.25, 0.25, 0.25));
        for (long id = 0; id < 20; id++) { // bank tokens (20% of each request at this utilization)
            p.onFinish(p.route(RequestMeta.of("m", id, id)), Outcome.SUCCESS, -1);
        }
        double banked = p.status().retryTokens();
        Decision first = p.route(RequestMeta.of("m", 42, 42));
        Decision again = p.retry(first, Outcome.NOT_SENT);
        assertThat(again.engineId()).isEqualTo(first.engineId());
        assertThat(again.attempt()).isEqualTo(2);
        assertThat(again.backoffNanos()).isZero();
        assertThat(p.status().retryTokens()).isCloseTo(banked + 0.2 - 1, offset(1e-9));
        assertThat(p.inFlight(first.engineId())).isEqualTo(1);
        // a failure after it moves on to another engine, and the engine was not charged for the close
        Decision next = p.retry(again, Outcome.SERVER_ERROR);
        assertThat(next.engineId()).isNotEqualTo(first.engineId());
        p.onFinish(next, Outcome.SUCCESS, -1);
        assertThat(p.status().inFlight()).isZero();
        assertThat(p.ejections()).isEmpty();
    }

    @Test
    void retry_notSent_withTheBudgetSpent_isRefused() {
        DataPlane p = DataPlane.create("g", Fixtures.simple(1, 0, 0.5, 0.5), ticker, DataPlaneOptions.defaults());
        Decision spent;
        int i = 0;
        do { // the floor's first token, then nothing banked
            spent = p.retry(p.route(RequestMeta.of("m", i, i)), Outcome.NOT_SENT);
            p.onFinish(spent, Outcome.CANCELLED, -1);
            i++;
        } while (spent.routed() && i < 100);
        assertThat(spent.refusal()).isEqualTo(Refusal.RETRY_BUDGET_EXHAUSTED);
        assertThat(p.status().inFlight()).isZero();
    }

    @Test
    void retry_singleEngine_retriesItAfterAFullJitterBackoff() {
        DataPlane p = plane(Fixtures.simple(1, 0, 1.0));
        Map<Long, Long> backoffs = new HashMap<>();
        for (long id = 0; id < 200; id++) {
            Decision d = p.retry(p.route(RequestMeta.of("m", 1, id)), Outcome.ENGINE_BUSY);
            assertThat(d.engineId()).isEqualTo("e0");
            assertThat(d.backoffNanos()).isBetween(0L, Duration.ofMillis(25).toNanos());
            backoffs.put(id, d.backoffNanos());
            p.onFinish(d, Outcome.SUCCESS, -1);
            ticker.advanceSeconds(1); // let the floor refill
        }
        assertThat(backoffs.values().stream().distinct().count()).isGreaterThan(150); // jittered
        double mean = backoffs.values().stream().mapToLong(Long::longValue).average().orElseThrow();
        assertThat(mean).isCloseTo(Duration.ofMillis(25).toNanos() / 2.0, offset(Duration.ofMillis(4).toNanos() * 1.0));
    }

    // ------------------------------------------------------------------ fallback

    @Test
    void route_staleSnapshot_keepsItsWeightsAndKeys_withoutItsShedding_andSaysSo() {
        Snapshot s = farWeightedNearFree(4, 0.5);
        List<String> events = new ArrayList<>();
        DataPlaneListener listener = new DataPlaneListener() {
            @Override
            public void onFallback(boolean fallback, String reason) {
                events.add(fallback + ": " + reason);
            }
        };
        DataPlane p = DataPlane.create("g", s, ticker, DataPlaneOptions.builder().listener(listener).build());
        int admitted = 0;
        for (int i = 0; i < 100; i++) {
            Decision d = p.route(RequestMeta.of("chat", i, i));
            admitted += d.routed() ? 1 : 0;
            p.onFinish(d, Outcome.SUCCESS, -1);
        }
        assertThat(admitted).isBetween(30, 70); // half shed while the snapshot is fresh
        ticker.advanceSeconds(301);
        assertThat(p.status().fallback()).isTrue();
        for (int i = 0; i < 100; i++) { // the demand the shed fraction was for has moved on: nothing shed
            Decision d = p.route(RequestMeta.of("chat", i, i));
            assertThat(d.fallback()).isTrue();
            assertThat(d.engineId()).isEqualTo("f1"); // the weights and the key's engine, as before
            p.onFinish(d, Outcome.SUCCESS, -1);
        }
        assertThat(events).singleElement().asString().startsWith("true: snapshot 4 is 301 s old");

        p.swap(s); // the control plane answers again: "not modified"
        assertThat(p.status().fallback()).isFalse();
        assertThat(events).hasSize(2).last().asString().startsWith("false:");
    }

    static Snapshot farWeightedNearFree() {
        return farWeightedNearFree(1, 0);
    }

    /** Class "k" (residency us) weighted on the far engine f1 only, shedding {@code shed}; n1, n2 near, x1 in the EU. */
    static Snapshot farWeightedNearFree(long version, double shed) {
        return farWeightedNearFree(version, shed, 100);
    }

    /** {@link #farWeightedNearFree(long, double)} with f1's planned latency {@code farLatencyMs}. */
    static Snapshot farWeightedNearFree(long version, double shed, double farLatencyMs) {
        return new Fixtures.SnapshotBuilder("g").version(version)
                .rtt("near", 2).rtt("far", 50).rtt("eu", 1)
                .engine("n1", "near", "us", 100, "chat")
                .engine("n2", "near", "us", 100, "chat")
                .engine("f1", "far", "us", farLatencyMs, "chat")
                .engine("x1", "eu", "eu", 100, "chat") // nearest of all, but outside the residency
                .route("k", "chat", List.of("us"), 0, shed, Map.of("f1", 1 - shed))
                .build();
    }

    /** Class "k" weighted on the far engine f1 (100 ms) only; n1 and n2 near, {@code nearLatencyMs} each. */
    static Snapshot farWeightedTwoNear(double nearLatencyMs) {
        return new Fixtures.SnapshotBuilder("g").rtt("near", 2).rtt("far", 50)
                .engine("n1", "near", "us", nearLatencyMs, "chat")
                .engine("n2", "near", "us", nearLatencyMs, "chat")
                .engine("f1", "far", "us", 100, "chat")
                .route("k", "chat", List.of("us"), 0, 0, Map.of("f1", 1.0))
                .build();
    }

    /** Routes {@code rps} requests a second for {@code seconds}, keys 0, 1, 2 …, kept in flight. */
    List<Decision> surge(DataPlane p, double rps, double seconds, List<Decision> open) {
        int n = (int) Math.round(rps * seconds);
        for (int i = 0; i < n; i++) {
            ticker.advanceSeconds(1 / rps);
            open.add(p.route(RequestMeta.of("chat", i, 1_000_000L + open.size())));
        }
        return open;
    }

    @Test
    void route_engineOfferedFarMoreThanItsAllowance_spillsTheExcessByKeyToTheNearestAllowedEngineWithRoom() {
        DataPlane p = fixedLimit(farWeightedNearFree());
        // f1 is planned 10 req/s from here with 80 req/s spare: an allowance of 90, spilling beyond 90 + 3·√(90/2)
        // = 110 req/s; n1 and n2 (100 req/s, 102 ms) hold 10.2 of this gateway's requests at their capacity
        List<Decision> open = surge(p, 60, 5, new ArrayList<>());
        assertThat(p.status().spills()).isZero(); // within the allowance: every key on its engine
        surge(p, 200, 3, open);
        long spills = p.status().spills();
        // past the 10 each that n1 and n2 hold at their capacity too: f1, with nothing finishing, is far fuller
        assertThat(spills).isGreaterThan(20);
        assertThat(p.inFlight("n1")).isGreaterThan(10);
        assertThat(p.inFlight("n2")).isGreaterThan(10);
        assertThat(p.inFlight("n1") + p.inFlight("n2")).isEqualTo(spills);
        assertThat(p.inFlight("x1")).isZero();
        assertThat(p.inFlight("f1")).isEqualTo(open.size() - spills);
        // the same keys spill: a key that went to n1 or n2 still would, one that stayed still does
        Decision moved = open.stream().filter(d -> !d.engineId().equals("f1")).findFirst().orElseThrow();
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
        ticker.advanceSeconds(0.001);
        long key = moved.key;
        List<Decision> again = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            again.add(p.route(RequestMeta.of("chat", 1_000 + i, 2_000_000L + i))); // keep f1 over the minimum
        }
        Decision same = p.route(RequestMeta.of("chat", key, 3_000_000L));
        assertThat(same.engineId()).isEqualTo(moved.engineId()); // and to the same engine: its cache is there
        again.add(same);
        again.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));

        // the surge over (its rate decays within seconds): the key goes to its engine again
        ticker.advanceSeconds(30);
        List<Decision> calm = surge(p, 20, 1, new ArrayList<>());
        assertThat(p.route(RequestMeta.of("chat", key, 4_000_000L)).engineId()).isEqualTo("f1");
        calm.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
    }

    @Test
    void route_spill_beyondWhatEveryEngineHolds_fillsTheOthersOnlyUntilTheyAreNearlyAsFullAsTheKeysEngine() {
        // every engine 100 req/s, planned 10 req/s: n1 and n2 (10 ms, 2 ms away) hold 1.2 requests at their
        // capacity, 0.12 of them other gateways', f1 (100 ms, 50 ms away) 15; nothing finishes, so that every engine
        // ends far beyond what it holds at its capacity
        DataPlane p = fixedLimit(farWeightedTwoNear(10));
        surge(p, 200, 6, new ArrayList<>());
        int n1 = p.inFlight("n1");
        int n2 = p.inFlight("n2");
        int f1 = p.inFlight("f1");
        assertThat(n1 + n2).isEqualTo(p.status().spills());
        // the burst is shared: the near engines take many times what they hold at their capacity …
        assertThat(n1).isGreaterThan(5);
        assertThat(n2).isGreaterThan(5);
        // … but took each spill only while, with it, they were less full than f1 by 1 + ε (1.25):
        // (n + 1.12) / 1.2 × 1.25 ≤ f1 / 15, and f1 only grew since
        assertThat((Math.max(n1, n2) + 0.12) / 1.2 * 1.25).isLessThanOrEqualTo(f1 / 15.0);
    }

    @Test
    void route_spill_startedBeyondChanceWithAQueue_holdsToTheAllowanceItself_untilTheRateIsBackWithinIt() {
        DataPlane p = fixedLimit(farWeightedNearFree());
        // f1: an allowance of 90 req/s; beyond chance at 90 + 3·√(90/2) = 110 req/s
        List<Decision> open = new ArrayList<>();
        assertThat(offer(p, 100, 4, open, 10)).isZero(); // within chance of the allowance, no queue: no spill
        assertThat(offer(p, 200, 3, open, 100)).isPositive(); // far beyond it, and f1's answers show a queue
        // 100 req/s, f1's queue gone: beyond the allowance though within chance of it, so a spill under way goes on
        // (1 − 90/100 of the keys)
        offer(p, 100, 2.5, open, 10); // the 2-s rate falls from 200 to 100, the recent TTFT back to its floor
        assertThat(offer(p, 100, 4, open, 10)).isBetween(20L, 60L);
        // within the allowance: the spill ends, and 100 req/s again does not start one without a queue
        offer(p, 80, 4, open, 10);
        assertThat(offer(p, 100, 4, open, 10)).isZero();
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
    }

    @Test
    void route_spill_aHoldUnderWay_outlastsTheEngineDrainingToTheMinimum() {
        DataPlane p = fixedLimit(farWeightedNearFree());
        // f1: an allowance of 90 req/s; beyond chance at 110 req/s
        List<Decision> open = new ArrayList<>();
        assertThat(offer(p, 100, 4, open, 10)).isZero(); // first tokens at 10 ms: the floor
        assertThat(offer(p, 200, 3, open, 100)).isPositive(); // far beyond it, and f1's answers show a queue
        // the spill drains f1 (its requests answered, its queue gone), and at 100 req/s it holds 5, below bounded
        // load's minimum (8): nothing spills there …
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, 10_000_000L));
        open.clear();
        assertThat(offer(p, 100, 1, open, 10, 5)).isZero();
        // … but the rate is still beyond the allowance: as f1 fills again the hold goes on without a new queue
        // (1 − 90/100 of the keys spill), where a spill that had ended would wait for 110 req/s or a queue
        assertThat(offer(p, 100, 4, open, 10)).isBetween(20L, 60L);
        // within the allowance the spill ends, at the minimum as above it
        offer(p, 80, 4, open, 10, 5);
        assertThat(offer(p, 100, 4, open, 10)).isZero();
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
    }

    /** The control plane confirms the held snapshot {@code times} times, a second apart: beyond 2 s, silence. */
    private void speaks(DataPlane p, int times) {
        for (int i = 0; i < times; i++) {
            ticker.advanceSeconds(1);
            assertThat(p.swap(p.snapshot())).isTrue();
        }
    }

    @Test
    void route_spill_anEngineThatDoesNotKeepUpWithinItsAllowance_spillsWhatItsPaceDoesNotServe() {
        DataPlane p = fixedLimit(farWeightedNearFree());
        speaks(p, 3); // then silent from here on: the control plane is away
        // f1: an allowance of 90 req/s, planned 150 ms a request from here (100 ms and the 50 ms round trip): at its
        // whole allowance it would hold 13.5 of this gateway's requests. 60 req/s, within the allowance
        List<Decision> open = new ArrayList<>();
        assertThat(offerLasting(p, 60, 4, open, 10, 150)).isZero(); // first tokens at 10 ms: the floor; as planned
        // first tokens and answers four times later, 36 held (more than the 13.5): f1 does not keep up; at a quarter
        // of its pace it serves about 90 / 4 = 22.5 req/s of the 60, and the rest (about 62% of the keys) spills
        offerLasting(p, 60, 2, open, 40, 600);
        long spilled = offerLasting(p, 60, 4, open, 40, 600);
        assertThat(spilled).isBetween(100L, 190L);
        // the engine fast again: its pace back to 1, the spill ends
        offerLasting(p, 60, 2, open, 10, 150);
        assertThat(offerLasting(p, 60, 4, open, 10, 150)).isZero();
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
    }

    /**
     * An engine slowed down whose answers are long: none of them ends for seconds, so only the first tokens as they
     * come can tell its pace (read when answers end, nothing would spill until the first slow answer ended).
     */
    @Test
    void route_spill_anEngineWhoseFirstTokensComeLate_spillsBeforeAnyOfItsAnswersEnds() {
        DataPlane p = fixedLimit(farWeightedNearFree());
        speaks(p, 3);
        List<Decision> open = new ArrayList<>();
        offerLasting(p, 60, 4, open, 10, 150); // first tokens at 10 ms: the floor; answers as planned
        long spilled = 0;
        for (int i = 0; i < 360; i++) { // 60 req/s for 6 s; from here f1's first tokens come at 40 ms, no answer ends
            ticker.advanceSeconds(1 / 60.0);
            Decision d = p.route(RequestMeta.of("chat", i, 3_000_000L + i));
            if (!d.routed() || "spill:overload".equals(d.reason())) {
                spilled += d.routed() ? 1 : 0;
                p.onFinish(d, Outcome.SUCCESS, -1);
            } else {
                p.onFirstToken(d, 40_000_000L);
                open.add(d);
            }
        }
        // at a quarter of its pace f1 serves about 90 / 4 = 22.5 req/s of the 60: about 62% of the keys spill once the
        // first tokens' mean shows it, within the first second
        assertThat(spilled).isBetween(150L, 240L);
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
    }

    /**
     * A lasting slow-down: the TTFT floor follows it up within a thousand answers or so, and the queue it showed is
     * gone from the first tokens; the answers still take three times what the held plan says, and the plan does not
     * move while the control plane is away, so the engine is still behind it and its excess still spills.
     */
    @Test
    void route_spill_anEngineSlowSoLongThatItsFloorCaughtUp_isStillBehindThePlan() {
        DataPlane p = fixedLimit(farWeightedNearFree());
        speaks(p, 3);
        List<Decision> open = new ArrayList<>();
        offerLasting(p, 60, 4, open, 10, 150);
        // first tokens steady at 30 ms (the floor long since there: no queue in them), answers 450 ms against the
        // planned 150: 27 held, more than the 13.5; at a third of its pace f1 serves 30 req/s of the 60
        offerLasting(p, 60, 2, open, 10, 450);
        long spilled = offerLasting(p, 60, 4, open, 10, 450);
        assertThat(spilled).isBetween(60L, 160L);
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
    }

    @Test
    void route_spill_anEngineBehindWhileTheControlPlaneSpeaks_isLeftToThePlan() {
        DataPlane p = fixedLimit(farWeightedNearFree());
        speaks(p, 3);
        List<Decision> open = new ArrayList<>();
        offer(p, 60, 1, open, 10);
        long spilled = 0;
        for (int second = 0; second < 6; second++) { // first tokens four times later, the held snapshot confirmed
            speaks(p, 1);
            spilled += offer(p, 60, 1, open, 40);
        }
        assertThat(spilled).isZero(); // the control loop prices a slow engine within a cycle
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
    }

    @Test
    void route_spill_aQueueThatThePlanAllowsWithinTheAllowance_spillsNothing() {
        DataPlane p = fixedLimit(farWeightedNearFree());
        speaks(p, 3);
        List<Decision> open = new ArrayList<>();
        offer(p, 60, 4, open, 10, 12);
        // first tokens four times later, but f1 holds no more of this gateway's requests than at its allowance at the
        // planned pace (12 of 13.5): what the answers show is a queue the plan's load makes, not an engine behind
        assertThat(offer(p, 60, 4, open, 40, 12)).isZero();
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
    }

    @Test
    void route_spill_anEngineThePlanAlreadyPricesSlow_isNotSpilledFromAgain() {
        DataPlane p = fixedLimit(farWeightedNearFree());
        speaks(p, 3);
        List<Decision> open = new ArrayList<>();
        offerLasting(p, 60, 4, open, 10, 150);
        // the control plane finds f1 slow and prices it so (350 ms, 400 with the round trip: first tokens expected
        // 400 / 150 times later, the floor with them) before this gateway's answers show it
        assertThat(p.swap(farWeightedNearFree(2, 0, 350))).isTrue();
        ticker.advanceSeconds(10); // and falls silent
        offerLasting(p, 60, 2, open, 30, 400);
        // 30 ms is no queue against a floor of 26.7 ms (it would be against the 10 ms of before: beyond 2 × 10 + 5),
        // and answers of 400 ms are what the new plan says
        assertThat(offerLasting(p, 60, 4, open, 30, 400)).isZero();
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
    }

    @Test
    void route_spill_beyondChanceWithoutAQueue_endsWhereChanceWould() {
        DataPlane p = fixedLimit(farWeightedNearFree());
        List<Decision> open = new ArrayList<>();
        offer(p, 100, 4, open, 10);
        assertThat(offer(p, 200, 3, open, 10)).isPositive(); // beyond chance: spilling, though no queue shows
        offer(p, 100, 2.5, open, 10);
        assertThat(offer(p, 100, 4, open, 10)).isZero(); // back within chance of the allowance: no evidence left
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
    }

    @Test
    void route_spill_aNewSnapshotEndsASpillUnderWay() {
        DataPlane p = fixedLimit(farWeightedNearFree(1, 0));
        List<Decision> open = new ArrayList<>();
        offer(p, 100, 4, open, 10);
        offer(p, 200, 3, open, 100);
        offer(p, 100, 2.5, open, 10);
        p.swap(farWeightedNearFree(2, 0)); // the control plane's plan for what it saw: the spill starts afresh
        assertThat(offer(p, 100, 4, open, 10)).isZero();
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
    }

    @Test
    void route_spill_keepsAKeyOnOneEngineOfTheGroup_withinBoundedLoadOfTheGroupsMeanFill() {
        // n1 and n2 hold 100 of this gateway's requests each at their capacity (100 req/s × 1,002 ms)
        DataPlane p = fixedLimit(farWeightedTwoNear(1000));
        long key = 0;
        while (Hashing.unit(Hashing.mix(key ^ Hashing.SPILL_SALT)) > 0.5) {
            key++; // a key among the first half to spill
        }
        List<Decision> open = new ArrayList<>();
        for (int i = 0; i < 1200; i++) { // 400 req/s for 3 s, one conversation: beyond chance of the allowance (90)
            ticker.advanceSeconds(1 / 400.0);
            open.add(p.route(RequestMeta.of("chat", key, 5_000_000L + i)));
        }
        List<String> spilled = open.stream().filter(d -> "spill:overload".equals(d.reason()))
                .map(Decision::engineId).toList();
        assertThat(spilled).hasSizeGreaterThan(100);
        // the key's engine of the group first, as long as it stays within bounded load of the group's mean fill
        String first = spilled.get(0);
        assertThat(spilled.subList(0, 20)).containsOnly(first);
        assertThat(p.inFlight("n1") + p.inFlight("n2")).isEqualTo(spilled.size());
        // of the first 60, at most ⌈μ + 3·√μ⌉ for μ = 31 (the mean, counting the one being placed): 48
        assertThat(spilled.subList(0, 60).stream().filter(first::equals).count()).isEqualTo(48);
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
    }

    /**
     * Offers {@code rps} requests a second for {@code seconds}, keys 0, 1, 2 …: the last hundred kept on their engine
     * stay in flight (in {@code open}) and the older ones finish with a time to first token of {@code ttftMs}; those
     * spilled finish at once, so that the engines they went to keep room. Returns how many spilled.
     */
    private long offer(DataPlane p, double rps, double seconds, List<Decision> open, long ttftMs) {
        return offer(p, rps, seconds, open, ttftMs, 100);
    }

    /**
     * {@link #offer}, each request answered {@code lastingMs} after it was placed (first token {@code ttftMs}): in flight
     * at f1 as many as its rate times that.
     */
    private long offerLasting(DataPlane p, double rps, double seconds, List<Decision> open, long ttftMs,
                              double lastingMs) {
        return offer(p, rps, seconds, open, ttftMs, Integer.MAX_VALUE, lastingMs);
    }

    /** {@link #offer} keeping {@code held} requests in flight at f1. */
    private long offer(DataPlane p, double rps, double seconds, List<Decision> open, long ttftMs, int held) {
        return offer(p, rps, seconds, open, ttftMs, held, Double.POSITIVE_INFINITY);
    }

    /**
     * {@link #offer}: each request still in flight {@code lastingMs} after it was placed is answered before the next is
     * placed, and beyond {@code held} in flight the oldest is answered after it.
     */
    private long offer(DataPlane p, double rps, double seconds, List<Decision> open, long ttftMs, int held,
                       double lastingMs) {
        long before = p.status().spills();
        int n = (int) Math.round(rps * seconds);
        for (int i = 0; i < n; i++) {
            ticker.advanceSeconds(1 / rps);
            while (!open.isEmpty() && ticker.nanos() - open.get(0).startNanos >= lastingMs * 1e6) {
                p.onFinish(open.remove(0), Outcome.SUCCESS, ttftMs * 1_000_000L);
            }
            Decision d = p.route(RequestMeta.of("chat", i, 1_000_000L + open.size() + i));
            if (d.routed() && "spill:overload".equals(d.reason())) {
                p.onFinish(d, Outcome.SUCCESS, -1);
            } else {
                open.add(d);
            }
            if (open.size() > held) { // by default f1 keeps a hundred in flight: loaded, far from any limit
                p.onFinish(open.remove(0), Outcome.SUCCESS, ttftMs * 1_000_000L);
            }
        }
        return p.status().spills() - before;
    }

    /**
     * Offers 10 requests a second for {@code seconds} to {@link #twoEngines} (planned 101 ms a request: 100 ms and the
     * 1 ms round trip), each answered after {@code msOnA} on a and 101 ms on b; the control plane confirms the held
     * snapshot every second when {@code speaks}.
     */
    private void answered(DataPlane p, double seconds, double msOnA, boolean speaks) {
        List<Decision> open = new ArrayList<>();
        long key = 0;
        for (int tick = 0; tick < seconds * 1000; tick++) {
            ticker.advanceSeconds(0.001);
            if (tick % 100 == 0) {
                open.add(p.route(RequestMeta.of("m", key, 4 * key))); // every answer's duration measured
                key++;
            }
            if (speaks && tick % 1000 == 999) {
                assertThat(p.swap(p.snapshot())).isTrue();
            }
            open.removeIf(d -> {
                double ms = "a".equals(d.engineId()) ? msOnA : 101;
                if (ticker.nanos() - d.startNanos < ms * 1e6) {
                    return false;
                }
                p.onFinish(d, Outcome.SUCCESS, 10_000_000L);
                return true;
            });
        }
    }

    @Test
    void onFinish_answersFarLongerThanTheHeldPlanWhileTheControlPlaneIsAway_ejectTheEngineForSlowness() {
        DataPlane p = fixedLimit(twoEngines(1, 16, 0.5));
        speaks(p, 3); // then silent: the control plane is away
        answered(p, 20, 101, false);
        assertThat(p.ejections()).isEmpty(); // both as planned
        // a's answers four times as long as planned (its first tokens on time: not a TTFT outlier), b's as planned
        answered(p, 30, 404, false);
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactly("a");
        assertThat(p.ejections().get(0).reason()).contains("the held plan's 101 ms");
    }

    @Test
    void onFinish_slowAnswersWhileTheControlPlaneIsAway_ejectPastTheCapHeldByAFailingEngine() {
        // four engines, a quarter each: the class's cap is one ejected engine, and d fails every request first
        DataPlane p = DataPlane.create("g", fourEngines(), ticker, DataPlaneOptions.builder()
                .inFlightPerCapacity(Double.POSITIVE_INFINITY).ejectionBase(Duration.ofMinutes(5))
                .ejectionMax(Duration.ofMinutes(5)).build());
        speaks(p, 3); // then silent: the control plane is away
        for (long key = 0; p.ejections().isEmpty(); key++) {
            ticker.advanceSeconds(0.01);
            Decision d = p.route(RequestMeta.of("m", key, key));
            p.onFinish(d, "d".equals(d.engineId()) ? Outcome.SERVER_ERROR : Outcome.SUCCESS, 10_000_000L);
        }
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactly("d");
        // a's answers four times as long as planned, b's and c's as planned: they have room for a's plan, and half
        // of the class stays in rotation, so the cap that d holds does not keep a in
        answered(p, 20, 101, false);
        answered(p, 30, 404, false);
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactlyInAnyOrder("a", "d");
        assertThat(p.ejections()).filteredOn(e -> e.engineId().equals("a")).singleElement()
                .extracting(Ejection::reason).asString().contains("ejected past the cap");
    }

    /** Engines a, b, c and d, 10 req/s of planned load each over all gateways, 24 req/s effective; a quarter each. */
    private static Snapshot fourEngines() {
        Fixtures.SnapshotBuilder b = new Fixtures.SnapshotBuilder("g").rtt("c", 1);
        for (String id : List.of("a", "b", "c", "d")) {
            b.engines.put(id, new dev.sextant.snapshot.EngineState("c", "r", "http://" + id + ".invalid", List.of("m"),
                    10, 25, 24, 0.8, 100, 100, 0, 1));
        }
        return b.route("k", "m", List.of(), 0, 0, Map.of("a", 0.25, "b", 0.25, "c", 0.25, "d", 0.25)).build();
    }

    @Test
    void silence_beyondTwiceTheExpectedCadence_saysTheControlPlaneIsAway_beforeItsCadenceIsLearned() {
        // a gateway that has heard no word since its first snapshot (the control plane lost with it, or the gateway
        // restarted from its cache while the control plane is down): with its long-poll's wait known, silence beyond
        // twice that is the control plane away; without it, only max_snapshot_age (5 min) would say so
        DataPlane known = DataPlane.create("g", twoEngines(1, 16, 0.5), ticker, DataPlaneOptions.builder()
                .inFlightPerCapacity(Double.POSITIVE_INFINITY).controlPlaneCadence(Duration.ofSeconds(1)).build());
        answered(known, 20, 101, false);
        answered(known, 30, 404, false);
        assertThat(known.ejections()).extracting(Ejection::engineId).containsExactly("a");

        DataPlane unknown = fixedLimit(twoEngines(1, 16, 0.5));
        answered(unknown, 20, 101, false);
        answered(unknown, 30, 404, false);
        assertThat(unknown.ejections()).isEmpty();
    }

    @Test
    void onFinish_answersFarLongerThanTheHeldPlanWhileTheControlPlaneSpeaks_areLeftToThePlan() {
        DataPlane p = fixedLimit(twoEngines(1, 16, 0.5));
        answered(p, 20, 101, true);
        answered(p, 30, 404, true); // the control loop prices a slow engine within its cycle
        assertThat(p.ejections()).isEmpty();
    }

    @Test
    void onFinish_answersLongerThanTheHeldPlanOnEveryEngine_areTheClassesLoad_notAnOutlier() {
        DataPlane p = fixedLimit(twoEngines(1, 16, 0.5));
        speaks(p, 3);
        answered(p, 20, 101, false);
        // both engines' answers lengthen alike (long prompts, a busier fleet): no peer is faster to take the load
        List<Decision> open = new ArrayList<>();
        for (int i = 0; i < 600; i++) {
            ticker.advanceSeconds(0.1);
            open.add(p.route(RequestMeta.of("m", i, 4L * i)));
            if (open.size() > 4) {
                Decision d = open.remove(0);
                assertThat(ticker.nanos() - d.startNanos).isGreaterThanOrEqualTo(400_000_000L); // about four times the plan
                p.onFinish(d, Outcome.SUCCESS, 10_000_000L);
            }
        }
        assertThat(p.ejections()).isEmpty();
    }

    @Test
    void onFinish_slowAnswersOfAnEngineOfferedBeyondItsPlan_areItsLoad_notAnOutlier() {
        // planned 5 req/s each from here, 6 req/s spare: an allowance of 11, and room on each for the other's plan
        DataPlane p = fixedLimit(twoEngines(1, 16, 0.5));
        List<Decision> open = new ArrayList<>();
        for (int i = 0; i < 120; i++) { // 40 req/s for 3 s: far beyond the plan
            ticker.advanceSeconds(1 / 40.0);
            open.add(p.route(RequestMeta.of("m", i, i)));
        }
        List<Decision> onA = open.stream().filter(d -> "a".equals(d.engineId())).toList();
        open.stream().filter(d -> "b".equals(d.engineId())).limit(3)
                .forEach(d -> p.onFinish(d, Outcome.SUCCESS, 20_000_000L)); // its peer answers in 20 ms
        for (Decision d : onA.subList(0, 6)) {
            p.onFinish(d, Outcome.SUCCESS, 5_000_000_000L); // 5 s: 50 × expected, 250 × its peer
        }
        assertThat(p.ejections()).isEmpty();

        // the same answers at the planned load: an outlier, ejected after 5 in a row
        ticker.advanceSeconds(60);
        for (Decision d : onA.subList(6, 12)) {
            p.onFinish(d, Outcome.SUCCESS, 5_000_000_000L);
        }
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactly("a");
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
    }

    @Test
    void onFinish_aSlowEngineWhosePlanItsPeersCannotTake_staysInRotation() {
        // planned 5 req/s each from here, 2 req/s spare each: ejecting a would put 10 req/s on b, planned to hold 7
        DataPlane p = fixedLimit(twoEngines(1, 12, 0.5));
        ticker.advanceSeconds(60);
        List<Long> keys = slowAnswersOfA(p);
        assertThat(p.ejections()).as("5 s answers at the planned load, but its peer has no room for its plan").isEmpty();
        assertThat(p.route(RequestMeta.of("m", keys.get(0), 1)).engineId()).isEqualTo("a");

        // a plan that sends it a fifth as much: its peer has the room, and the same answers eject it
        DataPlane q = fixedLimit(twoEngines(1, 12, 0.1));
        ticker.advanceSeconds(60);
        slowAnswersOfA(q);
        assertThat(q.ejections()).extracting(Ejection::engineId).containsExactly("a");
    }

    @Test
    void onFinish_aSlowEngineWhosePlanItsPeerTakesWithinItsHeadroom_isEjected() {
        // planned 5 req/s each from here, 10 req/s on each over all gateways: b's effective capacity (12) leaves 2 req/s
        // spare, its capacity (16, the headroom held back for a fault) 6: room for a's 5
        DataPlane p = fixedLimit(twoEngines(1, 12, 16, 0.5));
        ticker.advanceSeconds(60);
        slowAnswersOfA(p);
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactly("a");
    }

    @Test
    void swap_toASnapshotThatSendsASlowEngineMoreThanItsPeersHaveRoomFor_endsItsEjection() {
        List<String> ended = new ArrayList<>();
        DataPlane p = DataPlane.create("g", twoEngines(1, 12, 0.1), ticker, DataPlaneOptions.builder()
                .inFlightPerCapacity(Double.POSITIVE_INFINITY).listener(new DataPlaneListener() {
                    @Override
                    public void onEjectionEnded(Ejection e, String why) {
                        ended.add(e.engineId() + ": " + why);
                    }
                }).build());
        ticker.advanceSeconds(60);
        List<Long> keys = slowAnswersOfA(p);
        assertThat(p.ejections()).hasSize(1);

        assertThat(p.swap(twoEngines(2, 16, 0.2))).as("its peer has room for 2 req/s").isTrue();
        assertThat(p.ejections()).hasSize(1);
        assertThat(p.swap(twoEngines(3, 12, 0.5))).isTrue();
        assertThat(p.ejections()).isEmpty();
        assertThat(ended).containsExactly("a: the policy sends it more from here than the engines in rotation have room"
                + " for");
        assertThat(p.route(RequestMeta.of("m", keys.get(0), 1)).engineId()).isEqualTo("a");
    }

    /**
     * Engines a and b, 10 req/s of planned load each over all gateways and {@code effective} req/s of effective capacity;
     * this gateway's class k (10 req/s) sends {@code toA} of its requests to a and the rest to b.
     */
    private static Snapshot twoEngines(long version, double effective, double toA) {
        return twoEngines(version, effective, effective + 1, toA);
    }

    /** As {@link #twoEngines(long, double, double)}, each engine of {@code capacity} req/s. */
    private static Snapshot twoEngines(long version, double effective, double capacity, double toA) {
        Fixtures.SnapshotBuilder b = new Fixtures.SnapshotBuilder("g").rtt("c", 1);
        b.version = version;
        for (String id : List.of("a", "b")) {
            b.engines.put(id, new dev.sextant.snapshot.EngineState("c", "r", "http://" + id + ".invalid", List.of("m"),
                    10, capacity, effective, 0.8, 100, 100, 0, 1));
        }
        return b.route("k", "m", List.of(), 0, 0, Map.of("a", toA, "b", 1 - toA)).build();
    }

    /** Six requests whose key chose a, each answered in 5 s (50 × expected) while b answers in 20 ms; their keys. */
    private List<Long> slowAnswersOfA(DataPlane p) {
        List<Decision> onA = new ArrayList<>();
        List<Long> keys = new ArrayList<>();
        for (long key = 0; onA.size() < 6; key++) {
            ticker.advanceSeconds(1); // at about the planned rate: a slow answer is an outlier only within the plan
            Decision d = p.route(RequestMeta.of("m", key, key));
            if ("a".equals(d.engineId())) {
                onA.add(d);
                keys.add(key);
            } else {
                p.onFinish(d, Outcome.SUCCESS, 20_000_000L);
            }
        }
        for (Decision d : onA) {
            p.onFinish(d, Outcome.SUCCESS, 5_000_000_000L);
        }
        return keys;
    }

    @Test
    void route_spill_passesOverAnEngineWhoseAnswersShowAQueue() {
        DataPlane p = fixedLimit(farWeightedNearFree());
        // n1's answers: 10 ms first, then 100 ms (a queue); one of this gateway's requests still there to tell
        Decision first = p.route(RequestMeta.of("chat", 1, 1));
        assertThat(first.engineId()).isEqualTo("f1");
        List<Decision> onN1 = new ArrayList<>();
        ticker.advanceSeconds(60);
        List<Decision> open = surge(p, 200, 3, new ArrayList<>());
        open.stream().filter(d -> d.engineId().equals("n1")).forEach(onN1::add);
        assertThat(onN1).hasSizeGreaterThan(2);
        p.onFinish(onN1.get(0), Outcome.SUCCESS, 10_000_000L);
        for (Decision d : onN1.subList(1, onN1.size() - 1)) {
            p.onFinish(d, Outcome.SUCCESS, 100_000_000L);
        }
        open.stream().filter(d -> d.engineId().equals("n2")).forEach(d -> p.onFinish(d, Outcome.SUCCESS, 10_000_000L));
        int before = p.inFlight("n1");

        surge(p, 200, 1, open);
        assertThat(p.inFlight("n1")).isEqualTo(before); // still one there, its answers showing a queue: passed over
        assertThat(p.inFlight("n2")).isGreaterThan(0);
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
        p.onFinish(first, Outcome.SUCCESS, -1);
    }

    @Test
    void create_withASnapshotAlreadyOld_countsItsAgeFromBefore_andPastTheLimitStartsInFallback() {
        Snapshot s = Fixtures.simple(3, 0, 1.0);
        DataPlane young = DataPlane.create("g", s, ticker, DataPlaneOptions.defaults(), java.time.Duration.ofSeconds(40));
        assertThat(young.status().ageNanos()).isEqualTo(40_000_000_000L);
        assertThat(young.status().fallback()).isFalse();
        ticker.advanceSeconds(261); // 301 s in all
        assertThat(young.status().fallback()).isTrue();

        DataPlane old = DataPlane.create("g", s, ticker, DataPlaneOptions.defaults(), java.time.Duration.ofHours(2));
        assertThat(old.status().fallback()).isTrue();
        assertThat(old.route(RequestMeta.of("m", 1, 1)).fallback()).isTrue();
        old.swap(s); // confirmed by the control plane: fresh again
        assertThat(old.status().fallback()).isFalse();
        assertThatThrownBy(() -> DataPlane.create("g", s, ticker, DataPlaneOptions.defaults(),
                java.time.Duration.ofSeconds(-1))).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void swap_olderVersion_isIgnored() {
        DataPlane p = plane(Fixtures.simple(5, 0, 1.0));
        assertThat(p.swap(Fixtures.simple(4, 0, 0.5, 0.5))).isFalse();
        assertThat(p.snapshot().version()).isEqualTo(5);
        assertThat(p.swap(Fixtures.simple(6, 0, 0.5, 0.5))).isTrue();
        assertThat(p.status().version()).isEqualTo(6);
    }

    @Test
    void swap_heldVersionWithOtherContent_isIgnored_andTheSameContentOnlyRefreshes() {
        DataPlane p = plane(Fixtures.simple(5, 0, 1.0, 0.0));
        assertThat(p.swap(Fixtures.simple(5, 0, 0.0, 1.0))).isFalse();
        assertThat(p.snapshot().route("g", "k").weights()).containsEntry("e0", 1.0);
        assertThat(p.route(RequestMeta.of("m", 1, 1)).engineId()).isEqualTo("e0");
        assertThat(p.swap(Fixtures.simple(5, 0, 1.0, 0.0))).isTrue();
        assertThat(p.swap(Fixtures.simple(6, 0, 0.0, 1.0))).isTrue();
        assertThat(p.route(RequestMeta.of("m", 1, 2)).engineId()).isEqualTo("e1");
    }

    @Test
    void swap_keepsInFlightCountsOfEnginesThatStay() {
        DataPlane p = plane(Fixtures.simple(1, 0, 1.0));
        Decision d = p.route(RequestMeta.of("m", 1, 1));
        p.swap(Fixtures.simple(2, 0, 0.5, 0.5));
        assertThat(p.inFlight("e0")).isEqualTo(1);
        p.onFinish(d, Outcome.SUCCESS, -1);
        assertThat(p.inFlight("e0")).isZero();
        assertThat(p.status().inFlight()).isZero();
    }

    // ------------------------------------------------------------------ retry budget

    @Test
    void retry_underTotalFailureAtHighUtilization_amplificationStaysWithinTheBudget() {
        double u = 0.95;
        RetryBudget budget = RetryBudget.DEFAULT;
        Snapshot base = Fixtures.simple(1, 0, 0.25, 0.25, 0.25, 0.25);
        Snapshot s = new Snapshot(1, "", "test", u, budget, base.routes(), base.engines(), base.networkRttMs(),
                Fixtures.OBJECTIVE);
        DataPlane p = plane(s);
        int requests = 20_000;
        double seconds = 100;
        long attempts = 0;
        for (int i = 0; i < requests; i++) {
            ticker.advanceSeconds(seconds / requests);
            Decision d = p.route(RequestMeta.of("m", i, i));
            while (d.routed()) {
                attempts++;
                d = p.retry(d, Outcome.SERVER_ERROR); // every engine fails every time
            }
        }
        double amplification = attempts / (double) requests;
        double bound = 1 + budget.ratio(u) + (budget.minRetriesPerSecond() * seconds + 1) / requests;
        System.out.printf("retry amplification at u=%.2f, 100%% failure: %.4f (bound 1 + r(u) + floor = %.4f)%n", u,
                amplification, bound);
        assertThat(amplification).isLessThanOrEqualTo(bound);
        assertThat(amplification).isGreaterThan(1 + budget.ratio(u) * 0.9); // the budget is used, not just refused
    }

    /**
     * One gateway, two classes on engines of their own: {@code hot}'s engines are {@code hotU} used, {@code cold}'s
     * 10%; the fleet as a whole is at 50%, where the default curve gives 20% to both.
     */
    static Snapshot hotAndCold(long version, double hotU, RetryBudget budget) {
        return new Fixtures.SnapshotBuilder("g").version(version).utilization(0.5).budget(budget).rtt("c", 1)
                .engine("h0", "c", "r", 100, "mh").engine("h1", "c", "r", 100, "mh")
                .engine("c0", "c", "r", 100, "mc").engine("c1", "c", "r", 100, "mc")
                .routeAt("hot", "mh", hotU, Map.of("h0", 0.5, "h1", 0.5))
                .routeAt("cold", "mc", 0.1, Map.of("c0", 0.5, "c1", 0.5))
                .build();
    }

    /** Routes a request of {@code model} that fails with a server error; true when its retry was allowed. */
    private static boolean failsAndRetries(DataPlane p, String model, long id) {
        Decision first = p.route(RequestMeta.of(model, id, id));
        assertThat(first.routed()).isTrue();
        Decision retry = p.retry(first, Outcome.SERVER_ERROR);
        if (!retry.routed()) {
            assertThat(retry.refusal()).isEqualTo(Refusal.RETRY_BUDGET_EXHAUSTED);
            return false;
        }
        p.onFinish(retry, Outcome.SUCCESS, -1);
        return true;
    }

    @Test
    void retry_saturatedClass_isCutWhileAnotherClassAtTheSameGatewayStillRetries() {
        RetryBudget noFloor = new RetryBudget(RetryBudget.DEFAULT.curve(), 0);
        DataPlane p = plane(hotAndCold(1, 1.0, noFloor));
        int requests = 2_000;
        int hot = 0;
        int cold = 0;
        for (int i = 0; i < requests; i++) { // interleaved: one gateway, both classes at once
            hot += failsAndRetries(p, "mh", 2L * i) ? 1 : 0;
            cold += failsAndRetries(p, "mc", 2L * i + 1) ? 1 : 0;
        }
        // each class retries what its own deposits pay for: r(1.0) = 1% and r(0.1) = 20%, not the fleet's 20%
        assertThat(hot).isBetween((int) (0.01 * requests) - 1, (int) (0.01 * requests) + 1);
        assertThat(cold).isBetween((int) (0.2 * requests) - 1, (int) (0.2 * requests) + 1);
        assertThat(p.status().inFlight()).isZero();
    }

    @Test
    void retry_idleClassesBankedTokens_doNotPayForASaturatedClassesRetries() {
        RetryBudget noFloor = new RetryBudget(RetryBudget.DEFAULT.curve(), 0);
        DataPlane p = plane(hotAndCold(1, 1.0, noFloor));
        for (int i = 0; i < 1_000; i++) { // cold banks 200 deposits of 20%, capped at 100 retries
            p.onFinish(p.route(RequestMeta.of("mc", i, i)), Outcome.SUCCESS, -1);
        }
        assertThat(p.status().retryTokens()).isCloseTo(100, offset(0.5));

        assertThat(failsAndRetries(p, "mh", 1_000_001)).isFalse(); // hot's own budget holds 0.01
        assertThat(failsAndRetries(p, "mc", 1_000_002)).isTrue();
    }

    @Test
    void retry_floor_allowsEachClassItsOwnRetriesPerSecond() {
        RetryBudget floorOnly = new RetryBudget(List.of(new RetryBudget.Point(0, 0)), 1.0);
        DataPlane p = plane(hotAndCold(1, 1.0, floorOnly));

        assertThat(failsAndRetries(p, "mh", 1)).isTrue();
        assertThat(failsAndRetries(p, "mh", 2)).isFalse(); // paced: one per second
        assertThat(failsAndRetries(p, "mc", 3)).isTrue(); // the other class's floor is its own
        assertThat(failsAndRetries(p, "mc", 4)).isFalse();
        ticker.advanceSeconds(1);
        assertThat(failsAndRetries(p, "mh", 5)).isTrue();
        assertThat(failsAndRetries(p, "mc", 6)).isTrue();
    }

    @Test
    void swap_keepsEachClasssBankedTokens_andForgetsTheBudgetOfAClassThatIsGone() {
        RetryBudget noFloor = new RetryBudget(RetryBudget.DEFAULT.curve(), 0);
        DataPlane p = plane(hotAndCold(1, 1.0, noFloor));
        for (int i = 0; i < 100; i++) {
            p.onFinish(p.route(RequestMeta.of("mh", 2L * i, 2L * i)), Outcome.SUCCESS, -1);
            p.onFinish(p.route(RequestMeta.of("mc", 2L * i + 1, 2L * i + 1)), Outcome.SUCCESS, -1);
        }
        double banked = p.status().retryTokens(); // hot 100 × 1%, cold 100 × 20%
        assertThat(banked).isCloseTo(21, offset(1e-9));

        // the next snapshot says hot's engines are idle now: its deposits rise, what it banked stays
        assertThat(p.swap(hotAndCold(2, 0.1, noFloor))).isTrue();
        assertThat(p.status().retryTokens()).isEqualTo(banked);
        for (int i = 0; i < 10; i++) {
            p.onFinish(p.route(RequestMeta.of("mh", 1_000 + i, 1_000 + i)), Outcome.SUCCESS, -1);
        }
        assertThat(p.status().retryTokens()).isCloseTo(banked + 10 * 0.2, offset(1e-9));

        Snapshot onlyHot = new Fixtures.SnapshotBuilder("g").version(3).budget(noFloor).rtt("c", 1)
                .engine("h0", "c", "r", 100, "mh").engine("h1", "c", "r", 100, "mh")
                .routeAt("hot", "mh", 0.1, Map.of("h0", 0.5, "h1", 0.5)).build();
        assertThat(p.swap(onlyHot)).isTrue();
        assertThat(p.status().retryTokens()).isCloseTo(1 + 10 * 0.2, offset(1e-9));
    }

    @Test
    void retry_routeWithoutAllowedUtilization_depositsAtTheFleetsUtilization() {
        RetryBudget noFloor = new RetryBudget(RetryBudget.DEFAULT.curve(), 0);
        Snapshot base = Fixtures.simple(1, 0, 0.5, 0.5); // its route has no allowed utilization
        DataPlane p = plane(new Snapshot(1, "", "test", 0.95, noFloor, base.routes(), base.engines(),
                base.networkRttMs(), Fixtures.OBJECTIVE));
        for (int i = 0; i < 1_000; i++) {
            p.onFinish(p.route(RequestMeta.of("m", i, i)), Outcome.SUCCESS, -1);
        }
        assertThat(p.status().retryTokens()).isCloseTo(1_000 * 0.01, offset(1e-9));
    }

    @Test
    void retry_afterARefusedConnection_spendsNoTokenButStaysWithinTheAttemptLimit() {
        Snapshot s = Fixtures.simple(1, 0, 0.25, 0.25, 0.25, 0.25);
        DataPlane p = plane(s);
        // Spend the budget down with server errors (each retry of one costs a token) until a retry is refused.
        int i = 0;
        Decision refused;
        do {
            refused = p.retry(p.route(RequestMeta.of("m", i, i)), Outcome.SERVER_ERROR);
            p.onFinish(refused, Outcome.CANCELLED, -1);
            i++;
        } while (refused.routed() && i < 10_000);
        assertThat(refused.refusal()).isEqualTo(Refusal.RETRY_BUDGET_EXHAUSTED);

        // With the budget empty, refused connections are still retried on other engines, up to 3 attempts.
        Decision d = p.route(RequestMeta.of("m", 7, 10_001));
        double tokens = p.status().retryTokens();
        assertThat(tokens).isLessThan(1);
        List<String> engines = new java.util.ArrayList<>(List.of(d.engineId()));
        Decision last = d;
        for (Decision next = p.retry(d, Outcome.CONNECT_ERROR); next.routed();
             next = p.retry(next, Outcome.CONNECT_ERROR)) {
            engines.add(next.engineId());
            last = next;
        }
        assertThat(engines).hasSize(3).doesNotHaveDuplicates();
        assertThat(last.attempt()).isEqualTo(3);
        assertThat(p.status().retryTokens()).isEqualTo(tokens);
        // and a server error, which did load an engine, is still refused
        assertThat(p.retry(p.route(RequestMeta.of("m", 8, 10_002)), Outcome.SERVER_ERROR).refusal())
                .isEqualTo(Refusal.RETRY_BUDGET_EXHAUSTED);
        assertThat(p.status().inFlight()).isZero();
    }

    @Test
    void retry_passesOverAnEngineWhoseLastAttemptFailed_unlessNothingElseIsLeft() {
        Snapshot s = Fixtures.simple(1, 0, 0.25, 0.25, 0.25, 0.25);
        SlotTable t = SlotTable.of(List.of("e0", "e1", "e2", "e3"), new double[] {1, 1, 1, 1});
        long key = 4242;
        int[] order = new int[4];
        t.fill(key, order);
        DataPlane p = plane(s);
        // another request just failed on the key's second choice: one failure, far from an ejection
        Decision other = p.route(RequestMeta.of("m", keyOn(p, "e" + order[1]), 1));
        p.onFinish(other, Outcome.SERVER_ERROR, -1);
        assertThat(p.ejections()).isEmpty();

        Decision first = p.route(RequestMeta.of("m", key, 2));
        assertThat(first.engineId()).isEqualTo("e" + order[0]);
        Decision retried = p.retry(first, Outcome.CONNECT_ERROR);
        assertThat(retried.engineId()).isEqualTo("e" + order[2]);

        // once every other engine is failing, the retry still goes somewhere (the first of them)
        DataPlane q = plane(s);
        for (int e = 0; e < 4; e++) {
            if (e != order[0]) {
                q.onFinish(q.route(RequestMeta.of("m", keyOn(q, "e" + e), 10 + e)), Outcome.SERVER_ERROR, -1);
            }
        }
        Decision again = q.retry(q.route(RequestMeta.of("m", key, 3)), Outcome.CONNECT_ERROR);
        assertThat(again.routed()).isTrue();
        assertThat(again.engineId()).isEqualTo("e" + order[1]);
    }

    @Test
    void retry_whenEveryWeightedEngineIsDownOrFailing_spillsToTheNearestHealthyAllowedEngine() {
        // the route puts everything on the near cluster; the far clusters are allowed but unweighted
        Snapshot s = new Fixtures.SnapshotBuilder("g").rtt("near", 2).rtt("mid", 30).rtt("far", 60)
                .engine("n1", "near", "r1", 100, "m").engine("n2", "near", "r1", 100, "m")
                .engine("m1", "mid", "r2", 100, "m").engine("f1", "far", "r3", 100, "m")
                .route("k", "m", List.of(), 0, 0, Map.of("n1", 0.5, "n2", 0.5, "m1", 0.0, "f1", 0.0))
                .build();
        DataPlane p = plane(s);
        Decision d = p.route(RequestMeta.of("m", 99, 1));
        Decision second = p.retry(d, Outcome.CONNECT_ERROR);
        assertThat(second.engineId()).isIn("n1", "n2").isNotEqualTo(d.engineId());
        Decision third = p.retry(second, Outcome.CONNECT_ERROR);
        assertThat(third.engineId()).isEqualTo("m1"); // the nearest allowed engine outside the route's weights
        assertThat(third.fallback()).isFalse();
        assertThat(third.attempt()).isEqualTo(3);
        p.onFinish(third, Outcome.SUCCESS, 1_000_000L);
        assertThat(p.status().inFlight()).isZero();

        // the near cluster keeps failing (not yet ejected): a new request's first retry leaves it at once
        Decision next = p.route(RequestMeta.of("m", 98, 2));
        Decision retried = p.retry(next, Outcome.CONNECT_ERROR);
        assertThat(retried.engineId()).isEqualTo("m1");
        p.onFinish(retried, Outcome.SUCCESS, 1_000_000L);
        assertThat(p.status().inFlight()).isZero();
    }

    @Test
    void retry_landingOnAnEngineOfferedBeyondItsAllowance_countsTowardItsRate_andSpillsAsAFirstAttemptWould() {
        // n1, n2, n3 share the class; n1 and n2 answer "busy" (not a failure: never ejected), so n3 takes its own keys
        // and the retries from both. m1 is allowed and unweighted. n3's allowance from here: 10 × 1/3 planned + 80
        // spare, spilling beyond 83 + 3·√(83/2) ≈ 103 req/s; its first attempts alone come to a third of 200 req/s.
        Snapshot s = new Fixtures.SnapshotBuilder("g").rtt("near", 2).rtt("mid", 30)
                .budget(new RetryBudget(List.of(new RetryBudget.Point(0.5, 1.0)), 1000))
                .engine("n1", "near", "r", 100, "m").engine("n2", "near", "r", 100, "m")
                .engine("n3", "near", "r", 100, "m").engine("m1", "mid", "r", 100, "m")
                .route("k", "m", List.of(), 0, 0, Map.of("n1", 1 / 3.0, "n2", 1 / 3.0, "n3", 1 / 3.0, "m1", 0.0))
                .build();
        DataPlane p = fixedLimit(s);
        Map<String, Integer> served = new TreeMap<>();
        List<Decision> open = new ArrayList<>();
        int retriedAway = 0;
        for (int i = 0; i < 600; i++) { // 3 s at 200 req/s, nothing finishing
            ticker.advanceSeconds(1 / 200.0);
            Decision d = p.route(RequestMeta.of("m", i, i));
            while (d.routed() && (d.engineId().equals("n1") || d.engineId().equals("n2"))) {
                d = p.retry(d, Outcome.ENGINE_BUSY);
            }
            assertThat(d.routed()).as("request %d: %s", i, d).isTrue();
            if (d.attempt() > 1 && d.engineId().equals("m1")) {
                retriedAway++;
                assertThat(d.reason()).isEqualTo("retry:engine-busy,spill:overload");
            }
            served.merge(d.engineId(), 1, Integer::sum);
            open.add(d);
        }
        assertThat(p.ejections()).isEmpty();
        assertThat(retriedAway).as("retries spilled to m1, of %s", served).isGreaterThan(30);
        assertThat(p.status().spills()).isGreaterThanOrEqualTo(retriedAway);
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
        assertThat(p.status().inFlight()).isZero();
    }

    @Test
    void onFinish_enginesThatCannotBeReached_areEjectedPastTheCap_whileHalfTheAllowedEnginesStay() {
        // the class's three weighted engines n1..n3 (a cap of one) are cut off from this gateway; m1..m3 are allowed
        Snapshot s = threeNearThreeFarther();
        DataPlane p = plane(s);
        Map<String, Long> keys = new TreeMap<>();
        for (String e : List.of("n1", "n2", "n3")) {
            long key = keyOn(p, e);
            keys.put(e, key);
            failRun(p, key, Outcome.CONNECT_ERROR);
        }
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactlyInAnyOrder("n1", "n2", "n3");
        assertThat(p.ejections()).filteredOn(e -> e.reason().contains("past the cap")).hasSize(2)
                .allSatisfy(e -> assertThat(e.untilNanos() - e.sinceNanos()).isEqualTo(5_000_000_000L));
        // a first attempt goes where a retry would: the nearest healthy allowed engine
        Decision d = p.route(RequestMeta.of("m", 7, 100));
        assertThat(d.engineId()).startsWith("m");
        assertThat(d.reason()).isEqualTo("spill:ejected");
        p.onFinish(d, Outcome.SUCCESS, -1);

        // past its 5 s, an engine ejected past the cap is half open: one request tries it while the others keep away,
        // and one more failed connection ejects it again
        String retried = p.ejections().stream().filter(e -> e.reason().contains("past the cap"))
                .map(Ejection::engineId).findFirst().orElseThrow();
        long key = keys.get(retried);
        ticker.advanceSeconds(5.1);
        Decision trial = p.route(RequestMeta.of("m", key, 101));
        assertThat(trial.engineId()).isEqualTo(retried);
        Decision meanwhile = p.route(RequestMeta.of("m", key, 102)); // the other half-open one's trial, or m1..m3
        assertThat(meanwhile.engineId()).isNotEqualTo(retried);
        p.onFinish(meanwhile, Outcome.SUCCESS, -1);
        p.onFinish(trial, Outcome.CONNECT_ERROR, -1);
        assertThat(p.ejections()).extracting(Ejection::engineId).contains(retried);

        // an engine that answers with errors is under the cap as before
        DataPlane q = plane(s);
        for (String e : List.of("n1", "n2")) {
            long k = keyOn(q, e);
            failRun(q, k, Outcome.SERVER_ERROR);
        }
        assertThat(q.ejections()).hasSize(1);
    }

    @Test
    void onFinish_enginesThatCrash_areEjectedPastTheCap_onceTheirConnectionsFail() {
        // a cluster's engines crash: the requests each held end with cut connections (the engine was reached), then
        // every new connection is refused. The latest evidence is what counts: they cannot be reached now, so all
        // three leave rotation, not only the one under the class's cap while the others fail every first attempt
        Snapshot s = threeNearThreeFarther();
        DataPlane p = plane(s);
        Map<String, Long> keys = new TreeMap<>();
        Map<String, List<Decision>> held = new TreeMap<>();
        for (String e : List.of("n1", "n2", "n3")) {
            long key = keyOn(p, e);
            keys.put(e, key);
            List<Decision> open = new ArrayList<>();
            for (int i = 0; i < 5; i++) { // a run of five cut connections: n1 takes the class's one place under the cap
                open.add(p.route(RequestMeta.of("m", key, 10 + i)));
            }
            assertThat(open).extracting(Decision::engineId).containsOnly(e);
            held.put(e, open);
        }
        held.values().forEach(open -> open.forEach(d -> p.onFinish(d, Outcome.SERVER_ERROR, -1)));
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactly("n1");
        for (String e : List.of("n2", "n3")) { // the next attempt on each finds its connection refused
            Decision d = p.route(RequestMeta.of("m", keys.get(e), 20));
            assertThat(d.engineId()).isEqualTo(e);
            p.onFinish(d, Outcome.CONNECT_ERROR, -1);
        }
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactlyInAnyOrder("n1", "n2", "n3");
        assertThat(p.ejections()).filteredOn(e -> e.reason().contains("past the cap")).hasSize(2);
        for (String e : List.of("n1", "n2", "n3")) {
            Decision d = p.route(RequestMeta.of("m", keys.get(e), 30));
            assertThat(d.engineId()).startsWith("m");
            assertThat(d.reason()).isEqualTo("spill:ejected");
            p.onFinish(d, Outcome.SUCCESS, -1);
        }
    }

    @Test
    void onFinish_enginesThatFailEveryAttempt_areEjectedPastTheCap_whileTheEnginesLeftAnswerFromHere() {
        // a bad deployment: n1..n3 answer every request with a server error, the farther m1..m3 answer
        DataPlane p = plane(threeNearThreeFarther());
        Map<String, Long> keys = new TreeMap<>();
        for (String e : List.of("n1", "n2", "n3")) {
            keys.put(e, keyOn(p, e));
        }
        failEveryAttempt(p, keys, true);
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactlyInAnyOrder("n1", "n2", "n3");
        assertThat(p.ejections()).filteredOn(e -> e.reason().contains("fails every attempt while the engines left"))
                .hasSize(2).allSatisfy(e -> assertThat(e.untilNanos() - e.sinceNanos()).isEqualTo(5_000_000_000L));
        String past = p.ejections().stream().filter(e -> e.reason().contains("past the cap"))
                .map(Ejection::engineId).findFirst().orElseThrow();
        Decision d = p.route(RequestMeta.of("m", keys.get(past), 50));
        assertThat(d.engineId()).startsWith("m");
        p.onFinish(d, Outcome.SUCCESS, -1);

        // back after 5 s half open: a failed trial ejects it again at once, a successful one puts it back in full
        ticker.advanceSeconds(5.1);
        Decision trial = p.route(RequestMeta.of("m", keys.get(past), 51));
        assertThat(trial.engineId()).isEqualTo(past);
        Decision meanwhile = p.route(RequestMeta.of("m", keys.get(past), 52));
        assertThat(meanwhile.engineId()).isNotEqualTo(past);
        p.onFinish(meanwhile, Outcome.SUCCESS, -1);
        p.onFinish(trial, Outcome.SERVER_ERROR, -1);
        assertThat(p.route(RequestMeta.of("m", keys.get(past), 53)).engineId()).isNotEqualTo(past);
        ticker.advanceSeconds(5.1);
        trial = p.route(RequestMeta.of("m", keys.get(past), 54));
        assertThat(trial.engineId()).isEqualTo(past);
        p.onFirstToken(trial, DataPlane.NOT_STREAMED);
        p.onFinish(trial, Outcome.SUCCESS, 10_000_000L);
        assertThat(p.route(RequestMeta.of("m", keys.get(past), 55)).engineId()).isEqualTo(past);

        // the same errors with no answer from any other engine since they began: no evidence that this gateway's
        // requests fail only there, so the cap holds
        DataPlane q = plane(threeNearThreeFarther());
        failEveryAttempt(q, keys, false);
        assertThat(q.ejections()).hasSize(1);
    }

    /**
     * n1..n3 (their keys in {@code keys}) fail every attempt with a server error, twice the run that ejects; with
     * {@code othersAnswer} one retry is answered by another engine after their runs began.
     */
    private void failEveryAttempt(DataPlane p, Map<String, Long> keys, boolean othersAnswer) {
        for (String e : keys.keySet()) {
            Decision d = p.route(RequestMeta.of("m", keys.get(e), 1));
            assertThat(d.engineId()).isEqualTo(e);
            p.onFinish(d, Outcome.SERVER_ERROR, -1);
        }
        ticker.advanceSeconds(0.01);
        if (othersAnswer) {
            Decision d = p.route(RequestMeta.of("m", keys.get("n1"), 2));
            p.onFinish(d, Outcome.SERVER_ERROR, -1);
            Decision r = p.retry(d, Outcome.SERVER_ERROR);
            assertThat(r.engineId()).startsWith("m");
            p.onFirstToken(r, DataPlane.NOT_STREAMED);
            p.onFinish(r, Outcome.SUCCESS, 10_000_000L);
        }
        for (int i = 0; i < 10; i++) {
            for (String e : keys.keySet()) {
                Decision d = p.route(RequestMeta.of("m", keys.get(e), 10 + i));
                p.onFinish(d, keys.containsKey(d.engineId()) ? Outcome.SERVER_ERROR : Outcome.SUCCESS, -1);
            }
        }
    }

    @Test
    void route_aConversationSpilledWhileItsEnginesAreEjected_keepsItsEngine_whileThatEngineKeepsUp() {
        DataPlane p = plane(threeNearThreeFarther());
        for (String e : List.of("n1", "n2", "n3")) {
            failRun(p, keyOn(p, e), Outcome.CONNECT_ERROR);
        }
        long conversation = 1_000_000;
        Decision first = p.route(RequestMeta.of("m", conversation, 1));
        assertThat(first.reason()).isEqualTo("spill:ejected");
        String home = first.engineId();
        p.onFinish(first, Outcome.SUCCESS, -1);
        // other conversations fill m1..m3 until none has room for a new one: its next turn still goes home, where its
        // cache is, while home holds no more than bounded load's slack over its capacity
        List<Decision> open = new ArrayList<>();
        long other = 2_000_000;
        Decision d;
        do {
            d = p.route(RequestMeta.of("m", other++, other));
            open.add(d);
        } while (!d.reason().equals("least-full"));
        Decision next = p.route(RequestMeta.of("m", conversation, 2));
        assertThat(next.engineId()).isEqualTo(home);
        assertThat(next.reason()).isEqualTo("recent");
        p.onFinish(next, Outcome.SUCCESS, -1);
        for (int i = 0; i < 200; i++) { // far beyond: it goes where the spill sends a new one
            open.add(p.route(RequestMeta.of("m", other++, other)));
        }
        Decision beyond = p.route(RequestMeta.of("m", conversation, 3));
        assertThat(beyond.reason()).isEqualTo("least-full");
        p.onFinish(beyond, Outcome.SUCCESS, -1);
        open.forEach(o -> p.onFinish(o, Outcome.SUCCESS, -1));
        assertThat(p.status().inFlight()).isZero();
    }

    @Test
    void route_whileAnEngineIsEjected_theOthersBoundIsTheirShareOfTheEnginesInRotation() {
        // n1 of three equal engines ejected: its keys walk to n2 and n3, which then hold half of the requests each.
        // Against a third, both were over their bound, and each request went to whichever held fewer at that moment
        DataPlane p = plane(threeNearThreeFarther());
        failRun(p, keyOn(p, "n1"), Outcome.CONNECT_ERROR);
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactly("n1");
        Map<Long, java.util.Set<String>> engines = new TreeMap<>();
        List<Decision> open = new ArrayList<>();
        for (int turn = 0; turn < 3; turn++) {
            for (long conversation = 0; conversation < 100; conversation++) {
                Decision d = p.route(RequestMeta.of("m", conversation, 1000 * turn + conversation));
                engines.computeIfAbsent(conversation, c -> new java.util.TreeSet<>()).add(d.engineId());
                open.add(d);
            }
        }
        assertThat(engines.values()).as("each conversation's turns, all in flight").allSatisfy(e -> {
            assertThat(e).hasSize(1);
            assertThat(e.iterator().next()).isIn("n2", "n3");
        });
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
    }

    @Test
    void onFinish_enginesThatCannotBeReached_stayInRotation_whenEjectingThemWouldLeaveLessThanHalf() {
        // a gateway whose own connections fail (its descriptors spent, say): every engine refuses it for a moment
        DataPlane p = plane(Fixtures.simple(1, 0, 0.25, 0.25, 0.25, 0.25));
        for (int e = 0; e < 4; e++) {
            long key = keyOn(p, "e" + e);
            failRun(p, key, Outcome.CONNECT_ERROR);
        }
        // one under the cap, one past it; the other half stays
        assertThat(p.ejections()).hasSize(2);
    }

    @Test
    void onFinish_enginesThatCannotBeReached_areEjectedPastHalf_whileTheEnginesLeftAnswerFromHere() {
        // three of four engines cut off from this gateway while the fourth answers: not the gateway's own failure
        DataPlane p = plane(Fixtures.simple(1, 0, 0.25, 0.25, 0.25, 0.25));
        long[] keys = new long[4];
        for (int e = 0; e < 4; e++) {
            keys[e] = keyOn(p, "e" + e);
        }
        for (int i = 0; i < 5; i++) { // the runs of failed connections interleaved with e3's answers, as traffic is
            for (int e = 0; e < 3; e++) {
                ticker.advanceSeconds(0.01);
                p.onFinish(p.route(RequestMeta.of("m", keys[e], 10 * i + e)), Outcome.CONNECT_ERROR, -1);
                Decision answered = p.route(RequestMeta.of("m", keys[3], 100 + 10 * i + e));
                assertThat(answered.engineId()).isEqualTo("e3");
                ticker.advanceSeconds(0.01);
                p.onFirstToken(answered, DataPlane.NOT_STREAMED);
                p.onFinish(answered, Outcome.SUCCESS, 10_000_000L);
            }
        }
        assertThat(p.ejections()).extracting(Ejection::engineId).containsExactlyInAnyOrder("e0", "e1", "e2");
        assertThat(p.ejections()).filteredOn(e -> e.reason().contains("while the engines left in rotation answer"))
                .hasSize(1);
        // every request now goes to the engine that answers, none to a failed connection first
        for (int e = 0; e < 3; e++) {
            Decision d = p.route(RequestMeta.of("m", keys[e], 200 + e));
            assertThat(d.engineId()).isEqualTo("e3");
            p.onFinish(d, Outcome.SUCCESS, -1);
        }

        // the same runs where e3's answers came from attempts begun before them: no evidence that this gateway still
        // reaches anything, so half stay in rotation as in the test above
        DataPlane q = plane(Fixtures.simple(1, 0, 0.25, 0.25, 0.25, 0.25));
        Decision before = q.route(RequestMeta.of("m", keys[3], 300));
        ticker.advanceSeconds(0.01);
        for (int e = 0; e < 3; e++) {
            failRun(q, keys[e], Outcome.CONNECT_ERROR);
        }
        q.onFirstToken(before, DataPlane.NOT_STREAMED);
        q.onFinish(before, Outcome.SUCCESS, 10_000_000L);
        assertThat(q.ejections()).hasSize(2);
    }

    @Test
    void route_engineOfferedBeyondItsPlanAndQueueingWithNowhereToSpill_shedsLowerPrioritiesHere_neverTheHighest() {
        Map<String, Double> w = Map.of("e0", 0.5, "e1", 0.5);
        Fixtures.SnapshotBuilder b = new Fixtures.SnapshotBuilder("g").rtt("c", 1);
        for (String id : List.of("e0", "e1")) { // planned 15 req/s each from here (3 classes × 10 × 0.5), no spare
            b.engines.put(id, new dev.sextant.snapshot.EngineState("c", "r", "http://" + id + ".invalid", List.of("m"),
                    15, 16, 15, 0.94, 100, 100, 0, 1));
        }
        Snapshot s = b.route("low", "m", List.of(), 0, 0, w).route("normal", "m", List.of(), 1, 0, w)
                .route("high", "m", List.of(), 2, 0, w).build();
        DataPlane p = fixedLimit(s);
        Map<Integer, int[]> byPriority = new java.util.TreeMap<>(); // priority → {routed, shed}
        List<Decision> open = new ArrayList<>();
        for (int i = 0; i < 900; i++) { // 90 req/s, three times the plan, the classes in turn, for 10 s
            ticker.advanceSeconds(1 / 90.0);
            int priority = i % 3;
            Decision d = p.route(new RequestMeta("m", List.of(), priority, i, i));
            int[] n = byPriority.computeIfAbsent(priority, x -> new int[2]);
            if (d.routed()) {
                n[0]++;
                open.add(d);
            } else {
                assertThat(d.refusal()).isEqualTo(Refusal.SHED);
                assertThat(d.message()).contains("until the control plane plans for this demand");
                n[1]++;
            }
            if (open.size() > 40) { // about 0.45 s in flight each; first tokens 10 ms, then 100 ms: a queue
                p.onFinish(open.remove(0), Outcome.SUCCESS, i < 100 ? 10_000_000L : 100_000_000L);
            }
        }
        assertThat(byPriority.get(2)[1]).isZero(); // the highest is never shed here
        assertThat(byPriority.get(0)[1]).isGreaterThan(byPriority.get(0)[0]); // the lowest mostly shed
        assertThat(byPriority.get(1)[1]).isPositive(); // at three times the plan, the middle one too
        assertThat(byPriority.get(1)[1]).isLessThanOrEqualTo(byPriority.get(0)[1]); // never before the lowest
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
    }

    /**
     * The same overload where the higher priority is another model's, served by other engines: shedding the lower one
     * on its own engines would keep room for nothing that can be sent there, so it is not shed here (its queue is the
     * per-engine limit's and the control plane's to bound).
     */
    @Test
    void route_engineOfferedBeyondItsPlan_thatNoHigherPriorityMayUse_shedsNothingHere() {
        Fixtures.SnapshotBuilder b = new Fixtures.SnapshotBuilder("g").rtt("c", 1);
        for (String id : List.of("e0", "e1")) { // planned 15 req/s each from here, no spare
            b.engines.put(id, new dev.sextant.snapshot.EngineState("c", "r", "http://" + id + ".invalid", List.of("m"),
                    15, 16, 15, 0.94, 100, 100, 0, 1));
        }
        b.engines.put("f0", new dev.sextant.snapshot.EngineState("c", "r", "http://f0.invalid", List.of("m2"), 15, 16,
                15, 0.94, 100, 100, 0, 1));
        Snapshot s = b.route("low", "m", List.of(), 0, 0, Map.of("e0", 0.5, "e1", 0.5))
                .route("high", "m2", List.of(), 2, 0, Map.of("f0", 1.0)).build();
        DataPlane p = fixedLimit(s);
        int routed = 0;
        List<Decision> open = new ArrayList<>();
        for (int i = 0; i < 900; i++) { // 90 req/s of the lower priority, three times its plan, for 10 s
            ticker.advanceSeconds(1 / 90.0);
            Decision d = p.route(new RequestMeta("m", List.of(), 0, i, i));
            assertThat(d.routed()).as(d.message()).isTrue();
            routed++;
            open.add(d);
            if (open.size() > 40) {
                p.onFinish(open.remove(0), Outcome.SUCCESS, i < 100 ? 10_000_000L : 100_000_000L);
            }
        }
        assertThat(routed).isEqualTo(900);
        open.forEach(d -> p.onFinish(d, Outcome.SUCCESS, -1));
    }

    @Test
    void engineLimit_keepsAShareForHigherPriorities_lowestRefusedFirst() {
        Map<String, Double> w = Map.of("e0", 0.5, "e1", 0.5);
        Snapshot s = new Fixtures.SnapshotBuilder("g").rtt("c", 1)
                .engine("e0", "c", "r", 100, "m").engine("e1", "c", "r", 100, "m")
                .route("low", "m", List.of(), 0, 0, w).route("normal", "m", List.of(), 1, 0, w)
                .route("high", "m", List.of(), 2, 0, w).build();
        DataPlane p = DataPlane.create("g", s, ticker,
                DataPlaneOptions.builder().maxInFlightPerEngine(4).priorityReserve(0.5).build());
        // each class alone fills both engines up to its share of the limit of 4: 2, 3 and 4 per engine
        Map<Integer, Integer> admitted = new java.util.TreeMap<>();
        for (int priority = 0; priority <= 2; priority++) {
            List<Decision> held = new java.util.ArrayList<>();
            for (int i = 0; i < 20; i++) {
                Decision d = p.route(new RequestMeta("m", List.of(), priority, i, 1000L * priority + i));
                if (!d.routed()) {
                    assertThat(d.refusal()).isEqualTo(Refusal.ENGINE_LIMIT);
                    break;
                }
                held.add(d);
            }
            admitted.put(priority, held.size());
            held.forEach(d -> p.onFinish(d, Outcome.CANCELLED, -1));
        }
        assertThat(admitted).containsExactly(Map.entry(0, 4), Map.entry(1, 6), Map.entry(2, 8));

        // engines full of low-priority work: low and normal are refused, high still gets in
        List<Decision> low = new java.util.ArrayList<>();
        for (int i = 0; i < 4; i++) {
            low.add(p.route(new RequestMeta("m", List.of(), 0, i, 5000L + i)));
        }
        assertThat(low).allMatch(Decision::routed);
        Decision normal = p.route(new RequestMeta("m", List.of(), 1, 7, 6001L));
        Decision high = p.route(new RequestMeta("m", List.of(), 2, 7, 6002L));
        assertThat(normal.routed()).isTrue(); // normal may fill up to 3: one more
        assertThat(high.routed()).isTrue();
        assertThat(p.route(new RequestMeta("m", List.of(), 0, 8, 6003L)).refusal()).isEqualTo(Refusal.ENGINE_LIMIT);
    }

    /** A class weighted on n1..n3 (a cap of one ejected engine), 2 ms away, and allowed on m1..m3, 30 ms away. */
    static Snapshot threeNearThreeFarther() {
        Fixtures.SnapshotBuilder b = new Fixtures.SnapshotBuilder("g").rtt("near", 2).rtt("mid", 30);
        for (String e : List.of("n1", "n2", "n3")) {
            b.engine(e, "near", "r", 100, "m");
        }
        for (String e : List.of("m1", "m2", "m3")) {
            b.engine(e, "mid", "r", 100, "m");
        }
        return b.route("k", "m", List.of(), 0, 0, Map.of("n1", 1 / 3.0, "n2", 1 / 3.0, "n3", 1 / 3.0)).build();
    }

    /** Five attempts of {@code key} (request ids 0 to 4) that end in {@code outcome}: the default run that ejects. */
    static void failRun(DataPlane p, long key, Outcome outcome) {
        for (int i = 0; i < 5; i++) {
            p.onFinish(p.route(RequestMeta.of("m", key, i)), outcome, -1);
        }
    }

    /** A key whose first choice is {@code engine}. */
    static long keyOn(DataPlane p, String engine) {
        for (long key = 0; ; key++) {
            Decision d = p.route(RequestMeta.of("m", key, key));
            p.onFinish(d, Outcome.CANCELLED, -1);
            if (engine.equals(d.engineId())) {
                return key;
            }
        }
    }
}
