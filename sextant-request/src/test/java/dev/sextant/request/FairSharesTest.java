package dev.sextant.request;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.offset;

import dev.sextant.snapshot.Snapshot;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Shedding within a class falls first on tenants above their fair share (docs/request-path.md §3). */
class FairSharesTest {
    private final Fixtures.ManualTicker ticker = new Fixtures.ManualTicker();

    private DataPlane plane(double shed) {
        return DataPlane.create("g", Fixtures.simple(1, shed, (1 - shed) / 2, (1 - shed) / 2), ticker,
                DataPlaneOptions.builder().maxInFlightPerEngine(1_000_000).build());
    }

    /**
     * Tenant → {sent, shed, shed after the first second} after {@code seconds} of traffic, {@code perMs} requests a
     * millisecond of each tenant. In the first second the tenants' rates are still being learnt.
     */
    private Map<String, int[]> run(DataPlane p, Map<String, Integer> perMs, Map<String, Double> weights, int seconds) {
        Map<String, int[]> out = new LinkedHashMap<>();
        perMs.keySet().forEach(t -> out.put(t, new int[3]));
        SplittableRandom rnd = new SplittableRandom(7);
        for (int ms = 0; ms < seconds * 1000; ms++) {
            for (Map.Entry<String, Integer> e : perMs.entrySet()) {
                for (int i = 0; i < e.getValue(); i++) {
                    long id = rnd.nextLong();
                    Decision d = p.route(new RequestMeta("m", List.of(), RequestMeta.NO_PRIORITY, id, 0, id, e.getKey(),
                            weights.getOrDefault(e.getKey(), 1.0)));
                    int[] counts = out.get(e.getKey());
                    counts[0]++;
                    if (d.routed()) {
                        p.onFinish(d, Outcome.SUCCESS, -1);
                    } else {
                        assertThat(d.refusal()).isEqualTo(Refusal.SHED);
                        counts[1]++;
                        if (ms >= 1000) {
                            counts[2]++;
                        }
                    }
                }
            }
            ticker.advanceMillis(1);
        }
        return out;
    }

    /** {@code a} → {@code ra} and {@code b} → {@code rb}, iterated in that order, or the other way round. */
    private static Map<String, Integer> ordered(boolean reversed, String a, int ra, String b, int rb) {
        Map<String, Integer> m = new LinkedHashMap<>();
        if (reversed) {
            m.put(b, rb);
        }
        m.put(a, ra);
        if (!reversed) {
            m.put(b, rb);
        }
        return m;
    }

    @ParameterizedTest(name = "reversed: {0}")
    @ValueSource(booleans = {false, true})
    void shed_burstingTenant_takesAllOfTheClassShed_andTheQuietOneIsNeverShed(boolean reversed) {
        Map<String, int[]> r = run(plane(0.5), ordered(reversed, "burst", 4, "quiet", 1), Map.of(), 5);
        int sent = r.get("burst")[0] + r.get("quiet")[0];
        int shed = r.get("burst")[1] + r.get("quiet")[1];
        assertThat(r.get("quiet")[1]).isZero();
        assertThat(shed / (double) sent).isCloseTo(0.5, offset(0.01)); // the class sheds what the policy says
        assertThat(r.get("burst")[1] / (double) r.get("burst")[0]).isCloseTo(0.625, offset(0.015));
    }

    @ParameterizedTest(name = "reversed: {0}")
    @ValueSource(booleans = {false, true})
    void shed_followsWeights_theHeavierTenantWithinItsShareIsNotShed(boolean reversed) {
        // 2 req/ms each, a quarter shed: 3,000/s admitted; "big" (weight 3) may have 2,250/s and sends 2,000
        Map<String, int[]> weighted = run(plane(0.25), ordered(reversed, "big", 2, "small", 2), Map.of("big", 3.0), 5);
        // in the first milliseconds neither tenant has shown a rate yet, and a shed may fall on either; after that none
        // falls on big, and at most one in a thousand of its requests in all
        assertThat(weighted.get("big")[2]).as("big's requests shed once the rates are known").isZero();
        assertThat(weighted.get("big")[1]).as("big's requests shed").isLessThanOrEqualTo(weighted.get("big")[0] / 1000);
        assertThat(weighted.get("small")[1] / (double) weighted.get("small")[0]).isCloseTo(0.5, offset(0.015));
    }

    @Test
    void shed_equalWeightsAndEqualDemand_shedsBothAlike() {
        Map<String, int[]> r = run(plane(0.25), ordered(false, "a", 2, "b", 2), Map.of(), 5);
        for (int[] counts : r.values()) {
            assertThat(counts[1] / (double) counts[0]).isCloseTo(0.25, offset(0.02));
        }
    }

    @Test
    void shed_oneTenant_decidesExactlyAsWithoutTenants() {
        Snapshot s = Fixtures.simple(1, 0.3, 0.35, 0.35);
        DataPlaneOptions o = DataPlaneOptions.builder().maxInFlightPerEngine(1_000_000).build();
        DataPlane withTenant = DataPlane.create("g", s, ticker, o);
        DataPlane without = DataPlane.create("g", s, ticker, o);
        SplittableRandom rnd = new SplittableRandom(3);
        for (int i = 0; i < 20_000; i++) {
            long id = rnd.nextLong();
            Decision a = withTenant.route(new RequestMeta("m", List.of(), RequestMeta.NO_PRIORITY, id, 0, id, "only", 1));
            Decision b = without.route(RequestMeta.of("m", id, id));
            assertThat(a.routed()).isEqualTo(b.routed());
            assertThat(a.engineId()).isEqualTo(b.engineId());
            withTenant.onFinish(a, Outcome.SUCCESS, -1);
            without.onFinish(b, Outcome.SUCCESS, -1);
            if (i % 10 == 0) {
                ticker.advanceMillis(1);
            }
        }
    }
}
