package dev.sextant.server.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@link Http#bearerMatches}: exactly {@code Bearer <token>}, nothing shorter, longer or near. */
class HttpBearerTest {
    private static final byte[] TOKEN = "tok-0123456789".getBytes(StandardCharsets.UTF_8);

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
    void bearerMatches_onlyTheExactToken(String header, boolean expected) {
        assertThat(Http.bearerMatches(header, TOKEN)).isEqualTo(expected);
    }
}
