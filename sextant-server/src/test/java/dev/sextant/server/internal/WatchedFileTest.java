package dev.sextant.server.internal;

import static dev.sextant.server.internal.WatchedFile.Change.REFUSED;
import static dev.sextant.server.internal.WatchedFile.Change.RELOADED;
import static dev.sextant.server.internal.WatchedFile.Change.RESTORED;
import static dev.sextant.server.internal.WatchedFile.Change.UNCHANGED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sextant.config.ConfigException;
import dev.sextant.config.ConfigProblem;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link WatchedFile}: a content read once, a bad one refused once, the value in force kept. */
class WatchedFileTest {
    @TempDir
    Path dir;

    /** A whole number, or a problem on line 1 naming what the file holds. */
    private static Integer number(Path file) throws IOException, ConfigException {
        String text = Files.readString(file).strip();
        try {
            return Integer.valueOf(text);
        } catch (NumberFormatException e) {
            throw new ConfigException(List.of(new ConfigProblem(file.toString(), 1, "", "'" + text
                    + "' (expected: a whole number)")));
        }
    }

    @Test
    void aChangedFile_isReadOnce_andAnInvalidOneIsRefusedOnce_keepingTheValueInForce() throws Exception {
        Path f = dir.resolve("n");
        Files.writeString(f, "1");
        WatchedFile<Integer> w = WatchedFile.read(f, WatchedFileTest::number);
        assertThat(w.current()).isEqualTo(1);
        assertThat(w.refresh()).isEqualTo(UNCHANGED);

        Files.writeString(f, "2");
        assertThat(w.refresh()).isEqualTo(RELOADED);
        assertThat(w.current()).isEqualTo(2);
        assertThat(w.error()).isNull();

        Files.writeString(f, "x");
        assertThat(w.refresh()).isEqualTo(REFUSED);
        assertThat(w.refresh()).as("the same content: told once").isEqualTo(UNCHANGED);
        assertThat(w.current()).isEqualTo(2);
        assertThat(w.error()).isEqualTo(f + ":1: 'x' (expected: a whole number)");
        assertThat(w.unreadable()).as("refused for its content").isFalse();

        Files.writeString(f, "x ");
        assertThat(w.refresh()).as("new content, the same problem: told again").isEqualTo(REFUSED);

        Files.writeString(f, "2");
        assertThat(w.refresh()).as("the content in force, written again").isEqualTo(RELOADED);
        assertThat(w.error()).isNull();
    }

    @Test
    void anUnreadableFile_isToldOnce_andComingBackAsItWasRestoresIt() throws Exception {
        Path f = dir.resolve("n");
        Files.writeString(f, "1");
        WatchedFile<Integer> w = WatchedFile.read(f, WatchedFileTest::number);

        Files.delete(f);
        assertThat(w.refresh()).isEqualTo(REFUSED);
        assertThat(w.refresh()).as("told once, not at every look").isEqualTo(UNCHANGED);
        assertThat(w.error()).isEqualTo(f + ": cannot read: no such file");
        assertThat(w.unreadable()).isTrue();
        assertThat(w.current()).isEqualTo(1);

        Files.writeString(f, "1");
        assertThat(w.refresh()).isEqualTo(RESTORED);
        assertThat(w.error()).isNull();
        assertThat(w.unreadable()).isFalse();
        assertThat(w.refresh()).isEqualTo(UNCHANGED);
    }

    @Test
    void aRefusedContent_comingBackAfterTheFileWasUnreadable_isRefusedAgain() throws Exception {
        Path f = dir.resolve("n");
        Files.writeString(f, "1");
        WatchedFile<Integer> w = WatchedFile.read(f, WatchedFileTest::number);
        Files.writeString(f, "x");
        assertThat(w.refresh()).isEqualTo(REFUSED);
        Files.delete(f);
        assertThat(w.refresh()).isEqualTo(REFUSED);

        Files.writeString(f, "x");
        assertThat(w.refresh()).isEqualTo(REFUSED);
        assertThat(w.error()).contains("'x'");
        assertThat(w.current()).isEqualTo(1);
    }

    @Test
    void load_namesAnUnreadableFileAsAProblem_andRead_throwsItsIOException() throws Exception {
        Path missing = dir.resolve("missing");
        assertThatThrownBy(() -> WatchedFile.load(missing, WatchedFileTest::number)).isInstanceOf(ConfigException.class)
                .hasMessage(missing + ": cannot read: no such file");
        assertThatThrownBy(() -> WatchedFile.read(missing, WatchedFileTest::number))
                .isInstanceOf(NoSuchFileException.class);
        Files.writeString(missing, "x");
        assertThatThrownBy(() -> WatchedFile.load(missing, WatchedFileTest::number))
                .hasMessage(missing + ":1: 'x' (expected: a whole number)");
    }
}
