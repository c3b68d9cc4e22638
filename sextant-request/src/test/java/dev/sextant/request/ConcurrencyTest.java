package dev.sextant.request;

import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Snapshot;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

class ConcurrencyTest {

    /** Odd versions route only to e0..e2, even versions only to e3..e5: a torn read would mix them. */
    static Snapshot snapshot(long version, SplittableRandom rnd) {
        double[] w = new double[6];
        int from = version % 2 == 1 ? 0 : 3;
        for (int i = from; i < from + 3; i++) {
            w[i] = (0.05 + rnd.nextDouble()) / 3.2;
        }
        // engines of practically unbounded capacity: however many requests the storm offers them on its clock that
        // never moves, none is over what the snapshot expects of it, so every request follows its snapshot's weights
        // (no spill to the other snapshot's engines, which serve the model too)
        Fixtures.SnapshotBuilder b = new Fixtures.SnapshotBuilder("g").version(version).rtt("c", 1);
        for (int i = 0; i < w.length; i++) {
            b.engines.put("e" + i, new EngineState("c", "r", "http://c.invalid", List.of("m"), 10, 1e12, 1e12, 1e-11,
                    100, 100, 0, 1));
        }
        return b.route("k", "m", List.of(), 0, version % 5 == 0 ? 0.2 : 0, Fixtures.weights(w)).build();
    }

    @Test
    void route_duringSwapStorm_neverMixesSnapshotsOrThrows() throws Exception {
        SplittableRandom setup = new SplittableRandom(1);
        int swaps = 200;
        List<Snapshot> snapshots = new ArrayList<>();
        for (long v = 1; v <= swaps + 1; v++) {
            snapshots.add(snapshot(v, setup));
        }
        Set<String> odd = Set.of("e0", "e1", "e2");
        Set<String> even = Set.of("e3", "e4", "e5");
        DataPlane plane = DataPlane.create("g", snapshots.get(0), new Fixtures.ManualTicker(),
                DataPlaneOptions.builder().maxInFlightPerEngine(64).build());
        int routers = 3;
        int perRouter = 60_000;
        ExecutorService pool = Executors.newFixedThreadPool(routers + 1);
        CountDownLatch start = new CountDownLatch(1);
        AtomicBoolean routing = new AtomicBoolean(true);
        List<Future<long[]>> results = new ArrayList<>();
        try {
            for (int r = 0; r < routers; r++) {
                long seed = r;
                results.add(pool.submit(() -> {
                    SplittableRandom rnd = new SplittableRandom(seed);
                    List<Decision> open = new ArrayList<>();
                    long routed = 0;
                    long versionsSeen = 0;
                    long lastVersion = -1;
                    start.await();
                    for (int i = 0; i < perRouter; i++) {
                        Decision d = plane.route(RequestMeta.of("m", rnd.nextInt(1000), rnd.nextLong()));
                        if (d.routed()) {
                            routed++;
                            Set<String> expected = d.snapshotVersion() % 2 == 1 ? odd : even;
                            // outside the weights only where the version's weighted engines are all ejected or
                            // all at their limit; then a conversation spilled before goes back where it was spilled
                            // (recent), or to the least full. The ticker never moves, so ejections past the cap
                            // (an engine failing ten attempts in a row) last to the end and can take all three
                            boolean allOut = d.reason().equals("spill:ejected") || d.reason().equals("nearest-healthy")
                                    || d.reason().equals("spill:limit") || (d.reason().equals("recent")
                                    || d.reason().equals("least-full")) && plane.ejections().stream()
                                    .map(Ejection::engineId).collect(java.util.stream.Collectors.toSet())
                                    .containsAll(expected);
                            if (!expected.contains(d.engineId()) && !allOut) {
                                throw new AssertionError(d + " (" + d.reason() + ") mixes snapshots");
                            }
                            if (rnd.nextInt(4) == 0) {
                                Decision next = plane.retry(d, Outcome.SERVER_ERROR); // under the cap: one engine of six
                                if (next.routed()) {
                                    open.add(next);
                                }
                            } else {
                                open.add(d);
                            }
                        }
                        if (d.snapshotVersion() != lastVersion) {
                            versionsSeen++;
                            lastVersion = d.snapshotVersion();
                        }
                        if (open.size() > 32) {
                            plane.onFinish(open.remove(rnd.nextInt(open.size())), Outcome.SUCCESS, -1);
                        }
                    }
                    open.forEach(d -> plane.onFinish(d, Outcome.SUCCESS, -1));
                    return new long[] {routed, versionsSeen};
                }));
            }
            Future<?> swapper = pool.submit(() -> {
                start.await();
                for (int i = 1; i <= swaps && routing.get(); i++) {
                    plane.swap(snapshots.get(i));
                    Thread.yield();
                }
                return null;
            });
            start.countDown();
            long routed = 0;
            long versionsSeen = 0;
            for (Future<long[]> f : results) {
                long[] r = f.get(120, TimeUnit.SECONDS);
                routed += r[0];
                versionsSeen += r[1];
            }
            routing.set(false);
            swapper.get(120, TimeUnit.SECONDS);
            assertThat(routed).isGreaterThan(routers * perRouter / 2L);
            assertThat(versionsSeen).isGreaterThan(routers); // the storm really crossed swaps
            assertThat(plane.status().inFlight()).isZero();
            for (String e : List.of("e0", "e1", "e2", "e3", "e4", "e5")) {
                assertThat(plane.inFlight(e)).isZero();
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void swap_sameWeightsAgain_reusesTheTables() {
        DataPlane plane = DataPlane.create("g", Fixtures.simple(1, 0, 0.5, 0.5), new Fixtures.ManualTicker(),
                DataPlaneOptions.defaults());
        long key = 77;
        String before = plane.route(RequestMeta.of("m", key, 1)).engineId();
        plane.swap(Fixtures.simple(2, 0, 0.5, 0.5));
        assertThat(plane.route(RequestMeta.of("m", key, 2)).engineId()).isEqualTo(before);
        assertThat(Map.of("v", plane.status().version())).containsEntry("v", 2L);
    }
}
