package dev.sextant.server.tenants;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The key a request presents in {@code Authorization: Bearer} and {@code api-key}: one, none, or ambiguous. */
class PresentedKeyTest {

    /** Each header's values separated by {@code ;}, empty for none; {@code _} stands for a blank value. */
    private static List<String> values(String s) {
        return s == null ? List.of() : Arrays.stream(s.split(";", -1)).map(v -> v.replace("_", " ")).toList();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', nullValues = "-", textBlock = """
            nothing                          | -                     | -            | -    | false
            bearer only                      | Bearer k1             | -            | k1   | false
            api-key only                     | -                     | k1           | k1   | false
            api-key, surrounding blanks      | -                     | __k1__       | k1   | false
            both, the same key               | Bearer k1             | k1           | k1   | false
            both, different keys             | Bearer k1             | k2           | -    | true
            blank api-key counts as absent   | Bearer k1             | _            | k1   | false
            empty api-key counts as absent   | -                     | ''           | -    | false
            another scheme presents no key   | Basic k1              | k2           | k2   | false
            bearer without a token, api-key  | Bearer_               | k2           | k2   | false
            api-key repeated, the same       | -                     | k1;k1        | k1   | false
            api-key repeated, different      | -                     | k1;k2        | -    | true
            api-key repeated, one blank      | -                     | _;k2         | k2   | false
            bearer repeated, different       | Bearer k1;Bearer k2   | -            | -    | true
            bearer repeated, the same        | Bearer k1;bearer k1   | -            | k1   | false
            bearer twice, then api-key other | Bearer k1;Bearer k1   | k1;k3        | -    | true
            """)
    void of_findsOneKey_noneOrDifferentOnes(String name, String authorization, String apiKey, String key,
                                            boolean ambiguous) {
        PresentedKey p = PresentedKey.of(values(authorization), values(apiKey));
        assertThat(p.key()).isEqualTo(key);
        assertThat(p.ambiguous()).isEqualTo(ambiguous);
    }

    @Test
    void tenants_findTheTenantOfTheKey_inEitherHeader_andNoneForAmbiguousKeys() throws Exception {
        Tenants t = Tenants.parse("tenants:\n  acme: {keys: [" + ApiKeys.hash("sk-a") + "]}\n"
                + "  globex: {keys: [" + ApiKeys.hash("sk-g") + "]}\n", "tenants.yaml");
        assertThat(t.find(PresentedKey.of(List.of(), List.of("sk-a"))).name()).isEqualTo("acme");
        assertThat(t.find(PresentedKey.of(List.of("Bearer sk-g"), List.of("sk-g"))).name()).isEqualTo("globex");
        assertThat(t.find(PresentedKey.of(List.of("Bearer sk-a"), List.of("sk-g")))).as("two tenants' keys").isNull();
        assertThat(t.find(PresentedKey.of(List.of(), List.of("sk-nobody")))).isNull();
        assertThat(t.find(PresentedKey.NONE)).isNull();
    }
}
