package dev.sextant.config;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.exc.InvalidFormatException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.exc.ValueInstantiationException;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sextant.snapshot.EngineGroup;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * A {@link Snapshot} as JSON, the form {@code sextant solve} prints and the control plane serves
 * (documented in {@code docs/snapshot.md}).
 *
 * <p>Field names are the records' in snake_case ({@code routes.<gateway>.<class>.weights.<engine>},
 * {@code engines.<engine>.load_rps}, {@code objective.gap_relative}, …). The text is deterministic:
 * equal snapshots give byte-identical JSON. Non-finite numbers (an overloaded engine's infinite latency,
 * the NaN price of a policy without prices) are written as {@code null} and read back as NaN, so
 * {@code read(write(s)).equals(s)} holds for snapshots whose numbers are all finite.
 */
public final class SnapshotJson {

    private SnapshotJson() {
    }

    /** {@code snapshot} as pretty JSON, ending with a line feed. */
    public static String write(Snapshot snapshot) {
        return Json.write(Objects.requireNonNull(snapshot, "snapshot"));
    }

    /** Reads a snapshot; messages call the text {@code snapshot}. */
    public static Snapshot read(String json) throws SnapshotException {
        return read(json, "snapshot");
    }

    /**
     * Reads a snapshot.
     *
     * @param source the name messages give the text, e.g. its file name
     * @throws SnapshotException naming the line and field of the first problem
     */
    public static Snapshot read(String json, String source) throws SnapshotException {
        if (json.isBlank()) { // Jackson calls this a type mismatch, which misleads
            throw new SnapshotException(List.of(new ConfigProblem(source, 1, "", "empty (expected: a snapshot object)")));
        }
        JsonNode tree = null;
        try {
            tree = Json.MAPPER.readTree(json);
            Snapshot s = Json.MAPPER.treeToValue(withOptionalFields(tree), Snapshot.class);
            if (s == null) {
                throw new SnapshotException(List.of(new ConfigProblem(source, 1, "", "null (expected: a snapshot object)")));
            }
            String unknown = unknownEngine(s);
            if (unknown != null) {
                YamlTree.Located at = fieldLines(json).get(unknown);
                throw new SnapshotException(List.of(new ConfigProblem(source, at == null ? 1 : at.line(), unknown,
                        "not an engine of the snapshot (expected: a key of engines)")));
            }
            return s;
        } catch (JsonProcessingException e) {
            throw new SnapshotException(List.of(problem(source, e, json, tree)));
        }
    }

    /**
     * {@code tree} with the fields that are written only when they say something filled in where they are absent:
     * an empty {@code groups} wherever a snapshot or a route has none (a snapshot of routes weighted engine by
     * engine, or one written before groups existed), and a null (NaN) {@code allowed_utilization} for a route
     * without one (a snapshot from a producer that predates the field; its class's retry budget then follows
     * {@code fleet_utilization}), {@code none} for an engine's absent {@code priority_scheduling}, and a null (NaN)
     * {@code batch_places} for an engine whose batch the policy does not know, and likewise {@code context_kept_seconds}
     * for one whose cache's keeping time it does not know. Such a snapshot reads, hashes and writes
     * back as it did.
     */
    private static JsonNode withOptionalFields(JsonNode tree) {
        if (tree instanceof ObjectNode root) {
            root.putIfAbsent("groups", root.objectNode());
            if (root.get("engines") instanceof ObjectNode engines) {
                engines.forEach(e -> {
                    if (e instanceof ObjectNode engine) {
                        engine.putIfAbsent("priority_scheduling", engine.textNode("none"));
                        engine.putIfAbsent("batch_places", engine.nullNode());
                        engine.putIfAbsent("context_kept_seconds", engine.nullNode());
                    }
                });
            }
            if (root.get("routes") instanceof ObjectNode routes) {
                routes.forEach(byClass -> byClass.forEach(route -> {
                    if (route instanceof ObjectNode r) {
                        r.putIfAbsent("groups", r.objectNode());
                        r.putIfAbsent("allowed_utilization", r.nullNode());
                    }
                }));
            }
        }
        return tree;
    }

    /**
     * The field of the first engine a route weights, or a group holds, that the snapshot's {@code engines} lack; null
     * when there is none. A gateway has no address for such an engine and would drop its weight without a word.
     */
    private static String unknownEngine(Snapshot s) {
        for (Map.Entry<String, EngineGroup> g : s.groups().entrySet()) {
            for (String engine : g.getValue().shares().keySet()) {
                if (!s.engines().containsKey(engine)) {
                    return "groups." + g.getKey() + ".shares." + engine;
                }
            }
        }
        for (Map.Entry<String, Map<String, Route>> byClass : s.routes().entrySet()) {
            for (Map.Entry<String, Route> r : byClass.getValue().entrySet()) {
                for (String engine : r.getValue().weights().keySet()) {
                    if (!s.engines().containsKey(engine)) {
                        return "routes." + byClass.getKey() + "." + r.getKey() + ".weights." + engine;
                    }
                }
            }
        }
        return null;
    }

    /**
     * Largest snapshot file read, bytes (256 MiB): the largest snapshot the project models, the whole snapshot of the
     * L fleet (4,096 engines, 64 gateway clusters; BENCHMARKS.md), is 32 MB of JSON, so this leaves room for fleets
     * eight times larger, and it keeps a file that is no snapshot ({@code /dev/zero}, a disk image) from filling the
     * heap.
     */
    public static final int MAX_FILE_BYTES = 256 << 20;

    /**
     * Reads the snapshot in {@code file}, at most {@link #MAX_FILE_BYTES} of it (a larger file is refused, not read);
     * messages name the file as given.
     */
    public static Snapshot read(Path file) throws SnapshotException {
        String text;
        try {
            text = BoundedFile.readString(file, MAX_FILE_BYTES);
        } catch (IOException | RuntimeException e) {
            throw new SnapshotException(List.of(new ConfigProblem(file.toString(), 0, "",
                    ConfigProblem.cannotRead(e))));
        }
        return read(text, file.toString());
    }

    /**
     * The problem of {@code e} in the project's words: the field's path and line, what is there and what is expected,
     * never a Java type or exception; {@code tree} is the text as read (null when it is not well-formed JSON).
     */
    private static ConfigProblem problem(String source, JsonProcessingException e, String json, JsonNode tree) {
        int line = YamlTree.line(e.getLocation());
        String path = "";
        String message = Json.message(e.getOriginalMessage());
        JsonNode node = tree;
        if (e instanceof JsonMappingException m) {
            path = m.getPath().stream()
                    .map(r -> r.getFieldName() != null ? "." + r.getFieldName() : "[" + r.getIndex() + "]")
                    .collect(Collectors.joining());
            path = path.startsWith(".") ? path.substring(1) : path;
            for (JsonMappingException.Reference r : m.getPath()) {
                node = node == null ? null : r.getFieldName() != null ? node.get(r.getFieldName()) : node.get(r.getIndex());
            }
        } else if (e.getProcessor() instanceof JsonParser p && message.startsWith("Non-standard token '")) {
            // NaN or Infinity, which JSON has no words for: said at the field it stands for
            path = pathOf(p.getParsingContext());
            message = message.substring("Non-standard token '".length(), message.indexOf('\'', 20))
                    + " is not a number in JSON (expected: a finite number)";
        }
        if (!path.isEmpty()) {
            // Jackson reports some problems (unknown keys of records) where it noticed them, past the
            // field; the field's own line is the one to name.
            YamlTree.Located at = fieldLines(json).get(path);
            if (at != null) {
                line = at.line();
            }
        }
        if (e instanceof UnrecognizedPropertyException u) {
            TreeSet<String> known = new TreeSet<>();
            u.getKnownPropertyIds().forEach(k -> known.add(String.valueOf(k)));
            message = "unknown key '" + u.getPropertyName() + "' (expected one of: " + String.join(", ", known) + ")";
        } else if (e instanceof ValueInstantiationException v && v.getCause() instanceof IllegalArgumentException iae) {
            message = Json.message(iae.getMessage());
            int colon = message.indexOf(": ");
            if (!path.isEmpty() && colon > 0 && !message.substring(0, colon).contains(" ")) {
                // the record names its own field (weights: missing): said at the field, under the record's path
                path = path + "." + message.substring(0, colon);
                message = message.substring(colon + 2);
                YamlTree.Located field = fieldLines(json).get(path);
                line = field == null ? line : field.line();
            }
        } else if (e instanceof ValueInstantiationException v) {
            message = "malformed (expected: " + expected(v.getType().getRawClass()) + ")";
        } else if (e instanceof InvalidFormatException f) {
            message = "'" + f.getValue() + "' (expected: " + expected(f.getTargetType()) + ")";
        } else if (e instanceof MismatchedInputException && message.contains("creator property")) {
            message = "missing (expected: a value)";
        } else if (e instanceof MismatchedInputException mi && mi.getTargetType() != null) {
            message = (node == null ? "wrong type" : shown(node)) + " (expected: " + expected(mi.getTargetType()) + ")";
            line = path.isEmpty() ? 1 : line; // the whole text: it starts on line 1
        } else if (!(e instanceof JsonMappingException) && !message.contains(" is not a number in JSON")) {
            message = "JSON syntax: " + message;
        }
        if (path.isEmpty() && message.indexOf(": ") > 0) {
            // a check of the whole snapshot names the field it refused (a grouped route's weight): give its line
            String field = message.substring(0, message.indexOf(": "));
            YamlTree.Located at = fieldLines(json).get(field);
            if (at != null) {
                return new ConfigProblem(source, at.line(), field, message.substring(field.length() + 2));
            }
        }
        return new ConfigProblem(source, line, path, message);
    }

    /** Every field of {@code json} by path with its line; empty when the text is not well-formed. */
    private static Map<String, YamlTree.Located> fieldLines(String json) {
        try (JsonParser p = Json.MAPPER.getFactory().createParser(json)) {
            YamlTree.Node root = YamlTree.parse(p, "", new ArrayList<>());
            return root == null ? Map.of() : YamlTree.index(root);
        } catch (IOException e) {
            return Map.of();
        }
    }

    /** What a value of {@code type} is in a snapshot's words: a number, a string, a list, an object. */
    private static String expected(Class<?> type) {
        if (type == double.class || type == Double.class || type == int.class || type == long.class
                || type == Integer.class || type == Long.class) {
            return "a number";
        }
        if (type == String.class) {
            return "a string";
        }
        if (type == Snapshot.class) {
            return "a snapshot object";
        }
        if (java.util.Collection.class.isAssignableFrom(type) || type.isArray()) {
            return "a list";
        }
        return "an object";
    }

    /** A JSON value as a problem shows it: a list or an object by its kind, a scalar as written. */
    private static String shown(JsonNode n) {
        return n.isArray() ? "a list" : n.isObject() ? "an object" : n.isTextual() ? "'" + n.asText() + "'"
                : n.toString();
    }

    /** The field path of a parser's place: {@code routes.east.chat.weights.east-1}, {@code retry_budget.curve[0]}. */
    private static String pathOf(com.fasterxml.jackson.core.JsonStreamContext c) {
        String path = "";
        for (; c != null && !c.inRoot(); c = c.getParent()) {
            path = (c.inArray() ? "[" + c.getCurrentIndex() + "]" : "." + c.getCurrentName()) + path;
        }
        return path.startsWith(".") ? path.substring(1) : path;
    }
}
