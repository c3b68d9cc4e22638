package dev.sextant.app;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.sextant.config.ConfigProblem;
import dev.sextant.server.auth.BearerToken;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;

/**
 * A server's YAML configuration file (docs/servers.md): a flat map of keys. Every problem is a
 * {@link UsageException} naming the file, the key's line and the key ({@code gateway.yaml:4: port: …}); unknown keys
 * are refused so that a typo does not pass silently.
 */
final class ServerFile {
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    private final Path file;
    private final JsonNode root;
    /** Each top-level key's line, 1-based. */
    private final Map<String, Integer> lines;

    private ServerFile(Path file, JsonNode root, Map<String, Integer> lines) {
        this.file = file;
        this.root = root;
        this.lines = lines;
    }

    static ServerFile load(Path file, Set<String> keys) {
        return load(file, keys, Map.of());
    }

    /**
     * The file, refusing keys that are not in {@code keys}; a key of {@code removed} (key → what replaces it and
     * why it went, {@code "expected: …; removed: …"}) is refused with that message:
     * {@code file:LINE: key: value (expected: …; removed: …)}.
     */
    static ServerFile load(Path file, Set<String> keys, Map<String, String> removed) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UsageException(file + ": " + ConfigProblem.cannotRead(e));
        }
        Map<String, Integer> lines = keyLines(text);
        JsonNode root;
        try {
            root = YAML.readTree(text);
        } catch (JsonProcessingException e) {
            int line = e.getLocation() == null ? 0 : e.getLocation().getLineNr();
            String key = lines.entrySet().stream().filter(k -> k.getValue() == line).map(Map.Entry::getKey)
                    .findFirst().orElse(null);
            String message = dev.sextant.config.Json.message(e.getOriginalMessage());
            if (message.startsWith("Malformed numeric value ")) { // YAML's .nan and .inf, which Jackson cannot convert
                message = message.substring("Malformed numeric value ".length()) + " (expected: a finite number)";
            } else {
                message = "YAML syntax: " + message;
            }
            throw new UsageException(file + (line > 0 ? ":" + line : "") + ": " + (key == null ? "" : key + ": ")
                    + message);
        }
        if (root == null || root.isMissingNode() || root.isNull()) {
            root = YAML.createObjectNode();
        }
        if (!root.isObject()) {
            throw new UsageException(file + ": expected a map of settings");
        }
        for (Iterator<String> it = root.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (removed.containsKey(k)) {
                throw new UsageException(at(file, lines, k) + k + ": " + root.get(k) + " (" + removed.get(k) + ")");
            }
            if (!keys.contains(k)) {
                throw new UsageException(at(file, lines, k) + k + ": unknown setting (expected one of "
                        + new java.util.TreeSet<>(keys) + ")");
            }
        }
        return new ServerFile(file, root, lines);
    }

    static ServerFile empty() {
        return new ServerFile(Path.of("(defaults)"), YAML.createObjectNode(), Map.of());
    }

    /** The line of each top-level key, read as tokens (no value is converted, so a bad one does not stop it). */
    private static Map<String, Integer> keyLines(String text) {
        Map<String, Integer> out = new HashMap<>();
        try (JsonParser p = YAML.getFactory().createParser(text)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return out;
            }
            for (JsonToken t = p.nextToken(); t == JsonToken.FIELD_NAME; t = p.nextToken()) {
                out.putIfAbsent(p.currentName(), p.currentTokenLocation().getLineNr());
                p.nextToken();
                p.skipChildren();
            }
        } catch (IOException | RuntimeException e) {
            // the keys before the problem keep their lines; the problem itself is reported by the full read
        }
        return out;
    }

    /** {@code file:LINE: } for a key of the file, {@code file: } when its line is not known. */
    private static String at(Path file, Map<String, Integer> lines, String key) {
        Integer line = key == null ? null : lines.get(key);
        return file + (line == null ? "" : ":" + line) + ": ";
    }

    /** {@code request_header_timeout}, {@code request_body_timeout} and {@code max_header_bytes} over {@code d}. */
    dev.sextant.server.internal.ClientLimits clientLimits(dev.sextant.server.internal.ClientLimits d) {
        return new dev.sextant.server.internal.ClientLimits(duration("request_header_timeout", d.requestHeaderTimeout()),
                duration("request_body_timeout", d.requestBodyTimeout()), integer("max_header_bytes", d.maxHeaderBytes()));
    }

    /**
     * {@code message} (as a setting's check words it: {@code port: 70000 (expected: …)}) prefixed with the file and,
     * when it begins with a key of the file, that key's line.
     */
    String located(String message) {
        int colon = message.indexOf(':');
        // "tls_cert_file, tls_key_file: …" is about both settings: it is placed at the first
        // and "network_rtt_ms.east: …" about an entry of one: it is placed at that setting
        String key = colon > 0 ? message.substring(0, colon).split(", ", 2)[0].split("\\.", 2)[0] : null;
        return at(file, lines, key) + message;
    }

    boolean has(String key) {
        JsonNode n = root.get(key);
        return n != null && !n.isNull();
    }

    String string(String key, String dflt) {
        JsonNode n = root.get(key);
        if (n == null || n.isNull()) {
            return dflt;
        }
        if (!n.isValueNode()) {
            throw bad(key, n, "a string");
        }
        return n.asText();
    }

    int integer(String key, int dflt) {
        JsonNode n = root.get(key);
        if (n == null || n.isNull()) {
            return dflt;
        }
        if (!n.canConvertToInt() || !n.isIntegralNumber()) {
            throw bad(key, n, "an integer");
        }
        return n.asInt();
    }

    double number(String key, double dflt) {
        JsonNode n = root.get(key);
        if (n == null || n.isNull()) {
            return dflt;
        }
        if (!n.isNumber()) {
            throw bad(key, n, "a number");
        }
        return n.asDouble();
    }

    boolean bool(String key, boolean dflt) {
        JsonNode n = root.get(key);
        if (n == null || n.isNull()) {
            return dflt;
        }
        if (!n.isBoolean()) {
            throw bad(key, n, "true or false");
        }
        return n.asBoolean();
    }

    /**
     * A map of numbers ({@code {east: 60, eu: 140}}), in the file's order; empty when the key is absent. A value that is
     * not a map, or an entry that is not a number, is a problem at the key's line ({@code key.entry: "x" (expected:
     * …)}); the numbers' range is the caller's to check.
     */
    Map<String, Double> numbers(String key, String mapExpected, String eachExpected) {
        Map<String, Double> out = new java.util.LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : entries(key, mapExpected).entrySet()) {
            if (!e.getValue().isNumber()) {
                throw new UsageException(at(file, lines, key) + key + "." + e.getKey() + ": " + e.getValue()
                        + " (expected: " + eachExpected + ", a number)");
            }
            out.put(e.getKey(), e.getValue().asDouble());
        }
        return out;
    }

    /**
     * A map of maps of durations ({@code {batch: {total_timeout: 30m}}}), in the file's order; empty when the key is
     * absent. Every inner key must be one of {@code fields}; a problem is placed at the key's line and names the
     * entry and the field ({@code key.batch.total_timeout: 'soon' (expected: …)}). The durations' range is the caller's
     * to check.
     */
    Map<String, Map<String, Duration>> durationsByEntry(String key, String mapExpected, Set<String> fields) {
        Map<String, Map<String, Duration>> out = new java.util.LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : entries(key, mapExpected).entrySet()) {
            String entry = key + "." + e.getKey();
            if (!e.getValue().isObject()) {
                throw new UsageException(at(file, lines, key) + entry + ": " + e.getValue() + " (expected: a map of "
                        + new java.util.TreeSet<>(fields) + " to durations)");
            }
            Map<String, Duration> durations = new java.util.LinkedHashMap<>();
            for (Iterator<Map.Entry<String, JsonNode>> f = e.getValue().fields(); f.hasNext(); ) {
                Map.Entry<String, JsonNode> field = f.next();
                String name = entry + "." + field.getKey();
                if (!fields.contains(field.getKey())) {
                    throw new UsageException(at(file, lines, key) + name + ": unknown setting (expected one of "
                            + new java.util.TreeSet<>(fields) + ")");
                }
                try {
                    durations.put(field.getKey(), dev.sextant.server.internal.Http.duration(name,
                            field.getValue().isValueNode() ? field.getValue().asText() : field.getValue().toString()));
                } catch (IllegalArgumentException x) {
                    throw new UsageException(at(file, lines, key) + x.getMessage());
                }
            }
            out.put(e.getKey(), durations);
        }
        return out;
    }

    /** The entries of the map at {@code key}, in the file's order; empty when absent, a problem when not a map. */
    private Map<String, JsonNode> entries(String key, String mapExpected) {
        JsonNode n = root.get(key);
        Map<String, JsonNode> out = new java.util.LinkedHashMap<>();
        if (n == null || n.isNull()) {
            return out;
        }
        if (!n.isObject()) {
            throw bad(key, n, mapExpected);
        }
        n.fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue()));
        return out;
    }

    Duration duration(String key, Duration dflt) {
        String s = string(key, null);
        if (s == null) {
            return dflt;
        }
        try {
            return dev.sextant.server.internal.Http.duration(key, s);
        } catch (IllegalArgumentException e) {
            throw new UsageException(located(e.getMessage()));
        }
    }

    /** A path relative to the file's directory. */
    Path path(String key) {
        String s = string(key, null);
        if (s == null) {
            return null;
        }
        Path p;
        try {
            p = Path.of(s);
        } catch (java.nio.file.InvalidPathException e) {
            throw problem(key, "'" + s.replace("\0", "\\0") + "' (expected: a file path; " + e.getReason() + ")");
        }
        Path dir = file.toAbsolutePath().getParent();
        return p.isAbsolute() || dir == null ? p : dir.resolve(p);
    }

    /**
     * The bearer token: the file named by {@code token_file} (one token per line; read again when it changes, so a
     * token is rotated without a restart), else the environment variable {@code SEXTANT_TOKEN}; null when neither
     * is set and none is {@code required}.
     */
    BearerToken token(boolean required) {
        BearerToken fromFile = tokenFile("token_file");
        if (fromFile != null) {
            return fromFile;
        }
        String env = System.getenv("SEXTANT_TOKEN");
        if (env != null && !env.isBlank()) {
            try {
                return BearerToken.of(env);
            } catch (IllegalArgumentException e) {
                throw new UsageException(file + ": SEXTANT_TOKEN: " + e.getMessage());
            }
        }
        if (required) {
            throw new UsageException(file + ": token_file: missing (expected: token_file, or the environment variable"
                    + " SEXTANT_TOKEN)");
        }
        return null;
    }

    /** The bearer token in the file named by {@code key} (read again when it changes), or null when the key is absent. */
    BearerToken tokenFile(String key) {
        Path tf = path(key);
        if (tf == null) {
            return null;
        }
        try {
            return BearerToken.file(tf);
        } catch (IOException e) {
            throw new UsageException(at(file, lines, key) + key + ": " + tf + ": " + ConfigProblem.cannotRead(e));
        } catch (IllegalArgumentException e) {
            throw new UsageException(at(file, lines, key) + key + ": " + tf + " " + e.getMessage());
        }
    }

    /** {@code keys} and the TLS keys {@link #serverTls()} and {@link #clientTls()} read. */
    static Set<String> withTlsKeys(String... keys) {
        java.util.Set<String> all = new java.util.HashSet<>(Set.of(keys));
        all.addAll(Set.of("tls_cert_file", "tls_key_file", "tls_client_ca_file", "tls_ca_file", "tls_client_cert_file",
                "tls_client_key_file"));
        return Set.copyOf(all);
    }

    /** TLS on the listener from {@code tls_cert_file}, {@code tls_key_file}, {@code tls_client_ca_file}; null: none. */
    dev.sextant.server.tls.ServerTls serverTls() {
        Path cert = path("tls_cert_file");
        Path key = path("tls_key_file");
        Path clientCa = path("tls_client_ca_file");
        if (cert == null && key == null) {
            if (clientCa != null) {
                throw problem("tls_client_ca_file", "set without tls_cert_file and tls_key_file");
            }
            return null;
        }
        try {
            return new dev.sextant.server.tls.ServerTls(cert, key, clientCa);
        } catch (IllegalArgumentException e) {
            throw new UsageException(located(e.getMessage()));
        }
    }

    /** How https peers are verified: {@code tls_ca_file}, {@code tls_client_cert_file}, {@code tls_client_key_file}. */
    dev.sextant.server.tls.ClientTls clientTls() {
        try {
            return new dev.sextant.server.tls.ClientTls(path("tls_ca_file"), path("tls_client_cert_file"),
                    path("tls_client_key_file"));
        } catch (IllegalArgumentException e) {
            throw new UsageException(located(e.getMessage()));
        }
    }

    /**
     * Builds the TLS contexts a server would ({@code server} null: none), so that an unreadable or unusable PEM file
     * is reported as this file's problem, at the setting that names it.
     */
    void tlsContexts(dev.sextant.server.tls.ServerTls server, dev.sextant.server.tls.ClientTls client) {
        try {
            if (server != null) {
                dev.sextant.server.tls.TlsContexts.server(server);
            }
            dev.sextant.server.tls.TlsContexts.client(client);
        } catch (IllegalArgumentException e) {
            throw new UsageException(located(e.getMessage()));
        }
    }

    UsageException problem(String key, String message) {
        return new UsageException(at(file, lines, key) + key + ": " + message);
    }

    private UsageException bad(String key, JsonNode n, String expected) {
        return new UsageException(at(file, lines, key) + key + ": " + n + " (expected: " + expected + ")");
    }
}
