package dev.sextant.server.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sextant.server.auth.BearerToken;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The emulator's security options are taken out of its command line before the others are parsed. */
class EngineSecurityOptionsTest {
    @Test
    void securityOptions_areSeparated_inBothSpellings() {
        List<String> rest = new ArrayList<>();
        Map<String, String> security = EngineOptions.securityOptions(new String[] {"--id", "e1",
            "--tls-cert-file", "c.pem", "--tls-key-file=k.pem", "--port", "9", "--admin-token-file", "t"}, rest);
        assertThat(security).containsExactlyInAnyOrderEntriesOf(Map.of("--tls-cert-file", "c.pem",
                "--tls-key-file", "k.pem", "--admin-token-file", "t"));
        assertThat(rest).containsExactly("--id", "e1", "--port", "9");
        assertThat(EngineOptions.parseArgs(rest.toArray(new String[0])).engineId()).isEqualTo("e1");
    }

    @Test
    void securityOption_withoutValue_isAnError() {
        assertThatThrownBy(() -> EngineOptions.securityOptions(new String[] {"--admin-token-file"}, new ArrayList<>()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--admin-token-file: missing value");
    }

    @Test
    void adminTokenFile_isReadAsEveryServersTokenFile_anyOfItsLinesAccepted(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("token"), "new-token\nold-token\n");
        BearerToken token = EngineOptions.tokenFile("--admin-token-file", file);
        assertThat(token.accepts("Bearer new-token")).isTrue();
        assertThat(token.accepts("Bearer old-token")).isTrue();
        assertThat(token.accepts("Bearer other")).isFalse();
    }

    @Test
    void adminTokenFile_emptyOrMissing_isAnErrorNamingTheOption(@TempDir Path dir) throws Exception {
        Path empty = Files.writeString(dir.resolve("empty"), "\n");
        assertThatThrownBy(() -> EngineOptions.tokenFile("--admin-token-file", empty))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("--admin-token-file: " + empty);
        Path missing = dir.resolve("missing");
        assertThatThrownBy(() -> EngineOptions.tokenFile("--admin-token-file", missing))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("--admin-token-file: cannot read " + missing);
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource(delimiter = '|', textBlock = """
            --max-connections  | 4294967297  | max_connections: 4294967297 (expected: 1..1000000)
            --max-connections  | 4294967296  | max_connections: 4294967296 (expected: 1..1000000)
            --max-header-bytes | -4294967295 | max_header_bytes: -4294967295 (expected: 1..1048576)
            --max-header-bytes | 0           | max_header_bytes: 0 (expected: 1..1048576)
            """)
    void limitBeyondAnInt_isRefusedQuotingTheValueAsWritten_notWrappedIntoRange(String option, String value,
                                                                                 String says) {
        assertThatThrownBy(() -> EngineOptions.limits(Map.of(option, value)))
                .isInstanceOf(IllegalArgumentException.class).hasMessage(says);
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource(delimiter = '|', textBlock = """
            --max-seqs | 2147483648          | --max-seqs: 2147483648 (expected: a whole number from -2147483648 to 2147483647)
            --port     | -99999999999        | --port: -99999999999 (expected: a whole number from -2147483648 to 2147483647)
            --seed     | 9223372036854775808 | --seed: 9223372036854775808 (expected: a whole number from -9223372036854775808 to 9223372036854775807)
            --max-seqs | many                | --max-seqs: many (expected: a number)
            """)
    void numberOptionBeyondItsType_isRefusedWithTheRange(String option, String value, String says) {
        assertThatThrownBy(() -> EngineOptions.parseArgs(new String[] {option, value}))
                .isInstanceOf(IllegalArgumentException.class).hasMessage(says);
    }
}
