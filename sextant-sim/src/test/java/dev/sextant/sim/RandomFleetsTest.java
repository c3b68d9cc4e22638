package dev.sextant.sim;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RandomFleetsTest {

    @Test
    void everyFleet_isAScenarioTheLoaderTakes_andTheSameNumberGivesTheSameFile(@TempDir Path dir) throws Exception {
        Set<String> texts = new HashSet<>();
        Set<Integer> sizes = new HashSet<>();
        for (long i = 0; i < 200; i++) {
            String yaml = RandomFleets.scenario(i);
            assertThat(RandomFleets.scenario(i)).isEqualTo(yaml);
            texts.add(yaml);
            Scenario s = ScenarioLoader.load(Files.writeString(dir.resolve("fleet-" + i + ".yaml"), yaml));
            assertThat(s.topology().gatewayClusters().size()).isBetween(2, 3);
            int engines = s.topology().engines().size();
            assertThat(engines).isBetween(2 * s.topology().gatewayClusters().size(),
                    6 * s.topology().gatewayClusters().size());
            sizes.add(engines);
        }
        assertThat(texts).hasSize(200); // two fleets alike would be one fleet measured twice
        assertThat(sizes.size()).isGreaterThan(8);
    }

    @Test
    void row_setsSextantBesideTheBestOtherPolicy_andTheCacheHitBesideTheBestAffinityKeepingOne() {
        Map<String, Summary> results = Map.of(
                "sextant", summary(40, 1_000, 0.80),
                "nearest", summary(30, 1_200, 0.81),
                "least-request", summary(35, 900, 0.10), // the best E2E; keeps no conversation on its engine
                "round-robin", summary(50, 1_500, 0.90)); // the best hit, of a policy that keeps none
        Sweep.Row row = Sweep.row(3, "fleet", results);

        assertThat(row.bestTtft()).isEqualTo("nearest");
        assertThat(row.bestE2e()).isEqualTo("least-request");
        assertThat(row.bestHit()).isEqualTo("nearest");
        assertThat(row.ttftMet()).isFalse();
        assertThat(row.e2eMet()).isFalse();
        assertThat(row.hitMet()).isTrue(); // within 2 points of 81%
        assertThat(Sweep.totals(java.util.List.of(row))).startsWith("On 1 fleet Sextant's TTFT p99 is at or below the "
                + "best other policy's on 0, its E2E p99 on 0, its cache hit rate within 2 points of the best "
                + "affinity-keeping policy's on 1; all three at once on 0.")
                .contains("TTFT p99 median 1.33×", "E2E p99 median 1.11×");
        // a fleet that meets all three, and one that meets two of them: only the first counts at once
        Sweep.Row all = Sweep.row(4, "fleet", Map.of("sextant", summary(30, 900, 0.80),
                "nearest", summary(30, 1_000, 0.81)));
        Sweep.Row two = Sweep.row(5, "fleet", Map.of("sextant", summary(30, 900, 0.70),
                "nearest", summary(30, 1_000, 0.81)));
        assertThat(Sweep.totals(java.util.List.of(row, all, two))).contains("TTFT p99 is at or below the best other "
                + "policy's on 2, its E2E p99 on 2, its cache hit rate within 2 points of the best affinity-keeping "
                + "policy's on 2; all three at once on 1.");
        assertThat(Sweep.row(3, "fleet", Map.of("sextant", summary(1, 1, 1)))).isNull(); // nothing beside it
    }

    private static Summary summary(double ttftP99, double e2eP99, double hit) {
        return new Summary(ttftP99 / 2, ttftP99, e2eP99 / 2, e2eP99, hit, 0, 0, 1, 0, 0);
    }
}
