package dev.sextant.config;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A YAML (or JSON) document as a small tree whose every node remembers its line, so that a message can name the
 * file, the line and the field. YAML is read from SnakeYAML's parser events ({@link YamlEvents}: anchors, aliases and
 * merge keys, with bounds), JSON from Jackson's tokens.
 */
public final class YamlTree {
    /*
     * Limits, set here rather than left to library defaults, so that no input can make a load slow or large: a
     * topology nests 6 levels deep (root, engines, an engine, profile, points, a point), and the largest fleets we
     * model are a few MB of YAML (a long string is bounded by the document's limit). An alias is stored once and
     * counted as the values it repeats (YamlEvents), so an alias bomb stops at the bound, at the alias that crosses it.
     */
    /** Deepest nesting of mappings and lists, aliases counted as the value they stand for. */
    public static final int MAX_NESTING = 64;
    /** Largest document, characters (and bytes of a file, checked before reading it). */
    public static final int MAX_DOCUMENT_CHARS = 16 << 20;
    /**
     * The longest line a document may have, in characters. The YAML parser's cost grows with the square of a run of
     * text without a break (it copies its window as the run grows: a 1-MB scalar took 2.3 s, an 8-MB one 35 s), and no
     * hand-written or generated configuration has a line near 64 Ki characters; at this bound a document of the
     * largest size parses in a few seconds whatever its lines.
     */
    public static final int MAX_LINE_CHARS = 64 << 10;
    /**
     * Most values (scalars, mappings, lists) that aliases may repeat in one document, in all: a fleet of thousands of
     * engines sharing a profile by alias stays far below it; an alias bomb reaches it within a few lines.
     */
    public static final int MAX_ALIAS_VALUES = 1_000_000;

    private YamlTree() {
    }

    /** A node of the tree; {@code line} is 1-based. */
    public sealed interface Node permits Scalar, Mapping, Sequence {
        int line();
    }

    /** The kinds of scalar; OTHER (an undefined alias, a tag of another type) is already reported as a problem when read. */
    public enum Kind { STRING, INTEGER, FLOAT, BOOLEAN, NULL, OTHER }

    /** A scalar; {@code number} is its value when {@code kind} is INTEGER or FLOAT, else NaN. */
    public record Scalar(int line, Kind kind, String text, double number) implements Node {
    }

    /** A key's line and its value. */
    public record Entry(int keyLine, Node value) {
    }

    /** A mapping, keys in file order. */
    public record Mapping(int line, Map<String, Entry> entries) implements Node {
    }

    /** A list, items in file order. */
    public record Sequence(int line, List<Node> items) implements Node {
    }

    /**
     * Parses {@code text} as YAML; returns null (and adds a problem) when it is not one well-formed YAML document.
     * Duplicate keys are problems too; the first occurrence is kept.
     */
    static Node parse(String text, String source, List<ConfigProblem> problems) {
        return YamlEvents.parse(text, source, problems);
    }

    /** Reads the one JSON document of {@code p} as a tree (to find a field's line); see {@link #parse(String, String, List)}. */
    static Node parse(JsonParser p, String source, List<ConfigProblem> problems) {
        try {
            JsonToken t = p.nextToken();
            if (t == null) {
                problems.add(new ConfigProblem(source, 1, "", "empty document (expected: a mapping)"));
                return null;
            }
            Node root = read(p, t, "", source, problems);
            JsonToken extra = p.nextToken();
            if (extra != null) {
                problems.add(new ConfigProblem(source, line(p.currentTokenLocation()), "",
                        "a second YAML document (expected: one document)"));
                return null;
            }
            return root;
        } catch (JsonProcessingException e) {
            problems.add(new ConfigProblem(source, line(e.getLocation()), "", "syntax: " + oneLine(e.getOriginalMessage())));
            return null;
        } catch (IOException | RuntimeException e) {
            // The YAML scanner reports some malformed input with unchecked exceptions; it is still bad input.
            problems.add(new ConfigProblem(source, 0, "", "syntax: " + oneLine(String.valueOf(e.getMessage()))));
            return null;
        }
    }

    private static Node read(JsonParser p, JsonToken t, String path, String source, List<ConfigProblem> problems)
            throws IOException {
        int line = line(p.currentTokenLocation());
        switch (t) {
            case START_OBJECT: {
                Map<String, Entry> entries = new LinkedHashMap<>();
                for (JsonToken k = p.nextToken(); k != JsonToken.END_OBJECT; k = p.nextToken()) {
                    String key = p.currentName();
                    int keyLine = line(p.currentTokenLocation());
                    String childPath = child(path, key);
                    Node value = read(p, p.nextToken(), childPath, source, problems);
                    Entry first = entries.get(key);
                    if (first == null) {
                        entries.put(key, new Entry(keyLine, value));
                    } else {
                        problems.add(new ConfigProblem(source, keyLine, childPath, "duplicate key '" + key
                                + "' (expected: each key once; first at line " + first.keyLine() + ")"));
                    }
                }
                return new Mapping(line, Collections.unmodifiableMap(entries));
            }
            case START_ARRAY: {
                List<Node> items = new ArrayList<>();
                for (JsonToken i = p.nextToken(); i != JsonToken.END_ARRAY; i = p.nextToken()) {
                    items.add(read(p, i, path + "[" + items.size() + "]", source, problems));
                }
                return new Sequence(line, List.copyOf(items));
            }
            case VALUE_STRING:
                return new Scalar(line, Kind.STRING, p.getText(), Double.NaN);
            case VALUE_NUMBER_INT:
                return new Scalar(line, Kind.INTEGER, p.getText(), p.getDoubleValue());
            case VALUE_NUMBER_FLOAT:
                return new Scalar(line, Kind.FLOAT, p.getText(), p.getDoubleValue());
            case VALUE_TRUE:
            case VALUE_FALSE:
                return new Scalar(line, Kind.BOOLEAN, p.getText(), Double.NaN);
            case VALUE_NULL:
                return new Scalar(line, Kind.NULL, "", Double.NaN);
            default:
                problems.add(new ConfigProblem(source, line, path, "a " + t + " (expected: a string, number or boolean)"));
                return new Scalar(line, Kind.OTHER, String.valueOf(p.getText()), Double.NaN);
        }
    }

    /** {@code parent.key}, or {@code key} at the root. */
    public static String child(String parent, String key) {
        return parent.isEmpty() ? key : parent + "." + key;
    }

    /**
     * Every node by path ({@code engines[1].capacity_rps}) with its line: a mapping entry's line is its
     * key's, a list item's is its own.
     */
    static Map<String, Located> index(Node root) {
        Map<String, Located> out = new LinkedHashMap<>();
        out.put("", new Located(1, root));
        index(root, "", out);
        return out;
    }

    /** A node and the line a message about it should name. */
    public record Located(int line, Node node) {
    }

    private static void index(Node node, String path, Map<String, Located> out) {
        if (node instanceof Mapping m) {
            m.entries().forEach((k, e) -> {
                String p = child(path, k);
                out.putIfAbsent(p, new Located(e.keyLine(), e.value()));
                index(e.value(), p, out);
            });
        } else if (node instanceof Sequence s) {
            for (int i = 0; i < s.items().size(); i++) {
                String p = path + "[" + i + "]";
                out.putIfAbsent(p, new Located(s.items().get(i).line(), s.items().get(i)));
                index(s.items().get(i), p, out);
            }
        }
    }

    static int line(JsonLocation location) {
        return location == null || location.getLineNr() < 1 ? 0 : location.getLineNr();
    }

    /** The scanner's message on one line, its source excerpt replaced by the column (the line is named anyway). */
    private static String oneLine(String s) {
        return s == null ? "malformed" : s.replaceAll("\\s*\\R\\s*", " ").trim();
    }

    /** How a message shows a node that has the wrong type: {@code 'fast'}, {@code 3}, {@code a list}, {@code empty}. */
    public static String shown(Node n) {
        if (n instanceof Mapping) {
            return "a mapping";
        }
        if (n instanceof Sequence) {
            return "a list";
        }
        Scalar s = (Scalar) n;
        return switch (s.kind()) {
            case STRING -> "'" + s.text() + "'";
            case NULL -> "empty";
            default -> s.text();
        };
    }
}
