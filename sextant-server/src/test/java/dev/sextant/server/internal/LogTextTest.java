package dev.sextant.server.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class LogTextTest {

    static Stream<Arguments> controls() {
        return Stream.of(
                Arguments.of("line feed", "a\nb", "a\\nb"),
                Arguments.of("carriage return", "a\rb", "a\\rb"),
                Arguments.of("tab", "a\tb", "a\\tb"),
                Arguments.of("NUL", "a\u0000b", "a\\u0000b"),
                Arguments.of("escape (a terminal's)", "a\u001b[2Jb", "a\\u001b[2Jb"),
                Arguments.of("DEL", "a\u007fb", "a\\u007fb"),
                Arguments.of("next line (C1)", "a\u0085b", "a\\u0085b"),
                Arguments.of("line separator", "a\u2028b", "a\\u2028b"),
                Arguments.of("paragraph separator", "a\u2029b", "a\\u2029b"),
                Arguments.of("a forged line", "nope\n12:00:00.000 INFO x: gw POST / 200",
                        "nope\\n12:00:00.000 INFO x: gw POST / 200"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("controls")
    void controlCharacters_areWrittenAsTheirEscapes(String name, String in, String expected) {
        assertThat(LogText.oneLine(in)).isEqualTo(expected).doesNotContainPattern("[\\p{Cc}\\u2028\\u2029]");
    }

    @Test
    void textWithoutControlCharacters_isItself_unicodeAndQuotesIncluded() {
        String s = "model 'llama-3.1-8b' at zürich — \"ok\" 日本";
        assertThat(LogText.oneLine(s)).isSameAs(s);
    }
}
