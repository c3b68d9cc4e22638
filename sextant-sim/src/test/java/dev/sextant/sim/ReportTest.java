package dev.sextant.sim;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReportTest {
    static final List<String> CONTRACT = List.of("ttft_p50_ms", "ttft_p99_ms", "e2e_p50_ms", "e2e_p99_ms",
            "cache_hit_rate", "shed_fraction", "failed", "retry_amplification", "weight_churn_per_min",
            "residency_violations");

    @Test
    void run_writesTheContractReportPlotsAndSeries(@TempDir Path dir) throws Exception {
        Path scenario = dir.resolve("short.yaml");
        Files.writeString(scenario, SimulationTest.FAULTY.replace("duration_s: 40", "duration_s: 15"));
        Path out = dir.resolve("out");
        Map<String, Summary> result = Simulator.run(scenario, List.of("sextant", "legacy-feedback", "nearest"), 3,
                out, null);

        assertThat(result).containsOnlyKeys("sextant", "legacy-feedback", "nearest");
        JsonNode json = new ObjectMapper().readTree(out.resolve("summary.json").toFile());
        List<String> names = new ArrayList<>();
        json.fieldNames().forEachRemaining(names::add);
        assertThat(names).containsExactly("sextant", "legacy-feedback", "nearest");
        for (String policy : names) {
            List<String> keys = new ArrayList<>();
            json.get(policy).fieldNames().forEachRemaining(keys::add);
            assertThat(keys).containsExactlyElementsOf(CONTRACT);
            assertThat(json.get(policy).get("residency_violations").asLong()).isZero();
            assertThat(json.get(policy).get("ttft_p50_ms").asDouble()).isPositive();
        }
        assertThat(json.get("sextant").get("ttft_p99_ms").asDouble()).isEqualTo(result.get("sextant").ttftP99Ms());

        String md = Files.readString(out.resolve("report.md"));
        assertThat(md).contains("| policy | TTFT p50 ms |", "| sextant |", "![ttft-cdf.png](ttft-cdf.png)");
        assertThat(Files.readString(out.resolve("report.html"))).contains("<table>", "<img src=\"ttft-cdf.png\"");
        for (String png : List.of("ttft-cdf.png", "e2e-cdf.png", "cache-hit.png", "occupancy-sextant.png",
                "weights-sextant.png", "weights-legacy-feedback.png")) {
            byte[] bytes = Files.readAllBytes(out.resolve(png));
            assertThat(bytes).hasSizeGreaterThan(1000);
            assertThat(bytes[1]).isEqualTo((byte) 'P'); // PNG signature \x89PNG
        }
        assertThat(out.resolve("weights-nearest.png")).doesNotExist();
        List<String> series = Files.readAllLines(out.resolve("series-nearest.csv"));
        assertThat(series.get(0)).isEqualTo("time_s,completed,shed,failed,cache_hit_rate,ttft_mean_ms");
        assertThat(series).hasSizeGreaterThan(2);
        List<String> engines = Files.readAllLines(out.resolve("engines-sextant.csv"));
        assertThat(engines.get(0))
                .isEqualTo("time_s,engine,utilization,occupancy,queue,weight,prompt_tokens,cache_hit_rate");
        assertThat(engines.stream().skip(1)
                .map(line -> Double.parseDouble(line.split(",")[3])))
                .as("occupancy: a fraction of max_seqs, above 0 somewhere").allMatch(x -> x >= 0 && x <= 1)
                .anyMatch(x -> x > 0);
        // each sample's engines add up to the fleet's line: prompt tokens weighted by their hit rates
        List<String> fleet = Files.readAllLines(out.resolve("series-sextant.csv"));
        Map<String, double[]> byTime = new java.util.HashMap<>();
        for (String line : engines.subList(1, engines.size())) {
            String[] f = line.split(",", -1);
            double tokens = Double.parseDouble(f[6]);
            double[] sum = byTime.computeIfAbsent(f[0], k -> new double[2]);
            sum[0] += tokens;
            sum[1] += f[7].isEmpty() ? 0 : tokens * Double.parseDouble(f[7]);
        }
        int checked = 0;
        for (String line : fleet.subList(1, fleet.size())) {
            String[] f = line.split(",", -1);
            double[] sum = byTime.get(f[0]);
            if (!f[4].isEmpty() && sum[0] > 0) {
                assertThat(sum[1] / sum[0]).as("cache hit at %s s", f[0]).isCloseTo(Double.parseDouble(f[4]),
                        org.assertj.core.data.Offset.offset(1e-3));
                checked++;
            }
        }
        assertThat(checked).isPositive();
        assertThat(md).contains("## By engine: share of the prompt tokens, cache hit", "| policy | us-1 | us-2 |");
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.CsvSource({"1,class,1 class", "3,class,3 classes", "1,engine,1 engine",
        "2,gateway cluster,2 gateway clusters", "0,engine,0 engines"})
    void counts_inTheReportsWords_agreeInNumber(int n, String noun, String words) {
        assertThat(Report.count(n, noun)).isEqualTo(words);
    }

    @Test
    void sameSeed_writesTheSameSummary(@TempDir Path dir) throws Exception {
        Path scenario = dir.resolve("short.yaml");
        Files.writeString(scenario, SimulationTest.FAULTY.replace("duration_s: 40", "duration_s: 10"));
        Simulator.run(scenario, List.of("sextant", "prefix-aware"), 5, dir.resolve("a"), null);
        Simulator.run(scenario, List.of("sextant", "prefix-aware"), 5, dir.resolve("b"), null);
        assertThat(Files.readString(dir.resolve("b/summary.json")))
                .isEqualTo(Files.readString(dir.resolve("a/summary.json")));
        assertThat(Files.readString(dir.resolve("b/series-sextant.csv")))
                .isEqualTo(Files.readString(dir.resolve("a/series-sextant.csv")));
    }
}
