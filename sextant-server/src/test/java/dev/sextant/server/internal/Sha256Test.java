package dev.sextant.server.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/** {@link Sha256}: a written digest is exactly 64 ASCII hexadecimal digits, in either case. */
class Sha256Test {
    private static final String HELLO = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

    @Test
    void parseHex_readsEitherCase_asTheDigestOfTheBytes() {
        byte[] digest = Sha256.of("hello".getBytes(StandardCharsets.UTF_8));
        assertThat(HexFormat.of().formatHex(digest)).isEqualTo(HELLO);
        assertThat(Sha256.parseHex(HELLO)).isEqualTo(digest);
        assertThat(Sha256.parseHex(HELLO.toUpperCase())).isEqualTo(digest);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "abc", HELLO + "0", // too short, too long
        "g000000000000000000000000000000000000000000000000000000000000000", // not a hex digit
        "\uff10000000000000000000000000000000000000000000000000000000000000000"}) // a digit, but not an ASCII one
    void parseHex_refusesAnythingButSixtyFourHexDigits(String hex) {
        assertThat(Sha256.parseHex(hex)).isNull();
    }
}
