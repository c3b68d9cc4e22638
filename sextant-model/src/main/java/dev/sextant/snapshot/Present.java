package dev.sextant.snapshot;

import java.util.List;
import java.util.Map;

/**
 * Checks that a record's fields are there, naming the field: a snapshot read from a file whose field is null (or a
 * list or a map with a null in it) is refused with the field and what it must be, not with a NullPointerException.
 */
final class Present {

    private Present() {
    }

    /** {@code value}, refused at {@code field} when null; {@code expected} says what it must be. */
    static <T> T present(T value, String field, String expected) {
        if (value == null) {
            throw new IllegalArgumentException(field + ": missing (expected: " + expected + ")");
        }
        return value;
    }

    /** {@code m}, refused at {@code field} when null, or at {@code field.key} when a value is null. */
    static <V, M extends Map<String, V>> M values(M m, String field, String expected, String expectedValue) {
        present(m, field, expected).forEach((k, v) -> present(v, field + "." + k, expectedValue));
        return m;
    }

    /** {@code list} copied, refused at {@code field} when null, or at {@code field[i]} when an item is null. */
    static <T> List<T> items(List<T> list, String field, String expected, String expectedItem) {
        present(list, field, expected);
        for (int i = 0; i < list.size(); i++) {
            present(list.get(i), field + "[" + i + "]", expectedItem);
        }
        return List.copyOf(list);
    }
}
