package dev.sextant.config;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;

/**
 * One random edit of a configuration file's text, for the properties that every file Sextant reads gives either its
 * value or problems at lines of the file: a line dropped or doubled, a character changed or added (YAML's own
 * punctuation first), the first value written as a number at or after a place replaced by one of {@link #VALUES}
 * (out of some field's range, or of the wrong kind for most), or the text cut short there.
 *
 * @param kind  which edit: 0 drop a line, 1 double it, 2 change a character, 3 add one, 4 replace a number, 5 cut
 * @param where where in the text, as a fraction of its lines or characters
 * @param c     the character a change or an addition uses
 * @param value the index in {@link #VALUES} a replacement uses
 */
public record TextEdit(int kind, double where, char c, int value) {
    /** Values a number is replaced by: out of every range, not finite, not numbers, collections, empty. */
    public static final List<String> VALUES = List.of("-1", "0", "1e-9", "3.5", "1e15", "1e308", "2147483648", ".nan",
            ".inf", "-.inf", "abc", "[1]", "{a: 1}", "''");

    private static final Pattern NUMBER_VALUE = Pattern.compile("(?<=: )-?[0-9][0-9.e+-]*");

    /** Edits of any kind, anywhere. */
    public static Arbitrary<TextEdit> any() {
        Arbitrary<Character> chars = Arbitraries.oneOf(Arbitraries.of(':', '-', '{', '}', '[', ']', ',', ' ', '\t',
                '#', '"', '\'', '&', '*', '!', '|', '>', '%', '@', '\n', '0', '9', '.', 'x', 'e'),
                Arbitraries.chars().ascii());
        return Combinators.combine(Arbitraries.integers().between(0, 5), Arbitraries.doubles().between(0, 1), chars,
                Arbitraries.integers().between(0, VALUES.size() - 1)).as(TextEdit::new);
    }

    /** The text with this edit made. */
    public String apply(String text) {
        List<String> lines = new ArrayList<>(Arrays.asList(text.split("\n", -1)));
        int line = Math.min(lines.size() - 1, (int) (where * lines.size()));
        int at = Math.min(text.length(), (int) (where * text.length()));
        return switch (kind) {
            case 0 -> {
                lines.remove(line);
                yield String.join("\n", lines);
            }
            case 1 -> {
                lines.add(line, lines.get(line));
                yield String.join("\n", lines);
            }
            case 2 -> at < text.length() ? text.substring(0, at) + c + text.substring(at + 1) : text + c;
            case 3 -> text.substring(0, at) + c + text.substring(at);
            case 4 -> {
                Matcher m = NUMBER_VALUE.matcher(text);
                yield m.find(at) || m.find(0) ? text.substring(0, m.start()) + VALUES.get(value) + text.substring(m.end())
                        : text;
            }
            default -> text.substring(0, at);
        };
    }

    /** How many lines YAML counts in {@code text}: a lone carriage return breaks a line too (YAML 1.2, 5.4). */
    public static int lines(String text) {
        return text.split("\r\n|\r|\n", -1).length;
    }
}
