package dev.sextant.server.control;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The version a gateway's If-None-Match says it holds: only our own ETag shape counts, anything else is -1. */
class ControlHandlerEtagTest {
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"3-0123456789abcdef\"  | 3",
            "\"12345678901-ab\"      | 12345678901",
            "3-0123456789abcdef      | -1",
            "W/\"3-0123456789abcdef\" | -1",
            "\"x-0123\"              | -1",
            "\"-1-0123\"             | -1",
            "\"99999999999999999999-a\" | -1",
            "*                       | -1",
            "\"\"                    | -1"})
    void heldVersion_readsOnlyOurEtags(String etag, long expected) {
        assertThat(ControlHandler.heldVersion(etag)).isEqualTo(expected);
    }
}
