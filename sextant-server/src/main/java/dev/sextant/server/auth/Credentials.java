package dev.sextant.server.auth;

import dev.sextant.config.ConfigException;
import dev.sextant.config.ConfigReader;
import dev.sextant.config.YamlTree;
import dev.sextant.config.YamlTree.Mapping;
import dev.sextant.config.YamlTree.Node;
import dev.sextant.config.YamlTree.Sequence;
import dev.sextant.server.internal.Sha256;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * One reading of a control plane's credentials file: the SHA-256 digests of the tokens it accepts, each with the
 * {@link Principal} it speaks for. The file holds no secret, only digests:
 *
 * <pre>{@code
 * tokens:
 *   - sha256: 5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8   # printf '%s\n' "$TOKEN" | sextant hash-key
 *     role: operator
 *   - sha256: sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae   # the prefix may stay
 *     role: gateway
 *     gateway_cluster: east
 * }</pre>
 *
 * <p>A principal may have several tokens (that is how a token is rotated: add the new one, move the clients to it,
 * remove the old one); a token may appear once. Read with the project's {@link ConfigReader}, so that a problem names
 * the file, the line and the field ({@code credentials.yaml:5: tokens[1].sha256: 'abc' (expected: …)}).
 *
 * <p>A token is looked up by comparing its digest with every digest of the file with {@link MessageDigest#isEqual},
 * so the time taken depends neither on which entry matches nor on where a digest differs.
 */
public final class Credentials {
    private static final Set<String> KEYS = Set.of("sha256", "role", "gateway_cluster");
    private static final HexFormat HEX = HexFormat.of();

    private final byte[][] digests;
    private final Principal[] principals;

    private Credentials(byte[][] digests, Principal[] principals) {
        this.digests = digests;
        this.principals = principals;
    }

    /**
     * Reads {@code file}.
     *
     * @throws ConfigException every problem of the file, each naming the file, the line and the field
     */
    public static Credentials read(Path file) throws ConfigException {
        return read(ConfigReader.read(file));
    }

    /** Reads {@code yaml}; {@code source} is the name problems give it. */
    static Credentials parse(String yaml, String source) throws ConfigException {
        return read(ConfigReader.of(yaml, source));
    }

    private static Credentials read(ConfigReader r) throws ConfigException {
        Mapping root = r.root("a map with tokens: [...]", false);
        List<byte[]> digests = new ArrayList<>();
        List<Principal> principals = new ArrayList<>();
        if (root != null) {
            r.keys(root, "", Set.of("tokens"));
            Sequence s = r.sequence(root, "", "tokens");
            if (s != null && s.items().isEmpty()) {
                r.problem("tokens", "empty (expected: at least one token)");
            }
            Map<String, String> seen = new LinkedHashMap<>();
            for (int i = 0; s != null && i < s.items().size(); i++) {
                String p = "tokens[" + i + "]";
                Node n = s.items().get(i);
                if (!(n instanceof Mapping m)) {
                    r.problem(p, YamlTree.shown(n) + " (expected: a map of sha256, role and, for a gateway, "
                            + "gateway_cluster)");
                    continue;
                }
                int before = r.count();
                r.keys(m, p, new java.util.TreeSet<>(KEYS));
                byte[] digest = digest(r, m, p, seen);
                Principal principal = principal(r, m, p);
                if (r.count() == before) {
                    digests.add(digest);
                    principals.add(principal);
                }
            }
        }
        r.check();
        return new Credentials(digests.toArray(new byte[0][]), principals.toArray(new Principal[0]));
    }

    private static byte[] digest(ConfigReader r, Mapping m, String p, Map<String, String> seen) {
        String written = r.string(m, p, "sha256");
        if (written == null) {
            return null;
        }
        // as `sextant hash-key` prints it, or bare as sha256sum does
        String hex = written.startsWith("sha256:") ? written.substring(7) : written;
        String at = YamlTree.child(p, "sha256");
        byte[] digest = Sha256.parseHex(hex);
        if (digest == null) {
            r.problem(at, "'" + abbreviated(written) + "' (expected: the SHA-256 of the token, 64 hexadecimal digits, as "
                    + "printed by: printf '%s\\n' \"$TOKEN\" | sextant hash-key)");
            return null;
        }
        String first = seen.putIfAbsent(HEX.formatHex(digest), p);
        if (first != null) {
            r.problem(at, "the same token as " + first + " (expected: each token once)");
            return null;
        }
        return digest;
    }

    private static Principal principal(ConfigReader r, Mapping m, String p) {
        String role = r.string(m, p, "role");
        String cluster = r.string(m, p, "gateway_cluster", null);
        if (role == null) {
            return null;
        }
        switch (role) {
            case "operator" -> {
                if (cluster != null) {
                    r.problem(YamlTree.child(p, "gateway_cluster"), "'" + cluster
                            + "' set for an operator (expected: only with role: gateway)");
                    return null;
                }
                return Principal.OPERATOR;
            }
            case "gateway" -> {
                if (cluster == null || cluster.isBlank()) {
                    r.problem(YamlTree.child(p, "gateway_cluster"), (cluster == null ? "missing" : "empty")
                            + " (expected: the gateway cluster this token is for)");
                    return null;
                }
                return Principal.gateway(cluster);
            }
            default -> {
                r.problem(YamlTree.child(p, "role"), "'" + abbreviated(role) + "' (expected: operator or gateway)");
                return null;
            }
        }
    }

    private static String abbreviated(String s) {
        return s.length() <= 80 ? s : s.substring(0, 77) + "...";
    }

    /**
     * The principal of {@code authorization} ({@code Bearer <token>}), or null when it presents no token of this file.
     */
    public Principal authenticate(String authorization) {
        String token = BearerToken.presented(authorization);
        if (token == null) {
            return null;
        }
        byte[] given = Sha256.of(token.getBytes(StandardCharsets.UTF_8));
        Principal found = null;
        for (int i = 0; i < digests.length; i++) { // every digest compared: which one matches takes no longer
            if (MessageDigest.isEqual(given, digests[i])) {
                found = principals[i];
            }
        }
        return found;
    }

    /** Tokens in the file. */
    public int size() {
        return digests.length;
    }

    /** How many tokens each principal has, for a log line: {@code operator: 1, gateway cluster east: 2}. */
    public String summary() {
        Map<String, Integer> count = new TreeMap<>();
        for (Principal p : principals) {
            count.merge(p.toString(), 1, Integer::sum);
        }
        return count.toString().replace("{", "").replace("}", "").replace("=", ": ");
    }

    /** Never a digest. */
    @Override
    public String toString() {
        return "Credentials[" + summary() + "]";
    }
}
