package dev.sextant.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SweepCommandTest {

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int run(String... args) {
        return Sextant.run(Services.production(), new PrintWriter(out), new PrintWriter(err), args);
    }

    @Test
    void sweep_oneFleet_writesItsScenario_itsReport_andTheSweepsTable(@TempDir Path dir) throws Exception {
        int code = run("sweep", "--first", "7", "--fleets", "1", "--policies", "sextant,nearest", "--out",
                dir.toString());

        assertThat(code).as(err.toString()).isZero();
        assertThat(dir.resolve("fleet-7.yaml")).exists();
        assertThat(dir.resolve("fleet-7/summary.json")).exists();
        String md = Files.readString(dir.resolve("sweep.md"));
        assertThat(md).contains("bin/sextant sweep --first 7 --fleets 1 --seed 1", "On 1 fleet Sextant's TTFT p99",
                "| 7 | ");
        assertThat(Files.readAllLines(dir.resolve("sweep.csv"))).hasSize(2).element(1).asString().startsWith("7,");
        assertThat(out.toString()).contains("On 1 fleet", "sweep.md");
        // the fleet's file is the one `simulate` takes: the same run again gives the same summary
        Path again = dir.resolve("again");
        assertThat(run("simulate", dir.resolve("fleet-7.yaml").toString(), "--policies", "sextant,nearest", "--out",
                again.toString())).as(err.toString()).isZero();
        assertThat(Files.readString(again.resolve("summary.json")))
                .isEqualTo(Files.readString(dir.resolve("fleet-7/summary.json")));
    }

    @Test
    void sweep_badCounts_exit2NamingTheOption(@TempDir Path dir) {
        assertThat(run("sweep", "--fleets", "0", "--out", dir.toString())).isEqualTo(2);
        assertThat(err.toString()).contains("--fleets: 0 (expected: at least 1)");
        assertThat(run("sweep", "--first", "-1", "--out", dir.toString())).isEqualTo(2);
        assertThat(err.toString()).contains("--first: -1 (expected: 0 or more)").doesNotContain("Exception");
        assertThat(run("sweep", "--first", "9223372036854775807", "--fleets", "2", "--out", dir.toString())).isEqualTo(2);
        assertThat(err.toString()).contains("--first: 9223372036854775807 (expected: at most 9223372036854775806 with "
                + "--fleets 2, so that the last fleet's number is a long)");
    }
}
