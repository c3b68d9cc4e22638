package dev.sextant.request;

import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.RetryBudget;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Invariant 1: a request is never sent to an engine outside its allowed set — not on the first try,
 * not on a retry, not in fallback mode, not under any failure — and every attempt is released.
 */
class AllowedSetPropertyTest {
    static final String[] REGIONS = {"r0", "r1", "r2"};
    static final String[] MODELS = {"m0", "m1", "m2"};
    static final Outcome[] OUTCOMES = Outcome.values();

    /** A random world: engines in clusters and regions, classes with residency; weights change per swap. */
    static final class World {
        final SplittableRandom rnd;
        final Map<String, EngineState> engines = new TreeMap<>();
        final Map<String, Double> rtt = new TreeMap<>();
        final Map<String, Route> classes = new TreeMap<>();
        long version = 1;

        World(long seed) {
            rnd = new SplittableRandom(seed);
            int clusters = 1 + rnd.nextInt(6);
            String[] regionOf = new String[clusters];
            for (int c = 0; c < clusters; c++) {
                regionOf[c] = REGIONS[rnd.nextInt(REGIONS.length)];
                if (rnd.nextDouble() < 0.85) {
                    rtt.put("c" + c, 1.0 + rnd.nextInt(100));
                }
            }
            int n = 1 + rnd.nextInt(25);
            for (int e = 0; e < n; e++) {
                int c = rnd.nextInt(clusters);
                List<String> models = subset(MODELS, false);
                engines.put("e" + e, new EngineState("c" + c, regionOf[c], "http://e" + e, models, 1, 10,
                        rnd.nextDouble() < 0.1 ? 0 : 9, 0.1, 50 + rnd.nextInt(500), 1, 0, 1));
            }
            int k = 1 + rnd.nextInt(6);
            for (int i = 0; i < k; i++) {
                classes.put("k" + i, new Route(MODELS[rnd.nextInt(MODELS.length)], subset(REGIONS, true),
                        rnd.nextInt(4), rnd.nextInt(3) * 10.0, Map.of(), 0, Double.NaN));
            }
        }

        List<String> subset(String[] from, boolean mayBeEmpty) {
            List<String> out = new ArrayList<>();
            for (String s : from) {
                if (rnd.nextBoolean()) {
                    out.add(s);
                }
            }
            if (out.isEmpty() && !mayBeEmpty) {
                out.add(from[rnd.nextInt(from.length)]);
            }
            return out;
        }

        /** A snapshot with fresh random weights, deliberately naming disallowed and unknown engines too. */
        Snapshot snapshot() {
            Map<String, Route> routes = new TreeMap<>();
            classes.forEach((id, c) -> {
                Map<String, Double> w = new HashMap<>();
                for (String e : engines.keySet()) {
                    if (rnd.nextDouble() < 0.6) {
                        w.put(e, rnd.nextDouble() < 0.2 ? 0.0 : rnd.nextDouble());
                    }
                }
                if (rnd.nextDouble() < 0.2) {
                    w.put("ghost", 0.5);
                }
                double shed = rnd.nextDouble() < 0.7 ? 0 : rnd.nextDouble();
                routes.put(id, new Route(c.model(), c.residency(), c.priority(), c.demandRps(), w, shed, Double.NaN));
            });
            return new Snapshot(version++, "", "random", rnd.nextDouble(), RetryBudget.DEFAULT, Map.of("g", routes),
                    engines, Map.of("g", rtt), Fixtures.OBJECTIVE);
        }

        boolean allowed(String classId, String engineId, List<String> requested) {
            Route c = classes.get(classId);
            EngineState e = engines.get(engineId);
            return e != null && e.models().contains(c.model())
                    && (c.residency().isEmpty() || c.residency().contains(e.region()))
                    && (requested.isEmpty() || requested.contains(e.region()));
        }
    }

    @Property(tries = 1000)
    void everyAttempt_staysInTheAllowedSet_andIsReleased(@ForAll long seed) {
        World w = new World(seed);
        Fixtures.ManualTicker ticker = new Fixtures.ManualTicker();
        SplittableRandom rnd = w.rnd;
        DataPlaneOptions options = DataPlaneOptions.builder().maxSnapshotAge(Duration.ofSeconds(10))
                .maxInFlightPerEngine(1 + rnd.nextInt(6)).seed(seed).build();
        DataPlane plane = DataPlane.create("g", w.snapshot(), ticker, options);
        List<Decision> open = new ArrayList<>();
        Map<Decision, List<String>> requestedOf = new HashMap<>();
        for (int op = 0; op < 300; op++) {
            int what = rnd.nextInt(100);
            if (what < 45) {
                String model = rnd.nextDouble() < 0.05 ? "unknown" : MODELS[rnd.nextInt(MODELS.length)];
                List<String> residency = rnd.nextDouble() < 0.5 ? List.of() : w.subset(REGIONS, true);
                int priority = rnd.nextDouble() < 0.3 ? RequestMeta.NO_PRIORITY : rnd.nextInt(5);
                RequestMeta m = new RequestMeta(model, residency, priority, rnd.nextInt(20), rnd.nextLong());
                Decision d = plane.route(m);
                if (d.routed()) {
                    assertThat(w.classes.get(d.classId()).model()).isEqualTo(model);
                    assertThat(w.allowed(d.classId(), d.engineId(), residency)).as("%s for %s", d, m).isTrue();
                    open.add(d);
                    requestedOf.put(d, residency);
                    net.jqwik.api.statistics.Statistics.label("first").collect(d.fallback() ? "fallback" : "policy");
                }
            } else if (what < 65 && !open.isEmpty()) {
                Decision d = open.remove(rnd.nextInt(open.size()));
                Decision next = plane.retry(d, OUTCOMES[rnd.nextInt(OUTCOMES.length)]);
                if (next.routed()) {
                    assertThat(next.attempt()).isBetween(2, 3);
                    assertThat(w.allowed(next.classId(), next.engineId(), requestedOf.get(d)))
                            .as("retry %s of %s", next, d).isTrue();
                    open.add(next);
                    requestedOf.put(next, requestedOf.get(d));
                    net.jqwik.api.statistics.Statistics.label("retry").collect(next.fallback() ? "fallback" : "policy",
                            next.backoffNanos() > 0 ? "same engine" : "next engine");
                }
            } else if (what < 85 && !open.isEmpty()) {
                Decision d = open.remove(rnd.nextInt(open.size()));
                plane.onFinish(d, OUTCOMES[rnd.nextInt(OUTCOMES.length)], rnd.nextInt(4_000) * 1_000_000L);
            } else if (what < 93) {
                ticker.advanceMillis(rnd.nextDouble() < 0.2 ? 11_000 + rnd.nextInt(100_000) : rnd.nextInt(2_000));
            } else {
                plane.swap(rnd.nextBoolean() ? w.snapshot() : plane.snapshot());
            }
        }
        for (Decision d : open) {
            plane.onFinish(d, Outcome.SUCCESS, -1);
        }
        assertThat(plane.status().inFlight()).isZero();
        for (String e : w.engines.keySet()) {
            assertThat(plane.inFlight(e)).isZero();
        }
    }
}
