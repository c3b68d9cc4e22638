package dev.sextant.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A command in a JVM of its own, with every library the jar carries, writes only its own output: no library's
 * start-up noise on stderr (the etcd client logs through SLF4J, which without a provider prints warnings).
 */
class QuietStartTest {
    @Test
    void version_inAJvmOfItsOwn_printsTheVersion_andNothingOnStderr(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("stdout.txt");
        Path err = dir.resolve("stderr.txt");
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx128m", "-cp", System.getProperty("java.class.path"), Sextant.class.getName(), "-V")
                .redirectOutput(out.toFile()).redirectError(err.toFile()).start();

        assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("the command ended").isTrue();
        assertThat(p.exitValue()).isZero();
        assertThat(Files.readString(out, StandardCharsets.UTF_8)).startsWith("sextant ");
        assertThat(Files.readString(err, StandardCharsets.UTF_8)).as("stderr").isEmpty();
    }
}
