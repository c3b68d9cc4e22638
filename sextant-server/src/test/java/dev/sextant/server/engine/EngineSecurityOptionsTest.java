package dev.sextant.server.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The emulator's security options are taken out of its command line before the others are parsed. */
class EngineSecurityOptionsTest {
    @Test
    void securityOptions_areSeparated_inBothSpellings() {
        List<String> rest = new ArrayList<>();
        Map<String, String> security = EngineEmulator.securityOptions(new String[] {"--id", "e1",
            "--tls-cert-file", "c.pem", "--tls-key-file=k.pem", "--port", "9", "--admin-token-file", "t"}, rest);
        assertThat(security).containsExactlyInAnyOrderEntriesOf(Map.of("--tls-cert-file", "c.pem",
                "--tls-key-file", "k.pem", "--admin-token-file", "t"));
        assertThat(rest).containsExactly("--id", "e1", "--port", "9");
        assertThat(EngineEmulator.parseArgs(rest.toArray(new String[0])).engineId()).isEqualTo("e1");
    }

    @Test
    void securityOption_withoutValue_isAnError() {
        assertThatThrownBy(() -> EngineEmulator.securityOptions(new String[] {"--admin-token-file"}, new ArrayList<>()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--admin-token-file: missing value");
    }
}
