package dev.sextant.server.tenants;

import dev.sextant.config.ConfigException;
import dev.sextant.config.ConfigReader;
import dev.sextant.config.YamlTree.Entry;
import dev.sextant.config.YamlTree.Mapping;
import dev.sextant.request.Narrowing;
import dev.sextant.request.RequestMeta;
import dev.sextant.server.auth.BearerToken;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One reading of a tenants file: the tenants and the hashes of their keys ({@code docs/tenants.md}). Immutable; a
 * gateway swaps in a new one when the file changes ({@link TenantsWatch}).
 *
 * <pre>{@code
 * tenants:
 *   acme:
 *     keys: [sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08]
 *     models: [llama-8b]
 *     residency: [eu-west, eu-central]
 *     default_residency: [eu-west]
 *     max_priority: 1
 *     limits: {requests_per_second: 50, tokens_per_minute: 200000, concurrent_requests: 20}
 * }</pre>
 */
public final class Tenants {
    static final Set<String> KEYS = Set.of("tenants");
    static final Set<String> TENANT_KEYS = Set.of("keys", "models", "residency", "default_residency", "max_priority",
            "default_priority", "weight", "limits");
    static final Set<String> LIMIT_KEYS = Set.of("requests_per_second", "tokens_per_minute", "concurrent_requests");

    private final Map<ApiKeys.Digest, Tenant> byKey;
    private final List<Tenant> all;

    private Tenants(Map<ApiKeys.Digest, Tenant> byKey, List<Tenant> all) {
        this.byKey = byKey;
        this.all = List.copyOf(all);
    }

    /**
     * Reads a tenants file.
     *
     * @throws ConfigException every problem, each naming the file, the line and the field
     */
    public static Tenants load(Path file) throws ConfigException {
        return read(ConfigReader.read(file));
    }

    /** Reads a tenants file's text; {@code source} names it in messages. */
    public static Tenants parse(String yaml, String source) throws ConfigException {
        return read(ConfigReader.of(yaml, source));
    }

    private static Tenants read(ConfigReader r) throws ConfigException {
        Mapping root = r.root("a mapping with key tenants", false);
        Map<ApiKeys.Digest, Tenant> byKey = new HashMap<>();
        List<Tenant> all = new ArrayList<>();
        if (root != null) {
            r.keys(root, "", KEYS);
            Mapping tenants = r.mapping(root, "", "tenants", "a mapping of tenant name to its keys and rights");
            if (tenants != null) {
                Map<ApiKeys.Digest, String> owner = new HashMap<>();
                for (Map.Entry<String, Entry> e : tenants.entries().entrySet()) {
                    String path = "tenants." + e.getKey();
                    if (!(e.getValue().value() instanceof Mapping m)) {
                        r.problem(path, "expected: a mapping with keys, and optionally models, residency,"
                                + " default_residency, max_priority, default_priority, weight, limits");
                        continue;
                    }
                    Tenant t = tenant(r, path, e.getKey(), m);
                    List<String> keys = r.stringList(m, path, "keys", null);
                    if (keys != null && keys.isEmpty()) {
                        r.problem(path + ".keys", "empty (expected: at least one sha256: key hash)");
                    }
                    for (int i = 0; keys != null && i < keys.size(); i++) {
                        String at = path + ".keys[" + i + "]";
                        try {
                            ApiKeys.Digest d = ApiKeys.parse(keys.get(i).trim());
                            String other = owner.putIfAbsent(d, e.getKey());
                            if (other != null) {
                                r.problem(at, "the same key as tenant '" + other + "' (expected: a key names one"
                                        + " tenant)");
                            } else if (t != null) {
                                byKey.put(d, t);
                            }
                        } catch (IllegalArgumentException ex) {
                            r.problem(at, ex.getMessage());
                        }
                    }
                    if (t != null) {
                        all.add(t);
                    }
                }
            }
        }
        r.check();
        return new Tenants(Map.copyOf(byKey), all);
    }

    private static Tenant tenant(ConfigReader r, String path, String name, Mapping m) {
        int before = r.count();
        r.keys(m, path, TENANT_KEYS);
        List<String> models = optionalList(r, m, path, "models");
        List<String> residency = optionalList(r, m, path, "residency");
        List<String> defaultResidency = optionalList(r, m, path, "default_residency");
        Integer maxPriority = r.integer(m, path, "max_priority", Narrowing.NO_CEILING);
        Integer defaultPriority = r.integer(m, path, "default_priority", RequestMeta.NO_PRIORITY);
        Double weight = r.number(m, path, "weight", 1.0);
        Mapping limits = r.optionalMapping(m, path, "limits", "a mapping of requests_per_second, tokens_per_minute,"
                + " concurrent_requests");
        Double rps = 0.0;
        Integer tpm = 0;
        Integer concurrent = 0;
        if (limits != null) {
            String lp = path + ".limits";
            r.keys(limits, lp, LIMIT_KEYS);
            rps = r.number(limits, lp, "requests_per_second", 0.0);
            tpm = r.integer(limits, lp, "tokens_per_minute", 0);
            concurrent = r.integer(limits, lp, "concurrent_requests", 0);
            if (rps != null && !Tenant.validRequestsPerSecond(rps)) {
                r.problem(lp + ".requests_per_second", rps + Tenant.REQUESTS_PER_SECOND_EXPECTED);
            }
            if (tpm != null && tpm < 0) {
                r.problem(lp + ".tokens_per_minute", tpm + " (expected: >= 0, 0 for no limit)");
            }
            if (concurrent != null && concurrent < 0) {
                r.problem(lp + ".concurrent_requests", concurrent + " (expected: >= 0, 0 for no limit)");
            }
        }
        if (maxPriority == null || defaultPriority == null || weight == null || rps == null || tpm == null
                || concurrent == null || r.count() > before) {
            return null; // the problem is recorded; the tenant is not built (the next ones are, for their problems)
        }
        Set<String> modelSet = models == null ? null : new LinkedHashSet<>(models);
        double perSecond = rps;
        long perMinute = tpm;
        int inFlight = concurrent;
        return r.build(path, () -> new Tenant(name, modelSet, residency, defaultResidency, maxPriority,
                defaultPriority, weight, perSecond, perMinute, inFlight));
    }

    /** A list of strings when the key is there, null when absent (restricting nothing). */
    private static List<String> optionalList(ConfigReader r, Mapping m, String path, String key) {
        if (!m.entries().containsKey(key)) {
            return null;
        }
        List<String> out = r.stringList(m, path, key, null);
        if (out != null && out.isEmpty()) {
            r.problem(path + "." + key, "empty (expected: at least one; leave the key out for no restriction)");
        }
        return out;
    }

    /**
     * The tenant whose key an {@code Authorization} header carries ({@code Bearer <key>}, the scheme in any case, as
     * the OpenAI SDKs send it), or null: no header, another scheme, or a key of no tenant. Costs one SHA-256 of the
     * key and one hash-map lookup.
     */
    public Tenant find(String authorization) {
        return ofKey(BearerToken.presented(authorization));
    }

    /**
     * The tenant whose key a request presents, in {@code Authorization: Bearer <key>} or {@code api-key: <key>}, or
     * null: no key, different keys ({@link PresentedKey#ambiguous()}), or a key of no tenant. Costs one SHA-256 of the
     * key and one hash-map lookup.
     */
    public Tenant find(PresentedKey presented) {
        return ofKey(presented.key());
    }

    private Tenant ofKey(String key) {
        return key == null ? null : byKey.get(ApiKeys.digest(key));
    }

    /** The tenants, in file order. */
    public List<Tenant> all() {
        return all;
    }

    /** The number of keys. */
    public int keys() {
        return byKey.size();
    }
}
