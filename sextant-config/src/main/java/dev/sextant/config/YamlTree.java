package dev.sextant.config;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLParser;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.LoaderOptions;

/**
 * A YAML document as a small tree whose every node remembers its line, read token by token with
 * Jackson's YAML parser. Jackson's own {@code JsonNode} forgets locations, and the loader's messages
 * need them.
 */
final class YamlTree {
    /*
     * Aliases (profile: *h100) are rejected rather than expanded: Jackson's anchor-replaying parser
     * silently drops aliases nested inside an anchored node, and a topology must never lose a value.
     *
     * Limits, set here rather than left to library defaults, so that no input can make a load slow or large: a
     * topology nests 6 levels deep (root, engines, an engine, profile, points, a point), and the largest fleets we
     * model are a few MB of YAML (a long string is bounded by the document's limit). Aliases are refused (above) and never expanded, so
     * an alias bomb costs its own length; the alias limit is set to none as a second guard.
     */
    /** Deepest nesting of mappings and lists. */
    static final int MAX_NESTING = 64;
    /** Largest document, characters (and bytes of a file, checked before reading it). */
    static final int MAX_DOCUMENT_CHARS = 16 << 20;

    private static final YAMLFactory YAML = YAMLFactory.builder().loaderOptions(loaderOptions())
            .streamReadConstraints(StreamReadConstraints.builder()
                    .maxNestingDepth(MAX_NESTING)
                    .maxNumberLength(1000)
                    .maxDocumentLength(MAX_DOCUMENT_CHARS)
                    .build())
            .build();

    private static LoaderOptions loaderOptions() {
        LoaderOptions o = new LoaderOptions();
        o.setCodePointLimit(MAX_DOCUMENT_CHARS);
        o.setNestingDepthLimit(MAX_NESTING);
        o.setMaxAliasesForCollections(0);
        o.setAllowRecursiveKeys(false);
        return o;
    }

    private YamlTree() {
    }

    /** A node of the tree; {@code line} is 1-based. */
    sealed interface Node permits Scalar, Mapping, Sequence {
        int line();
    }

    /** The kinds of scalar; OTHER (an alias, binary data) is already reported as a problem when read. */
    enum Kind { STRING, INTEGER, FLOAT, BOOLEAN, NULL, OTHER }

    /** A scalar; {@code number} is its value when {@code kind} is INTEGER or FLOAT, else NaN. */
    record Scalar(int line, Kind kind, String text, double number) implements Node {
    }

    /** A key's line and its value. */
    record Entry(int keyLine, Node value) {
    }

    /** A mapping, keys in file order. */
    record Mapping(int line, Map<String, Entry> entries) implements Node {
    }

    record Sequence(int line, List<Node> items) implements Node {
    }

    /**
     * Parses {@code text}; returns null (and adds a problem) when it is not one well-formed YAML
     * document. Duplicate keys are problems too; the first occurrence is kept.
     */
    static Node parse(String text, String source, List<ConfigProblem> problems) {
        try (JsonParser p = YAML.createParser(text)) {
            return parse(p, source, problems);
        } catch (IOException | RuntimeException e) {
            problems.add(new ConfigProblem(source, 0, "", "YAML syntax: " + oneLine(String.valueOf(e.getMessage()))));
            return null;
        }
    }

    /** Reads the one document of {@code p} (YAML or JSON) as a tree; see {@link #parse(String, String, List)}. */
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
            problems.add(new ConfigProblem(source, line(e.getLocation()), "", "YAML syntax: " + oneLine(e.getOriginalMessage())));
            return null;
        } catch (IOException | RuntimeException e) {
            // The YAML scanner reports some malformed input with unchecked exceptions; it is still bad input.
            problems.add(new ConfigProblem(source, 0, "", "YAML syntax: " + oneLine(String.valueOf(e.getMessage()))));
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
                if (p instanceof YAMLParser y && y.isCurrentAlias()) {
                    problems.add(new ConfigProblem(source, line, path, "alias *" + p.getText()
                            + " (expected: the value written out; anchors and aliases are not supported)"));
                    return new Scalar(line, Kind.OTHER, "*" + p.getText(), Double.NaN);
                }
                return new Scalar(line, Kind.STRING, p.getText(), Double.NaN);
            case VALUE_NUMBER_INT:
                return new Scalar(line, Kind.INTEGER, p.getText(), p.getDoubleValue());
            case VALUE_NUMBER_FLOAT:
                return new Scalar(line, Kind.FLOAT, p.getText(), floatValue(p));
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

    /**
     * A float's value; YAML's special floats ({@code .nan}, {@code .inf}, {@code -.inf} in their three spellings)
     * too, which Jackson reads as float tokens but cannot convert, so that the field that holds one gets its own
     * message ({@code engines[0].capacity_rps: NaN (expected: a finite number > 0)}), not a syntax error.
     */
    private static double floatValue(JsonParser p) throws IOException {
        String text = p.getText();
        switch (text) {
            case ".nan", ".NaN", ".NAN":
                return Double.NaN;
            case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
                return Double.POSITIVE_INFINITY;
            case "-.inf", "-.Inf", "-.INF":
                return Double.NEGATIVE_INFINITY;
            default:
                return p.getDoubleValue();
        }
    }

    /** {@code parent.key}, or {@code key} at the root. */
    static String child(String parent, String key) {
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
    record Located(int line, Node node) {
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

    private static final Pattern SCANNER_MARK =
            Pattern.compile("\\s*in '[^']*', line \\d+, column (\\d+):.*$", Pattern.DOTALL);

    /** The scanner's message on one line, its source excerpt replaced by the column (the line is named anyway). */
    private static String oneLine(String s) {
        if (s == null) {
            return "malformed";
        }
        Matcher m = SCANNER_MARK.matcher(s);
        String text = m.find() ? s.substring(0, m.start()) + " (column " + m.group(1) + ")" : s;
        return text.replaceAll("\\s*\\R\\s*", " ").trim();
    }
}
