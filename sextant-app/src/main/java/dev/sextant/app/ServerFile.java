package dev.sextant.app;

import dev.sextant.config.ConfigProblem;
import dev.sextant.config.ConfigReader;
import dev.sextant.config.YamlTree;
import dev.sextant.config.YamlTree.Mapping;
import dev.sextant.config.YamlTree.Node;
import dev.sextant.server.auth.BearerToken;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * A server's YAML configuration file (docs/servers.md): a map of settings, read with the one config reader
 * ({@link ConfigReader}: anchors, aliases and merge keys; a duplicate key, a tab or an unknown setting refused). Every
 * problem names the file, the line and the setting ({@code gateway.yaml:4: port: …}), and a file's problems are
 * reported together, one a line, in a {@link UsageException}: a setting that is not of its type reads as its default
 * and is reported, and {@link #build} takes every setting a server's own checks refuse (a value out of its range) out
 * of the file and builds again, so that each of those is reported too.
 */
final class ServerFile {
    private final ConfigReader reader;
    private final Mapping root;
    /** Problems found outside the reader: those a server's checks word as {@code field: message}. */
    private final java.util.Set<ConfigProblem> found = new java.util.LinkedHashSet<>();
    /** Settings a check refused: read as absent (their default) from then on. */
    private final java.util.Set<String> refused = new java.util.HashSet<>();

    private ServerFile(ConfigReader reader, Mapping root) {
        this.reader = reader;
        this.root = root;
    }

    static ServerFile load(Path file, Set<String> keys) {
        return load(file, keys, Map.of());
    }

    /**
     * The file, refusing keys that are not in {@code keys}; a key of {@code removed} (key → what replaces it and
     * why it went, {@code "expected: …; removed: …"}) is refused with that message:
     * {@code file:LINE: key: value (expected: …; removed: …)}. Every problem of the file's form is reported at once.
     */
    static ServerFile load(Path file, Set<String> keys, Map<String, String> removed) {
        ConfigReader r = ConfigReader.read(file);
        Mapping root = r.root("a map of settings", true);
        if (root != null) {
            Map<String, YamlTree.Entry> known = new LinkedHashMap<>(root.entries());
            removed.forEach((k, why) -> {
                YamlTree.Entry e = known.remove(k);
                if (e != null) {
                    r.problem(k, YamlTree.shown(e.value()) + " (" + why + ")");
                }
            });
            r.keys(new Mapping(root.line(), known), "", new TreeSet<>(keys));
        }
        ServerFile f = new ServerFile(r, root);
        if (root == null) {
            f.check(); // nothing to read: not a map, or not readable
        }
        return f;
    }

    /** Throws every problem found so far, in file order; does nothing when there is none. */
    void check() {
        if (!reader.ok() || !found.isEmpty()) {
            throw all();
        }
    }

    /** Every problem found so far, one a line in file order, each once. */
    private UsageException all() {
        java.util.Set<ConfigProblem> each = new java.util.LinkedHashSet<>(reader.problems());
        each.addAll(found);
        java.util.List<ConfigProblem> problems = new java.util.ArrayList<>(each);
        problems.sort(java.util.Comparator.comparingInt(ConfigProblem::line));
        return new UsageException(problems.stream().map(ConfigProblem::toString).collect(Collectors.joining("\n")));
    }

    /** How many problems were found so far: a part of the file that adds to it has problems of its own. */
    private int count() {
        return reader.count() + found.size();
    }

    /**
     * What {@code settings} builds from this file. A server's check that refuses a setting ({@link
     * IllegalArgumentException} worded {@code field: message}, {@code field} a setting of the file) is recorded at the
     * setting's line, the setting is read as absent from then on, and {@code settings} runs again, until it builds or
     * its refusal names no setting left to take out; then every problem found is thrown. Returns only when the file
     * has no problem at all.
     */
    <T> T build(java.util.function.Supplier<T> settings) {
        return build(settings, java.util.function.UnaryOperator.identity());
    }

    /**
     * As {@link #build(java.util.function.Supplier)}, a refusal worded by {@code wording} as the file words it ({@code
     * field: message}, the field a setting of the file), or null when it is not about the file: then it is thrown as
     * it is worded, after the file's problems found before it.
     */
    <T> T build(java.util.function.Supplier<T> settings, java.util.function.UnaryOperator<String> wording) {
        while (true) {
            try {
                T built = settings.get();
                check();
                return built;
            } catch (IllegalArgumentException e) {
                String raw = String.valueOf(e.getMessage());
                String message = wording.apply(raw);
                if (message == null) {
                    throw new UsageException(count() == 0 ? raw : all().getMessage() + "\n" + raw);
                }
                found.add(locatedProblem(message));
                int colon = message.indexOf(": ");
                java.util.Set<String> keys = new java.util.TreeSet<>();
                if (colon > 0) {
                    for (String field : message.substring(0, colon).split(", ")) {
                        String key = field.split("[.\\[]", 2)[0];
                        if (has(key)) {
                            keys.add(key);
                        }
                    }
                }
                if (keys.isEmpty()) {
                    throw all();
                }
                refused.addAll(keys);
            }
        }
    }

    /** Records {@code message} (worded {@code field: message}) as a problem at the field's line, and returns them all. */
    UsageException fail(String message) {
        found.add(locatedProblem(message));
        return all();
    }

    /** True when no problem was found at {@code key}: its value, if any, is the one the file gives. */
    boolean ok(String key) {
        return !refused.contains(key) && reader.problems().stream().noneMatch(p -> p.path().equals(key))
                && found.stream().noneMatch(p -> p.path().equals(key));
    }

    /**
     * A problem worded {@code field: message} at the line of its field: {@code tls_cert_file, tls_key_file: …} is about
     * both settings and is placed at the first.
     */
    private ConfigProblem locatedProblem(String message) {
        int colon = message.indexOf(": ");
        if (colon <= 0) {
            return new ConfigProblem(reader.source(), reader.lineOf(""), "", message);
        }
        String path = message.substring(0, colon);
        return new ConfigProblem(reader.source(), reader.lineOf(path.split(", ", 2)[0]), path,
                message.substring(colon + 2));
    }

    /** {@code request_header_timeout}, {@code request_body_timeout} and {@code max_header_bytes} over {@code d}. */
    dev.sextant.server.internal.ClientLimits clientLimits(dev.sextant.server.internal.ClientLimits d) {
        return new dev.sextant.server.internal.ClientLimits(duration("request_header_timeout", d.requestHeaderTimeout()),
                duration("request_body_timeout", d.requestBodyTimeout()), integer("max_header_bytes", d.maxHeaderBytes()));
    }

    /**
     * {@code message} (as a setting's check words it: {@code port: 70000 (expected: …)}) prefixed with the file and the
     * line of the setting it begins with ({@code class_timeouts.batch.total_timeout: …} at that entry's line).
     */
    String located(String message) {
        return locatedProblem(message).toString();
    }

    boolean has(String key) {
        return !refused.contains(key) && reader.value(root, "", key, "", false) != null;
    }

    /** The string at {@code key}, or {@code dflt} when it is absent or not a string (a problem, recorded). */
    String string(String key, String dflt) {
        if (!has(key)) {
            return dflt;
        }
        String v = reader.string(root, "", key, dflt);
        return v == null ? dflt : v;
    }

    /** The integer at {@code key}, or {@code dflt} when it is absent or not an integer (a problem, recorded). */
    int integer(String key, int dflt) {
        Integer v = has(key) ? reader.integer(root, "", key, dflt) : null;
        return v == null ? dflt : v;
    }

    /** The number at {@code key}, or {@code dflt} when it is absent or not a number (a problem, recorded). */
    double number(String key, double dflt) {
        Double v = has(key) ? reader.number(root, "", key, dflt) : null;
        return v == null ? dflt : v;
    }

    /** The boolean at {@code key}, or {@code dflt} when it is absent or not a boolean (a problem, recorded). */
    boolean bool(String key, boolean dflt) {
        Boolean v = has(key) ? reader.bool(root, "", key, dflt) : null;
        return v == null ? dflt : v;
    }

    /** A list of strings, or one string standing for a list of one; empty when absent. */
    java.util.List<String> strings(String key) {
        if (!has(key)) {
            return java.util.List.of();
        }
        Node n = reader.value(root, "", key, "", false);
        if (n instanceof YamlTree.Sequence) {
            java.util.List<String> l = reader.stringList(root, "", key, null);
            return l == null ? java.util.List.of() : l;
        }
        String one = string(key, null);
        return one == null ? java.util.List.of() : java.util.List.of(one);
    }

    /**
     * A map of numbers ({@code {east: 60, eu: 140}}), in the file's order; empty when the key is absent. A value that is
     * not a map, or an entry that is not a number, is a problem at its line ({@code key.entry: 'x' (expected: …)});
     * the numbers' range is the caller's to check.
     */
    Map<String, Double> numbers(String key, String mapExpected, String eachExpected) {
        Map<String, Double> out = new LinkedHashMap<>();
        Mapping m = refused.contains(key) ? null : reader.optionalMapping(root, "", key, mapExpected);
        if (m == null) {
            return out;
        }
        m.entries().forEach((k, e) -> {
            if (e.value() instanceof YamlTree.Scalar s
                    && (s.kind() == YamlTree.Kind.INTEGER || s.kind() == YamlTree.Kind.FLOAT)) {
                out.put(k, s.number());
            } else {
                reader.wrongType(key, k, e.value(), eachExpected + ", a number");
            }
        });
        return out;
    }

    /**
     * A map of maps of durations ({@code {batch: {total_timeout: 30m}}}), in the file's order; empty when the key is
     * absent. Every inner key must be one of {@code fields}; a problem names the entry and the field at its line
     * ({@code key.batch.total_timeout: 'soon' (expected: …)}). The durations' range is the caller's to check.
     */
    Map<String, Map<String, Duration>> durationsByEntry(String key, String mapExpected, Set<String> fields) {
        Map<String, Map<String, Duration>> out = new LinkedHashMap<>();
        Mapping m = refused.contains(key) ? null : reader.optionalMapping(root, "", key, mapExpected);
        if (m == null) {
            return out;
        }
        for (String entry : m.entries().keySet()) {
            String at = YamlTree.child(key, entry);
            Mapping e = reader.mapping(m, key, entry, "a map of " + new TreeSet<>(fields) + " to durations");
            if (e == null) {
                continue;
            }
            reader.keys(e, at, new TreeSet<>(fields));
            Map<String, Duration> durations = new LinkedHashMap<>();
            for (String field : e.entries().keySet()) {
                Duration d = fields.contains(field) ? duration(e, at, field) : null;
                if (d != null) {
                    durations.put(field, d);
                }
            }
            out.put(entry, durations);
        }
        return out;
    }

    /** The duration at {@code key}, or {@code dflt} when it is absent or not a duration (a problem, recorded). */
    Duration duration(String key, Duration dflt) {
        if (!has(key)) {
            return dflt;
        }
        Duration d = duration(root, "", key);
        return d == null ? dflt : d;
    }

    /** The duration at {@code path}.{@code key}; null when it is not one (a problem, recorded). */
    private Duration duration(Mapping m, String path, String key) {
        String s = reader.string(m, path, key, null);
        if (s == null) {
            return null;
        }
        try {
            return dev.sextant.server.internal.Http.duration(YamlTree.child(path, key), s);
        } catch (IllegalArgumentException e) {
            found.add(locatedProblem(e.getMessage()));
            return null;
        }
    }

    /** A path relative to the file's directory; not read here (see {@link #readable}). */
    Path path(String key) {
        return has(key) ? reader.path(root, "", key) : null;
    }

    /**
     * {@code target}, the file {@code key} names, when it can be read now; otherwise a problem of this file at the key
     * ({@code control-plane.yaml:1: topology: t.yaml: cannot read: no such file}).
     */
    Path readable(String key, Path target) {
        if (!reader.readable(key, target)) {
            throw all(); // a file the server needs and cannot read: said now, with what was found before
        }
        return target;
    }

    /**
     * As {@link #readable(String, Path)}, for a document the server reads again when it changes: a regular file of at
     * most {@code maxBytes} ({@code control-plane.yaml:1: topology: /dev/zero: not a regular file (…)}).
     */
    Path document(String key, Path target, long maxBytes) {
        if (!reader.readable(key, target, maxBytes)) {
            throw all();
        }
        return target;
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
                throw new UsageException(reader.source() + ": SEXTANT_TOKEN: " + e.getMessage());
            }
        }
        if (required) {
            throw problem("token_file", "missing (expected: token_file, or the environment variable SEXTANT_TOKEN)");
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
            throw problem(key, tf + ": " + ConfigProblem.cannotRead(e));
        } catch (IllegalArgumentException e) {
            throw problem(key, tf + " " + e.getMessage());
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
            throw fail(e.getMessage());
        }
    }

    /** How https peers are verified: {@code tls_ca_file}, {@code tls_client_cert_file}, {@code tls_client_key_file}. */
    dev.sextant.server.tls.ClientTls clientTls() {
        try {
            return new dev.sextant.server.tls.ClientTls(path("tls_ca_file"), path("tls_client_cert_file"),
                    path("tls_client_key_file"));
        } catch (IllegalArgumentException e) {
            throw fail(e.getMessage());
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
            throw fail(e.getMessage());
        }
    }

    /** What the {@code etcd} map may set (docs/etcd.md). */
    static final Set<String> ETCD_KEYS = Set.of("endpoints", "prefix", "user", "password_file", "ca_file", "cert_file",
            "key_file", "lease_ttl", "advertise");

    /**
     * The {@code etcd} map ({@code endpoints}, {@code prefix}, {@code user}, {@code password_file}, {@code ca_file},
     * {@code cert_file}, {@code key_file}, {@code lease_ttl}, {@code advertise}), its endpoints replaced by
     * {@code flag} (the command's {@code --etcd URL[,URL…]}) when set; null when neither configures etcd.
     */
    dev.sextant.etcd.EtcdOptions etcd(String flag) {
        int before = count();
        Mapping m = reader.optionalMapping(root, "", "etcd", "a map of etcd settings (docs/etcd.md)");
        if (m == null) {
            throw all(); // etcd or not decides what else the file must say: nothing more is worth reading
        }
        if (m.entries().isEmpty() && flag == null) {
            return null;
        }
        reader.keys(m, "etcd", new TreeSet<>(ETCD_KEYS));
        java.util.List<String> endpoints = flag != null ? java.util.List.of(flag.split(","))
                : m.entries().get("endpoints") != null && !(m.entries().get("endpoints").value()
                        instanceof YamlTree.Sequence) ? java.util.Arrays.asList(reader.string(m, "etcd", "endpoints"))
                : reader.stringList(m, "etcd", "endpoints", java.util.List.of());
        String advertise = reader.string(m, "etcd", "advertise", null);
        String prefix = reader.string(m, "etcd", "prefix", "/sextant");
        String user = reader.string(m, "etcd", "user", null);
        Path password = reader.path(m, "etcd", "password_file");
        Path ca = reader.path(m, "etcd", "ca_file");
        Path cert = reader.path(m, "etcd", "cert_file");
        Path key = reader.path(m, "etcd", "key_file");
        Duration leaseTtl = m.entries().containsKey("lease_ttl") ? duration(m, "etcd", "lease_ttl")
                : dev.sextant.etcd.EtcdOptions.DEFAULT_LEASE_TTL;
        if (count() > before) {
            throw all();
        }
        java.util.List<java.net.URI> uris;
        try {
            uris = endpoints.stream().map(String::trim).map(java.net.URI::create).toList();
        } catch (IllegalArgumentException e) {
            throw endpointProblem(flag, e.getMessage());
        }
        try {
            return new dev.sextant.etcd.EtcdOptions(uris, prefix, user, password, ca, cert, key, leaseTtl,
                    advertise == null ? null : java.net.URI.create(advertise));
        } catch (IllegalArgumentException e) {
            String endpoint = endpointMessage(e.getMessage());
            throw endpoint != null ? endpointProblem(flag, endpoint) : fail(e.getMessage());
        }
    }

    /**
     * An endpoint problem of {@link dev.sextant.etcd.EtcdOptions} ({@code etcd.endpoints: …}) without its field, to
     * be named where the endpoints came from; null for a problem of another field.
     */
    static String endpointMessage(String why) {
        String field = "etcd.endpoints: ";
        return why != null && why.startsWith(field) ? why.substring(field.length()) : null;
    }

    /**
     * A bad endpoint ({@code message} without a field), named where it came from: the {@code --etcd} flag when given
     * (it overrides the file, so the file's line would mislead), else this file's {@code etcd.endpoints}.
     */
    private RuntimeException endpointProblem(String flag, String message) {
        return flag != null ? new UsageException("--etcd: " + message) : fail("etcd.endpoints: " + message);
    }

    /**
     * Records a problem of this file at {@code key}'s line (the file's top when the key is absent), unless one is
     * already recorded there, and returns every problem found so far, to throw.
     */
    UsageException problem(String key, String message) {
        if (ok(key)) {
            found.add(reader.at(key, message));
        }
        return all();
    }
}
