package dev.sextant.config;

import dev.sextant.config.YamlTree.Entry;
import dev.sextant.config.YamlTree.Kind;
import dev.sextant.config.YamlTree.Mapping;
import dev.sextant.config.YamlTree.Node;
import dev.sextant.config.YamlTree.Scalar;
import dev.sextant.config.YamlTree.Sequence;
import java.math.BigInteger;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.error.MarkedYAMLException;
import org.yaml.snakeyaml.events.AliasEvent;
import org.yaml.snakeyaml.events.CollectionStartEvent;
import org.yaml.snakeyaml.events.Event;
import org.yaml.snakeyaml.events.NodeEvent;
import org.yaml.snakeyaml.events.ScalarEvent;
import org.yaml.snakeyaml.nodes.NodeId;
import org.yaml.snakeyaml.nodes.Tag;
import org.yaml.snakeyaml.parser.Parser;
import org.yaml.snakeyaml.parser.ParserImpl;
import org.yaml.snakeyaml.reader.ReaderException;
import org.yaml.snakeyaml.reader.StreamReader;
import org.yaml.snakeyaml.resolver.Resolver;

/**
 * Builds a {@link YamlTree} from SnakeYAML's parser events, so that every node keeps its line, and standard YAML's
 * anchors ({@code &h100}), aliases ({@code *h100}) and merge keys ({@code <<: *h100}) are read as the value written
 * out would be.
 *
 * <p>An alias is the anchored node itself, not a copy: the tree is a graph in which a repeated value is stored once,
 * so a node under an alias names the lines of the anchor's definition. What a walk of the tree visits is still the
 * value written out, so an alias bomb ("billion laughs": nine aliases of nine aliases of …) would make any walk
 * exponential. Each node's expanded size is therefore known when it is built, and the values that aliases repeat
 * count towards {@link YamlTree#MAX_ALIAS_VALUES}: the alias that crosses the bound is refused at its line before
 * anything is walked. SnakeYAML's own guard ({@code LoaderOptions.maxAliasesForCollections}, 50 aliases) is not
 * used: it lives in the composer, which this reader does not use, and it would refuse a generated fleet whose
 * thousand engines share one profile by alias. Aliases also count towards the nesting limit, as the written-out
 * value would. An alias must follow its anchor, so a value cannot contain itself.
 *
 * <p>Merge keys follow the YAML 1.1 merge-key type: the mapping's own keys win over merged ones, and of a list of
 * merged mappings the earlier wins. A key written twice in one mapping is a problem, as it is with no merge.
 *
 * <p>Plain scalars are typed as YAML 1.1 does (SnakeYAML's resolver: {@code yes}/{@code no} are booleans,
 * {@code 0x1F} and {@code 017} integers), except sexagesimal numbers ({@code 1:30}), which stay strings.
 */
final class YamlEvents {
    private static final Resolver RESOLVER = new Resolver();
    /** A key written at the start of a line (after its indentation, and a list's dash), for syntax errors. */
    private static final Pattern LINE_KEY = Pattern.compile("^(?:-[ \\t]+)?([A-Za-z0-9_.-]+)[ \\t]*:(?:[ \\t]|$)");
    /** Longest number, characters: a longer one costs quadratic time to convert and is no configuration value. */
    private static final int MAX_NUMBER_CHARS = 1000;

    private final Parser parser;
    private final String text;
    private final String source;
    private final List<ConfigProblem> problems;
    private final Map<String, Built> anchors = new HashMap<>();
    /** The open collections, innermost first, to name the field of a syntax error. */
    private final Deque<Open> open = new ArrayDeque<>();
    private long aliasValues;

    /** A node with the number of values it stands for, itself included, and its depth of nesting (a scalar: 0). */
    private record Built(Node node, long size, int height) {
    }

    private record Open(String path, int column, boolean flow) {
    }

    /** A problem after which the rest of the document is not read. */
    private static final class Stop extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Stop() {
            super(null, null, false, false);
        }
    }

    private YamlEvents(String text, String source, List<ConfigProblem> problems) {
        LoaderOptions options = new LoaderOptions();
        options.setCodePointLimit(YamlTree.MAX_DOCUMENT_CHARS);
        options.setNestingDepthLimit(YamlTree.MAX_NESTING);
        this.parser = new ParserImpl(new StreamReader(text), options);
        this.text = text;
        this.source = source;
        this.problems = problems;
    }

    /** See {@link YamlTree#parse(String, String, List)}. */
    static Node parse(String text, String source, List<ConfigProblem> problems) {
        if (text.length() > YamlTree.MAX_DOCUMENT_CHARS) {
            problems.add(new ConfigProblem(source, 0, "", "a document of " + text.length()
                    + " characters (expected: at most " + YamlTree.MAX_DOCUMENT_CHARS + ")"));
            return null;
        }
        int line = 1;
        int start = 0;
        for (int i = 0; i <= text.length(); i++) {
            if (i == text.length() || text.charAt(i) == '\n') {
                if (i - start > YamlTree.MAX_LINE_CHARS) {
                    problems.add(new ConfigProblem(source, line, "", "a line of " + (i - start)
                            + " characters (expected: at most " + YamlTree.MAX_LINE_CHARS + ")"));
                    return null;
                }
                line++;
                start = i + 1;
            }
        }
        return new YamlEvents(text, source, problems).document();
    }

    private Node document() {
        try {
            parser.getEvent(); // the stream's start
            Event e = parser.getEvent();
            if (e.is(Event.ID.StreamEnd)) {
                problems.add(new ConfigProblem(source, 1, "", "empty document (expected: a mapping)"));
                return null;
            }
            Built root = node(parser.getEvent(), "", 1);
            parser.getEvent(); // the document's end
            Event after = parser.getEvent();
            if (!after.is(Event.ID.StreamEnd)) {
                problems.add(new ConfigProblem(source, line(after.getStartMark()), "",
                        "a second YAML document (expected: one document)"));
                return null;
            }
            return root.node();
        } catch (Stop e) {
            return null;
        } catch (MarkedYAMLException e) {
            Mark at = e.getProblemMark() != null ? e.getProblemMark() : e.getContextMark();
            int line = at == null ? 0 : line(at);
            String problem = e.getProblem() != null ? e.getProblem() : e.getContext();
            problems.add(new ConfigProblem(source, line, fieldAt(line), "YAML syntax: " + oneLine(problem)
                    + (at == null ? "" : " (column " + (at.getColumn() + 1) + ")")));
            return null;
        } catch (ReaderException e) {
            // a character YAML does not allow (a control character, a lone surrogate): the reader gives no mark, only
            // the character's place, counted in code points
            // (the reader checks a block of the text ahead of the parser, so the open collections say nothing of where
            // the character is: the field is the key its line starts with, if any)
            Place at = place(e.getPosition());
            int end = at.lineStart();
            while (end < text.length() && !lineBreak(text.charAt(end))) {
                end++;
            }
            Matcher key = LINE_KEY.matcher(text.substring(at.lineStart(), end).strip());
            problems.add(new ConfigProblem(source, at.line(), key.find() ? key.group(1) : "", String.format(
                    "YAML syntax: character U+%04X (expected: printable characters, tabs and line breaks) (column %d)",
                    e.getCodePoint(), at.column())));
            return null;
        } catch (RuntimeException e) {
            // the scanner reports some other malformed input without a mark; still bad input
            problems.add(new ConfigProblem(source, 0, "", "YAML syntax: " + oneLine(String.valueOf(e.getMessage()))));
            return null;
        }
    }

    /** Reads the node that starts with {@code e}, at {@code depth} (the root's is 1). */
    private Built node(Event e, String path, int depth) {
        Built b;
        if (e instanceof AliasEvent a) {
            return alias(a, path, depth);
        } else if (e instanceof ScalarEvent s) {
            b = new Built(scalar(s, path), 1, 0);
        } else if (e instanceof CollectionStartEvent c) {
            if (depth > YamlTree.MAX_NESTING) {
                stop(line(e.getStartMark()), path, "nesting depth above " + YamlTree.MAX_NESTING
                        + " (expected: at most " + YamlTree.MAX_NESTING + " levels of mappings and lists)");
            }
            checkTag(c.getTag(), c.is(Event.ID.MappingStart) ? Tag.MAP : Tag.SEQ, line(e.getStartMark()), path);
            open.push(new Open(path, c.getStartMark().getColumn(), c.isFlow()));
            b = c.is(Event.ID.MappingStart) ? mapping(c, path, depth) : sequence(c, path, depth);
            open.pop();
        } else {
            throw new IllegalStateException("event " + e + " where a node starts");
        }
        String anchor = ((NodeEvent) e).getAnchor();
        if (anchor != null) {
            anchors.put(anchor, b);
        }
        return b;
    }

    private Built alias(AliasEvent a, String path, int depth) {
        int line = line(a.getStartMark());
        Built b = anchors.get(a.getAnchor());
        if (b == null) {
            problems.add(new ConfigProblem(source, line, path, "alias *" + a.getAnchor()
                    + " (expected: an anchor &" + a.getAnchor() + " defined before it, outside its own value)"));
            return new Built(new Scalar(line, Kind.OTHER, "*" + a.getAnchor(), Double.NaN), 1, 0);
        }
        aliasValues += b.size();
        if (aliasValues > YamlTree.MAX_ALIAS_VALUES) {
            stop(line, path, "alias *" + a.getAnchor() + " repeats more values than allowed (expected: aliases"
                    + " repeating at most " + YamlTree.MAX_ALIAS_VALUES + " values in all)");
        }
        if (depth - 1 + b.height() > YamlTree.MAX_NESTING) {
            stop(line, path, "alias *" + a.getAnchor() + " nests its value deeper than allowed (expected: at most "
                    + YamlTree.MAX_NESTING + " levels of mappings and lists, aliases written out)");
        }
        return b;
    }

    private Built mapping(CollectionStartEvent start, String path, int depth) {
        List<Raw> raw = new ArrayList<>();
        while (!parser.checkEvent(Event.ID.MappingEnd)) {
            Event k = parser.getEvent();
            int keyLine = line(k.getStartMark());
            String key = key(k, path, depth);
            boolean merge = k instanceof ScalarEvent s && isMerge(s);
            Built value = node(parser.getEvent(), merge ? YamlTree.child(path, "<<") : YamlTree.child(path,
                    key == null ? "?" : key), depth + 1);
            if (key != null) {
                raw.add(new Raw(key, keyLine, value, merge));
            }
        }
        parser.getEvent();
        Set<String> own = new HashSet<>();
        raw.forEach(r -> {
            if (!r.merge()) {
                own.add(r.key());
            }
        });
        Map<String, Entry> entries = new LinkedHashMap<>();
        long size = 1;
        int height = 1;
        for (Raw r : raw) {
            size += r.value().size();
            height = Math.max(height, r.merge() ? r.value().height() : 1 + r.value().height());
            if (r.merge()) {
                for (Mapping m : merged(r, path)) {
                    m.entries().forEach((k, e) -> {
                        if (!own.contains(k)) {
                            entries.putIfAbsent(k, e);
                        }
                    });
                }
                continue;
            }
            Entry first = entries.get(r.key());
            if (first == null) {
                entries.put(r.key(), new Entry(r.keyLine(), r.value().node()));
            } else {
                problems.add(new ConfigProblem(source, r.keyLine(), YamlTree.child(path, r.key()), "duplicate key '"
                        + r.key() + "' (expected: each key once; first at line " + first.keyLine() + ")"));
            }
        }
        return new Built(new Mapping(line(start.getStartMark()), Collections.unmodifiableMap(entries)), size, height);
    }

    /** A key as it was read; {@code merge} for {@code <<}. */
    private record Raw(String key, int keyLine, Built value, boolean merge) {
    }

    /** The mappings a merge key names: one mapping, or a list of them; a problem (and none) otherwise. */
    private List<Mapping> merged(Raw r, String path) {
        Node n = r.value().node();
        if (n instanceof Mapping m) {
            return List.of(m);
        }
        if (n instanceof Sequence s && s.items().stream().allMatch(i -> i instanceof Mapping)) {
            return s.items().stream().map(i -> (Mapping) i).toList();
        }
        if (!(n instanceof Scalar s && s.kind() == Kind.OTHER)) {
            problems.add(new ConfigProblem(source, r.keyLine(), YamlTree.child(path, "<<"), YamlTree.shown(n)
                    + " (expected: a mapping, or a list of mappings, to merge, such as <<: *profile)"));
        }
        return List.of();
    }

    /** The text of a mapping's key, or null (after a problem) when the key is not a scalar. */
    private String key(Event k, String path, int depth) {
        Built b = node(k, path, depth + 1);
        if (b.node() instanceof Scalar s) {
            return s.kind() == Kind.NULL && s.text().isEmpty() ? "~" : s.text();
        }
        problems.add(new ConfigProblem(source, line(k.getStartMark()), path, "a key that is "
                + YamlTree.shown(b.node()) + " (expected: a string)"));
        return null;
    }

    private static boolean isMerge(ScalarEvent s) {
        return s.getTag() == null ? s.isPlain() && s.getValue().equals("<<") : s.getTag().equals(Tag.MERGE.getValue());
    }

    private Built sequence(CollectionStartEvent start, String path, int depth) {
        List<Node> items = new ArrayList<>();
        long size = 1;
        int height = 1;
        while (!parser.checkEvent(Event.ID.SequenceEnd)) {
            Built item = node(parser.getEvent(), path + "[" + items.size() + "]", depth + 1);
            items.add(item.node());
            size += item.size();
            height = Math.max(height, 1 + item.height());
        }
        parser.getEvent();
        return new Built(new Sequence(line(start.getStartMark()), List.copyOf(items)), size, height);
    }

    private Scalar scalar(ScalarEvent s, String path) {
        int line = line(s.getStartMark());
        String v = s.getValue();
        String tag = s.getTag();
        if (tag == null || tag.equals("!")) {
            if (tag != null || !s.getImplicit().canOmitTagInPlainScalar()) {
                return new Scalar(line, Kind.STRING, v, Double.NaN); // quoted, or the non-specific tag
            }
            tag = RESOLVER.resolve(NodeId.scalar, v, true).getValue();
        } else if (!checkTag(tag, null, line, path)) {
            return new Scalar(line, Kind.OTHER, v, Double.NaN);
        }
        if (tag.equals(Tag.BOOL.getValue())) {
            return new Scalar(line, Kind.BOOLEAN, v, Double.NaN);
        }
        if (tag.equals(Tag.NULL.getValue())) {
            return new Scalar(line, Kind.NULL, "", Double.NaN);
        }
        boolean integer = tag.equals(Tag.INT.getValue());
        if ((integer || tag.equals(Tag.FLOAT.getValue())) && !v.contains(":")) {
            if (v.length() > MAX_NUMBER_CHARS) {
                problems.add(new ConfigProblem(source, line, path, "a number of " + v.length()
                        + " characters (expected: at most " + MAX_NUMBER_CHARS + ")"));
                return new Scalar(line, Kind.OTHER, v.substring(0, 20) + "…", Double.NaN);
            }
            Double n = integer ? integerValue(v) : floatValue(v);
            if (n != null) {
                return new Scalar(line, integer ? Kind.INTEGER : Kind.FLOAT, v, n);
            }
        }
        return new Scalar(line, Kind.STRING, v, Double.NaN);
    }

    /**
     * True for a tag this reader understands (the core schema's, or {@code expected}); otherwise a problem: a tag
     * names a type to construct, and a configuration has only strings, numbers, booleans, mappings and lists.
     */
    private boolean checkTag(String tag, Tag expected, int line, String path) {
        if (tag == null || tag.equals("!") || expected != null && tag.equals(expected.getValue())) {
            return true;
        }
        for (Tag t : new Tag[] {Tag.STR, Tag.INT, Tag.FLOAT, Tag.BOOL, Tag.NULL}) {
            if (expected == null && tag.equals(t.getValue())) {
                return true;
            }
        }
        problems.add(new ConfigProblem(source, line, path, "tag " + tag
                + " (expected: no tag, or one of !!str, !!int, !!float, !!bool, !!null, !!map, !!seq)"));
        return false;
    }

    /** YAML 1.1 integers: {@code 1_000}, {@code 0x1F}, {@code 0b101}, {@code 017} (octal); null when not one. */
    private static Double integerValue(String text) {
        String t = text.replace("_", "");
        boolean minus = t.startsWith("-");
        if (minus || t.startsWith("+")) {
            t = t.substring(1);
        }
        int radix = 10;
        if (t.startsWith("0x")) {
            radix = 16;
            t = t.substring(2);
        } else if (t.startsWith("0b")) {
            radix = 2;
            t = t.substring(2);
        } else if (t.length() > 1 && t.startsWith("0")) {
            radix = 8;
            t = t.substring(1);
        }
        try {
            double v = new BigInteger(t, radix).doubleValue();
            return minus ? -v : v;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /**
     * A float's value; YAML's special floats ({@code .nan}, {@code .inf}, {@code -.inf} in their three spellings)
     * too, so that the field that holds one gets its own message ({@code engines[0].capacity_rps: NaN (expected: a
     * finite number > 0)}), not a syntax error. Null when not a float.
     */
    private static Double floatValue(String text) {
        switch (text) {
            case ".nan", ".NaN", ".NAN":
                return Double.NaN;
            case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
                return Double.POSITIVE_INFINITY;
            case "-.inf", "-.Inf", "-.INF":
                return Double.NEGATIVE_INFINITY;
            default:
                try {
                    return Double.parseDouble(text.replace("_", ""));
                } catch (NumberFormatException e) {
                    return null;
                }
        }
    }

    private void stop(int line, String path, String message) {
        problems.add(new ConfigProblem(source, line, path, message));
        throw new Stop();
    }

    /**
     * The field a syntax error at {@code line} is in: the key written on that line, in the innermost open mapping
     * it is indented under (a flow collection's own path when the error is inside one); empty when unknown.
     */
    private String fieldAt(int line) {
        String[] lines = text.split("\r\n|\r|\n", -1);
        if (line < 1 || line > lines.length) {
            return "";
        }
        String l = lines[line - 1];
        int indent = 0;
        while (indent < l.length() && (l.charAt(indent) == ' ' || l.charAt(indent) == '\t')) {
            indent++;
        }
        Matcher key = LINE_KEY.matcher(l.substring(indent));
        for (Open o : open) {
            if (o.flow()) {
                return o.path();
            }
            if (o.column() <= indent) {
                return key.find() ? YamlTree.child(o.path(), key.group(1)) : o.path();
            }
        }
        return key.find() ? key.group(1) : "";
    }

    /** Where a code point is: its line and column (both from 1), and the index in the text where its line starts. */
    private record Place(int line, int column, int lineStart) {
    }

    /** A line break as the YAML reader counts one: a line feed, a carriage return, U+0085, U+2028, U+2029. */
    private static boolean lineBreak(int c) {
        return c == '\n' || c == '\r' || c == 0x85 || c == 0x2028 || c == 0x2029;
    }

    /** The place of the code point at {@code index}; a carriage return before a line feed ends no line of its own. */
    private Place place(int index) {
        int line = 1;
        int column = 1;
        int start = 0;
        int i = 0;
        for (int n = 0; i < text.length() && n < index; n++) {
            int c = text.codePointAt(i);
            i += Character.charCount(c);
            if (c == '\r' && i < text.length() && text.charAt(i) == '\n') {
                continue; // the line feed ends this line
            }
            if (lineBreak(c)) {
                line++;
                column = 1;
                start = i;
            } else {
                column++;
            }
        }
        return new Place(line, column, start);
    }

    private static int line(Mark m) {
        return m == null ? 0 : m.getLine() + 1;
    }

    /** The scanner's message on one line; its words for a tab (which hold the tab itself) made plain. */
    private static String oneLine(String s) {
        if (s == null) {
            return "malformed";
        }
        if (s.contains("(TAB)")) {
            return "a tab (expected: spaces; YAML does not allow tabs for indentation)";
        }
        return s.replaceAll("\\s*\\R\\s*", " ").trim();
    }
}
