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
 * problem is a {@link UsageException} naming the file, the line and the setting ({@code gateway.yaml:4: port: …}).
 */
final class ServerFile {
    private final ConfigReader reader;
    private final Mapping root;

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
        f.check();
        return f;
    }

    /** Throws the problems found so far. */
    private void check() {
        if (!reader.ok()) {
            throw new UsageException(reader.sorted().stream().map(ConfigProblem::toString)
                    .collect(Collectors.joining("\n")));
        }
    }

    /** {@code value}, after throwing any problem its read found. */
    private <T> T checked(T value) {
        check();
        return value;
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
        int colon = message.indexOf(": ");
        // "tls_cert_file, tls_key_file: …" is about both settings: it is placed at the first
        String path = colon > 0 ? message.substring(0, colon).split(", ", 2)[0] : "";
        return reader.source() + ":" + reader.lineOf(path) + ": " + message;
    }

    boolean has(String key) {
        return reader.value(root, "", key, "", false) != null;
    }

    String string(String key, String dflt) {
        return checked(reader.string(root, "", key, dflt));
    }

    int integer(String key, int dflt) {
        return checked(reader.integer(root, "", key, dflt));
    }

    double number(String key, double dflt) {
        return checked(reader.number(root, "", key, dflt));
    }

    boolean bool(String key, boolean dflt) {
        return checked(reader.bool(root, "", key, dflt));
    }

    /** A list of strings, or one string standing for a list of one; empty when absent. */
    java.util.List<String> strings(String key) {
        Node n = reader.value(root, "", key, "", false);
        if (n == null) {
            return java.util.List.of();
        }
        return n instanceof YamlTree.Sequence ? checked(reader.stringList(root, "", key, null))
                : java.util.List.of(string(key, null));
    }

    /**
     * A map of numbers ({@code {east: 60, eu: 140}}), in the file's order; empty when the key is absent. A value that is
     * not a map, or an entry that is not a number, is a problem at its line ({@code key.entry: 'x' (expected: …)});
     * the numbers' range is the caller's to check.
     */
    Map<String, Double> numbers(String key, String mapExpected, String eachExpected) {
        Mapping m = checked(reader.optionalMapping(root, "", key, mapExpected));
        Map<String, Double> out = new LinkedHashMap<>();
        m.entries().forEach((k, e) -> out.put(k, e.value() instanceof YamlTree.Scalar s
                && (s.kind() == YamlTree.Kind.INTEGER || s.kind() == YamlTree.Kind.FLOAT) ? s.number()
                : reader.wrongType(key, k, e.value(), eachExpected + ", a number")));
        check();
        return out;
    }

    /**
     * A map of maps of durations ({@code {batch: {total_timeout: 30m}}}), in the file's order; empty when the key is
     * absent. Every inner key must be one of {@code fields}; a problem names the entry and the field at its line
     * ({@code key.batch.total_timeout: 'soon' (expected: …)}). The durations' range is the caller's to check.
     */
    Map<String, Map<String, Duration>> durationsByEntry(String key, String mapExpected, Set<String> fields) {
        Mapping m = checked(reader.optionalMapping(root, "", key, mapExpected));
        Map<String, Map<String, Duration>> out = new LinkedHashMap<>();
        for (String entry : m.entries().keySet()) {
            String at = YamlTree.child(key, entry);
            Mapping e = checked(reader.mapping(m, key, entry, "a map of " + new TreeSet<>(fields) + " to durations"));
            reader.keys(e, at, new TreeSet<>(fields));
            check();
            Map<String, Duration> durations = new LinkedHashMap<>();
            for (String field : e.entries().keySet()) {
                durations.put(field, duration(e, at, field));
            }
            out.put(entry, durations);
        }
        return out;
    }

    Duration duration(String key, Duration dflt) {
        return has(key) ? duration(root, "", key) : dflt;
    }

    private Duration duration(Mapping m, String path, String key) {
        String s = checked(reader.string(m, path, key, null));
        String name = YamlTree.child(path, key);
        try {
            return dev.sextant.server.internal.Http.duration(name, s == null ? "" : s);
        } catch (IllegalArgumentException e) {
            throw new UsageException(located(e.getMessage()));
        }
    }

    /** A path relative to the file's directory; not read here (see {@link #readable}). */
    Path path(String key) {
        return checked(reader.path(root, "", key));
    }

    /**
     * {@code target}, the file {@code key} names, when it can be read now; otherwise a problem of this file at the key
     * ({@code control-plane.yaml:1: topology: t.yaml: cannot read: no such file}).
     */
    Path readable(String key, Path target) {
        reader.readable(key, target);
        return checked(target);
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

    /** What the {@code etcd} map may set (docs/etcd.md). */
    static final Set<String> ETCD_KEYS = Set.of("endpoints", "prefix", "user", "password_file", "ca_file", "cert_file",
            "key_file", "lease_ttl", "advertise");

    /**
     * The {@code etcd} map ({@code endpoints}, {@code prefix}, {@code user}, {@code password_file}, {@code ca_file},
     * {@code cert_file}, {@code key_file}, {@code lease_ttl}, {@code advertise}), its endpoints replaced by
     * {@code flag} (the command's {@code --etcd URL[,URL…]}) when set; null when neither configures etcd.
     */
    dev.sextant.etcd.EtcdOptions etcd(String flag) {
        Mapping m = checked(reader.optionalMapping(root, "", "etcd", "a map of etcd settings (docs/etcd.md)"));
        if (m.entries().isEmpty() && flag == null) {
            return null;
        }
        reader.keys(m, "etcd", new TreeSet<>(ETCD_KEYS));
        check();
        java.util.List<String> endpoints = flag != null ? java.util.List.of(flag.split(","))
                : m.entries().get("endpoints") != null && !(m.entries().get("endpoints").value()
                        instanceof YamlTree.Sequence) ? java.util.List.of(checked(reader.string(m, "etcd", "endpoints")))
                : checked(reader.stringList(m, "etcd", "endpoints", java.util.List.of()));
        String advertise = checked(reader.string(m, "etcd", "advertise", null));
        try {
            return new dev.sextant.etcd.EtcdOptions(endpoints.stream().map(String::trim).map(java.net.URI::create)
                    .toList(), checked(reader.string(m, "etcd", "prefix", "/sextant")),
                    checked(reader.string(m, "etcd", "user", null)), checked(reader.path(m, "etcd", "password_file")),
                    checked(reader.path(m, "etcd", "ca_file")), checked(reader.path(m, "etcd", "cert_file")),
                    checked(reader.path(m, "etcd", "key_file")), m.entries().containsKey("lease_ttl")
                            ? duration(m, "etcd", "lease_ttl") : dev.sextant.etcd.EtcdOptions.DEFAULT_LEASE_TTL,
                    advertise == null ? null : java.net.URI.create(advertise));
        } catch (IllegalArgumentException e) {
            throw new UsageException(located(e.getMessage()));
        }
    }

    /** A problem of this file at {@code key}'s line (the file's top when the key is absent). */
    UsageException problem(String key, String message) {
        return new UsageException(reader.at(key, message).toString());
    }
}
