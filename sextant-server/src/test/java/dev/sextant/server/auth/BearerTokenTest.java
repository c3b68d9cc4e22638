package dev.sextant.server.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import dev.sextant.server.gateway.LogCapture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@link BearerToken}: exactly {@code Bearer <token>}, every token of a file, and a file that changes. */
class BearerTokenTest {
    private static final BearerToken TOKEN = BearerToken.of("tok-0123456789");

    @TempDir
    Path dir;

    @ParameterizedTest(name = "[{index}] ''{0}'' → {1}")
    @CsvSource(delimiter = '|', nullValues = "NULL", value = {
        "Bearer tok-0123456789      | true",
        "bearer tok-0123456789      | true",
        "BEARER tok-0123456789      | true",
        "Bearer  tok-0123456789     | true",
        "NULL                       | false",
        "''                         | false",
        "Bearer                     | false",
        "'Bearer '                  | false",
        "tok-0123456789             | false",
        "Basic tok-0123456789       | false",
        "Bearer tok-012345678       | false",
        "Bearer tok-01234567890     | false",
        "Bearer tok-0123456788      | false",
        "Bearer TOK-0123456789      | false",
        "Bearer tok-0123456789x     | false",
        "Bearer x                   | false",
    })
    void accepts_onlyTheExactToken(String header, boolean expected) {
        assertThat(TOKEN.accepts(header)).isEqualTo(expected);
    }

    @Test
    void presented_ofRepeatedHeaders_isTheOneToken_orAmbiguous() {
        assertThat(BearerToken.Presented.of(java.util.List.of())).isEqualTo(new BearerToken.Presented(null, null, false));
        assertThat(BearerToken.Presented.of(java.util.List.of("Bearer a")))
                .isEqualTo(new BearerToken.Presented("Bearer a", "a", false));
        assertThat(BearerToken.Presented.of(java.util.List.of("Basic x", "Bearer a", "bearer  a ")))
                .as("the first that presents a token; the same token again is no second one")
                .isEqualTo(new BearerToken.Presented("Bearer a", "a", false));
        assertThat(BearerToken.Presented.of(java.util.List.of("Basic x")))
                .isEqualTo(new BearerToken.Presented("Basic x", null, false));
        assertThat(BearerToken.Presented.of(java.util.List.of("Bearer a", "Bearer b")).ambiguous()).isTrue();
        assertThat(BearerToken.Presented.of(java.util.List.of("Bearer b", "Basic x", "Bearer a")).ambiguous()).isTrue();
    }

    @Test
    void fixedToken_isOneNonEmptyLine_andNeverPrinted() {
        assertThatThrownBy(() -> BearerToken.of(" ")).hasMessageContaining("token: empty");
        assertThatThrownBy(() -> BearerToken.of("a\nb")).hasMessageContaining("more than one line");
        assertThat(TOKEN.current()).isEqualTo("tok-0123456789");
        assertThat(TOKEN.toString()).doesNotContain("tok-").contains("redacted");
    }

    @Test
    void file_acceptsEveryLine_sendsTheFirst_andRefusesAFileWithoutToken() throws Exception {
        Path f = dir.resolve("token");
        Files.writeString(f, "\n  new-token  \r\nold-token\n\n");
        BearerToken t = BearerToken.file(f);
        assertThat(t.current()).isEqualTo("new-token");
        assertThat(t.accepts("Bearer new-token")).isTrue();
        assertThat(t.accepts("Bearer old-token")).isTrue();
        assertThat(t.accepts("Bearer other")).isFalse();
        assertThat(t.toString()).doesNotContain("token\"").doesNotContain("new-token").contains(f.toString());

        Files.writeString(f, " \n\n");
        assertThatThrownBy(() -> BearerToken.file(f)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("holds no token");
        assertThatThrownBy(() -> BearerToken.file(dir.resolve("missing"))).isInstanceOf(java.io.IOException.class);
    }

    @Test
    void file_isReadAgainWhenItChanges_atMostOncePerRecheck_andABadFileKeepsTheTokens() throws Exception {
        Path f = dir.resolve("token");
        Files.writeString(f, "old\nnew\n");
        AtomicLong now = new AtomicLong();
        BearerToken t = BearerToken.file(f, now::get, Duration.ofSeconds(1));
        assertThat(t.accepts("Bearer old")).isTrue();

        write(f, "new\n", 1);
        assertThat(t.accepts("Bearer old")).as("within the recheck interval").isTrue();
        now.addAndGet(Duration.ofMillis(1001).toNanos());
        assertThat(t.accepts("Bearer old")).as("after it: rotated out").isFalse();
        assertThat(t.accepts("Bearer new")).isTrue();
        assertThat(t.current()).isEqualTo("new");

        try (LogCapture logged = new LogCapture()) {
            write(f, "   \n", 2);
            now.addAndGet(Duration.ofSeconds(2).toNanos());
            assertThat(t.accepts("Bearer new")).as("an empty file keeps the tokens read before").isTrue();
            now.addAndGet(Duration.ofSeconds(2).toNanos());
            assertThat(t.current()).isEqualTo("new");
            Files.delete(f);
            now.addAndGet(Duration.ofSeconds(2).toNanos());
            assertThat(t.accepts("Bearer new")).as("so does a deleted one").isTrue();
            assertThat(logged.lines()).filteredOn(l -> l.startsWith("SEVERE ") && l.contains("TOKEN FILE"))
                    .hasSize(2) // once per problem, not once per look
                    .allSatisfy(m -> assertThat(m).contains("TOKEN FILE " + f).contains("stay in force")
                            .doesNotContain("new"));
        }
    }

    /** Writes {@code text} with a modification time {@code step} seconds later, so that a change is seen at once. */
    private static void write(Path f, String text, int step) throws Exception {
        FileTime before = Files.exists(f) ? Files.getLastModifiedTime(f) : FileTime.fromMillis(0);
        Files.writeString(f, text);
        Files.setLastModifiedTime(f, FileTime.fromMillis(before.toMillis() + step * 1000L));
    }
}
