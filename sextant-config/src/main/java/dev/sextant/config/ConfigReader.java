package dev.sextant.config;

import dev.sextant.config.YamlTree.Entry;
import dev.sextant.config.YamlTree.Kind;
import dev.sextant.config.YamlTree.Located;
import dev.sextant.config.YamlTree.Mapping;
import dev.sextant.config.YamlTree.Node;
import dev.sextant.config.YamlTree.Scalar;
import dev.sextant.config.YamlTree.Sequence;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One reading of a YAML configuration file (topology, scenario, gateway, control plane, engine): its tree and the
 * problems found so far, each naming the file, the line and the field ({@code gateway.yaml:7: port: 'eighty'
 * (expected: an integer)}). Every reader of a configuration file in Sextant goes through this class, so that they
 * all accept the same YAML (anchors, aliases and merge keys, with the bounds of {@link YamlTree}) and refuse the same
 * mistakes (a duplicate key, a tab where indentation is expected) with the same words.
 *
 * <p>A schema reads fields with the typed methods ({@link #string}, {@link #number}, …): each returns the value, or
 * the default when the key is absent, or null after recording a problem, so that one pass reports every problem of
 * a file. {@link #check()} then throws them all at once. A field is named by its path in the file's own key names
 * ({@code engines[1].profile.ttft_ms}); its line is the key's, or of the nearest enclosing node in the file. A value
 * reached through an alias or a merge key names the lines of the anchor's definition.
 *
 * <p>Not thread-safe: one reading per load.
 */
public final class ConfigReader {
    /** The prefix of a top-level key that holds no setting, only anchors to use elsewhere. */
    public static final String EXTENSION = "x-";
    private static final Pattern FIELD_MESSAGE = Pattern.compile("^([a-z][a-z0-9_]*): (.*)$", Pattern.DOTALL);

    private final String source;
    private final Path file;
    private final List<ConfigProblem> problems = new ArrayList<>();
    private final Node root;
    private final Map<String, Located> index;

    private ConfigReader(String source, Path file, String text) {
        this.source = source;
        this.file = file;
        this.root = text == null ? null : YamlTree.parse(text, source, problems);
        this.index = root == null ? Map.of() : YamlTree.index(root);
    }

    /**
     * Reads {@code file}; a file that is too large or cannot be read is a problem of the reading (line 0), never an
     * exception. Messages name the file as given. Any file is read to the document's limit at most: a device or a pipe
     * ({@code /dev/zero}, {@code /dev/stdin}) as well as a regular file.
     */
    public static ConfigReader read(Path file) {
        String text = null;
        String why = null;
        try {
            text = BoundedFile.readString(file, YamlTree.MAX_DOCUMENT_CHARS);
        } catch (IOException | RuntimeException e) {
            why = ConfigProblem.cannotRead(e);
        }
        ConfigReader r = new ConfigReader(file.toString(), file, text);
        if (why != null) {
            r.problems.add(new ConfigProblem(file.toString(), 0, "", why));
        }
        return r;
    }

    /**
     * Reads {@code yaml}; {@code source} is the name messages give it, e.g. its file name. Paths in it resolve
     * against the working directory.
     */
    public static ConfigReader of(String yaml, String source) {
        return new ConfigReader(source, null, yaml);
    }

    /** The name messages give the file. */
    public String source() {
        return source;
    }

    /**
     * The document's top-level mapping, or null after a problem: when the file could not be read or parsed, or (with
     * {@code expected} saying what it should be) when it holds something else. An empty file is an empty mapping when
     * {@code emptyIsEmpty}, else a problem.
     */
    public Mapping root(String expected, boolean emptyIsEmpty) {
        if (root == null) {
            if (emptyIsEmpty && problems.size() == 1 && problems.get(0).message().startsWith("empty document")) {
                problems.clear();
                return new Mapping(1, Map.of());
            }
            return null;
        }
        if (root instanceof Scalar s && s.kind() == Kind.NULL && emptyIsEmpty) {
            return new Mapping(1, Map.of());
        }
        if (root instanceof Mapping m) {
            return m;
        }
        problem("", YamlTree.shown(root) + " (expected: " + expected + ")");
        return null;
    }

    /** Every problem so far, in the order found. */
    public List<ConfigProblem> problems() {
        return List.copyOf(problems);
    }

    /** True when no problem has been found. */
    public boolean ok() {
        return problems.isEmpty();
    }

    /** Throws every problem found, in file order; does nothing when there is none. */
    public void check() throws ConfigException {
        if (!problems.isEmpty()) {
            throw new ConfigException(sorted());
        }
    }

    /** The problems in file order (by line; the order found within a line). */
    public List<ConfigProblem> sorted() {
        List<ConfigProblem> out = new ArrayList<>(problems);
        out.sort(Comparator.comparingInt(ConfigProblem::line));
        return out;
    }

    /** Records a problem at {@code path}, on the line of the node there (or of its nearest ancestor in the file). */
    public void problem(String path, String message) {
        problems.add(problem(path, message, lineOf(path)));
    }

    private ConfigProblem problem(String path, String message, int line) {
        return new ConfigProblem(source, line, path, message);
    }

    /** The problem {@link #problem(String, String)} would record, as a value (for a schema that stops at the first). */
    public ConfigProblem at(String path, String message) {
        return problem(path, message, lineOf(path));
    }

    /** The node at {@code path} and the line a message about it names, or null when there is none. */
    public Located located(String path) {
        return index.get(path);
    }

    /** The line of the node at {@code path}, or of its nearest ancestor that is in the file; 1 at worst. */
    public int lineOf(String path) {
        String p = path;
        while (true) {
            Located at = index.get(p);
            if (at != null) {
                return at.line();
            }
            if (p.isEmpty()) {
                return 1;
            }
            int cut = Math.max(p.lastIndexOf('.'), p.lastIndexOf('['));
            p = cut < 0 ? "" : p.substring(0, cut);
        }
    }

    /**
     * Reports the keys of {@code m} (at {@code path}) that are not in {@code allowed}. At the top of the file, keys
     * starting with {@code x-} are allowed and ignored: a place to define anchors ({@code x-profiles: {h100: &h100
     * {…}}}) that entries then use by alias or merge key.
     */
    public void keys(Mapping m, String path, Collection<String> allowed) {
        m.entries().forEach((k, e) -> {
            if (!allowed.contains(k) && !(path.isEmpty() && k.startsWith(EXTENSION))) {
                problem(YamlTree.child(path, k), "unknown key '" + k + "' (expected one of: "
                        + String.join(", ", allowed) + ")");
            }
        });
    }

    /**
     * The value under {@code key}, or null when it is absent or empty ({@code key:}, {@code ~}, {@code null}); then a
     * problem ({@code missing (expected: …)}, {@code empty (expected: …)}) when it is {@code required}.
     */
    public Node value(Mapping m, String path, String key, String expected, boolean required) {
        Entry e = m.entries().get(key);
        if (e == null || e.value() instanceof Scalar s && s.kind() == Kind.NULL) {
            if (required) {
                problem(YamlTree.child(path, key), (e == null ? "missing" : "empty") + " (expected: " + expected + ")");
            }
            return null;
        }
        return e.value();
    }

    /** A required string (any scalar, as written). */
    public String string(Mapping m, String path, String key) {
        Node n = value(m, path, key, "a string", true);
        return n == null ? null : text(n, path, key, "a string");
    }

    /** A string (any scalar, as written), or {@code dflt} when absent. */
    public String string(Mapping m, String path, String key, String dflt) {
        Node n = value(m, path, key, "a string", false);
        return n == null ? dflt : text(n, path, key, "a string");
    }

    private String text(Node n, String path, String key, String expected) {
        if (n instanceof Scalar s && s.kind() != Kind.OTHER) {
            return s.text();
        }
        return wrongType(path, key, n, expected);
    }

    /** A number, or {@code dflt} when absent (required when {@code dflt} is null). */
    public Double number(Mapping m, String path, String key, Double dflt) {
        Node n = value(m, path, key, "a number", dflt == null);
        if (n == null) {
            return dflt;
        }
        if (n instanceof Scalar s && (s.kind() == Kind.INTEGER || s.kind() == Kind.FLOAT)) {
            return s.number();
        }
        return wrongType(path, key, n, "a number");
    }

    /** An integer (a number with no fraction, within int), or {@code dflt} when absent (required when null). */
    public Integer integer(Mapping m, String path, String key, Integer dflt) {
        return integer(m, path, key, dflt, Integer.MIN_VALUE, Integer.MAX_VALUE);
    }

    /**
     * An integer in [{@code min}, {@code max}], or {@code dflt} when absent (required when null); a whole number out of
     * the range is said with the range, not as if it were no integer.
     */
    public Integer integer(Mapping m, String path, String key, Integer dflt, int min, int max) {
        Node n = value(m, path, key, "an integer", dflt == null);
        if (n == null) {
            return dflt;
        }
        if (n instanceof Scalar s && (s.kind() == Kind.INTEGER || s.kind() == Kind.FLOAT)
                && s.number() == Math.rint(s.number())) {
            if (s.number() >= min && s.number() <= max) {
                return (int) s.number();
            }
            problem(YamlTree.child(path, key), s.text() + " (expected: an integer from "
                    + String.format(java.util.Locale.ROOT, "%,d to %,d", min, max) + ")");
            return null;
        }
        return wrongType(path, key, n, "an integer");
    }

    /** A boolean ({@code true}, {@code false}, and YAML 1.1's {@code yes}, {@code no}, {@code on}, {@code off}). */
    public Boolean bool(Mapping m, String path, String key, Boolean dflt) {
        Node n = value(m, path, key, "true or false", dflt == null);
        if (n == null) {
            return dflt;
        }
        if (n instanceof Scalar s && s.kind() == Kind.BOOLEAN) {
            return switch (s.text().toLowerCase(java.util.Locale.ROOT)) {
                case "true", "yes", "on", "y" -> true;
                default -> false;
            };
        }
        return wrongType(path, key, n, "true or false");
    }

    /** A list of strings, or {@code dflt} when absent (required when null). */
    public List<String> stringList(Mapping m, String path, String key, List<String> dflt) {
        Node n = value(m, path, key, "a list of strings", dflt == null);
        if (n == null) {
            return dflt;
        }
        if (!(n instanceof Sequence s)) {
            return wrongType(path, key, n, "a list of strings");
        }
        List<String> out = new ArrayList<>();
        String p = YamlTree.child(path, key);
        for (int i = 0; i < s.items().size(); i++) {
            Node item = s.items().get(i);
            if (item instanceof Scalar sc && sc.kind() != Kind.NULL && sc.kind() != Kind.OTHER) {
                out.add(sc.text());
            } else {
                if (!(item instanceof Scalar sc && sc.kind() == Kind.OTHER)) {
                    problem(p + "[" + i + "]", YamlTree.shown(item) + " (expected: a string)");
                }
                return null;
            }
        }
        return out;
    }

    /** A required mapping; {@code expected} says what it should hold. */
    public Mapping mapping(Mapping m, String path, String key, String expected) {
        Node n = value(m, path, key, expected, true);
        if (n == null) {
            return null;
        }
        return n instanceof Mapping r ? r : wrongType(path, key, n, expected);
    }

    /** An optional mapping: an empty one when absent, null after a problem. */
    public Mapping optionalMapping(Mapping m, String path, String key, String expected) {
        Node n = value(m, path, key, expected, false);
        if (n == null) {
            return new Mapping(lineOf(YamlTree.child(path, key)), Map.of());
        }
        return n instanceof Mapping r ? r : wrongType(path, key, n, expected);
    }

    /** A required list. */
    public Sequence sequence(Mapping m, String path, String key) {
        Node n = value(m, path, key, "a list", true);
        if (n == null) {
            return null;
        }
        return n instanceof Sequence s ? s : wrongType(path, key, n, "a list");
    }

    /**
     * A file named by {@code key}, relative to the directory of the file being read, or null when absent; not read
     * here (see {@link #readable}).
     */
    public Path path(Mapping m, String path, String key) {
        String s = string(m, path, key, null);
        if (s == null) {
            return null;
        }
        Path p;
        try {
            p = Path.of(s);
        } catch (InvalidPathException e) {
            problem(YamlTree.child(path, key), "'" + s.replace("\0", "\\0") + "' (expected: a file path; "
                    + e.getReason() + ")");
            return null;
        }
        Path dir = file == null ? null : file.toAbsolutePath().getParent();
        return p.isAbsolute() || dir == null ? p : dir.resolve(p);
    }

    /**
     * True when {@code target}, the file {@code key} names, can be read now; otherwise a problem at the key, so that
     * a missing file names the file and line that referred to it: {@code control-plane.yaml:1: topology: t.yaml:
     * cannot read: no such file}.
     */
    public boolean readable(String path, Path target) {
        String why = null;
        if (Files.isDirectory(target)) {
            why = "cannot read: is a directory";
        } else if (!Files.isReadable(target)) {
            why = Files.exists(target) ? "cannot read: permission denied" : "cannot read: no such file";
        }
        if (why != null) {
            problem(path, target + ": " + why);
        }
        return why == null;
    }

    /**
     * As {@link #readable(String, Path)}, for a document the server reads again when it changes (a topology, a
     * credentials or tenants file, a snapshot): a regular file of at most {@code maxBytes}. Otherwise the problem is
     * said at {@code path}, the line that names the file, rather than by the file's own reading, which knows no key.
     */
    public boolean readable(String path, Path target, long maxBytes) {
        if (!readable(path, target)) {
            return false;
        }
        String why = null;
        if (!Files.isRegularFile(target)) {
            why = "not a regular file (expected: a file, read again when it changes)";
        } else {
            try {
                BoundedFile.checkSize(target, maxBytes);
            } catch (IOException e) {
                why = ConfigProblem.cannotRead(e);
            }
        }
        if (why != null) {
            problem(path, target + ": " + why);
        }
        return why == null;
    }

    /** Records that {@code n}, at {@code path}.{@code key}, is not what was {@code expected}; returns null. */
    public <T> T wrongType(String path, String key, Node n, String expected) {
        if (!(n instanceof Scalar s && s.kind() == Kind.OTHER)) {
            problem(YamlTree.child(path, key), YamlTree.shown(n) + " (expected: " + expected + ")");
        }
        return null;
    }

    /**
     * Runs a record constructor. Null arguments mean a problem was already reported, so the constructor's complaint
     * about them is dropped; its other complaints ({@code capacity_rps: -3.0 (expected: ...)}) become problems at the
     * field they name, under {@code path}.
     */
    public <T> T build(String path, Supplier<T> constructor) {
        int before = problems.size();
        try {
            T value = constructor.get();
            return problems.size() == before ? value : null;
        } catch (IllegalArgumentException | NullPointerException e) {
            if (problems.size() == before) {
                fieldProblem(path, String.valueOf(e.getMessage()));
            }
            return null;
        }
    }

    /** A problem worded {@code field: message} (a record's or a check's), placed at {@code path}.field. */
    public void fieldProblem(String path, String message) {
        Matcher f = FIELD_MESSAGE.matcher(message);
        if (f.matches()) {
            problem(YamlTree.child(path, f.group(1)), f.group(2));
        } else {
            problem(path, message);
        }
    }

    /** The number of problems so far, to tell whether a part of the file added any. */
    public int count() {
        return problems.size();
    }
}
