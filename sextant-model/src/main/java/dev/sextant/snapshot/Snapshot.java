package dev.sextant.snapshot;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Collections;
import java.util.HexFormat;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The immutable, versioned routing policy the control plane publishes: for every (gateway cluster,
 * class) a weighted list of engines and a shed fraction, plus what the data plane needs to apply it
 * (engine endpoints, network latencies for the fallback policy, the retry budget curve) and the
 * numbers behind each weight. All maps are sorted by key, so equal snapshots print equal JSON.
 *
 * @param version          monotone per publisher, ≥ 0
 * @param hash             hex SHA-256 of the content (everything but {@code version} and {@code hash}),
 *                         see {@link #contentHash()}; empty while being built
 * @param policy           the policy that produced it: {@code optimal}, {@code nearest}, …
 * @param fleetUtilization Σ load / Σ effective capacity over all engines, ≥ 0
 * @param retryBudget      retry budget parameters for the gateways
 * @param routes           gateway cluster id → class id → route
 * @param engines          engine id → state
 * @param networkRttMs     gateway cluster id → engine cluster id → round trip ms
 * @param objective        cost, certificate and solver statistics
 */
public record Snapshot(long version, String hash, String policy, double fleetUtilization, RetryBudget retryBudget,
                       Map<String, Map<String, Route>> routes, Map<String, EngineState> engines,
                       Map<String, Map<String, Double>> networkRttMs, Objective objective) {

    public Snapshot {
        if (version < 0) {
            throw new IllegalArgumentException("version: " + version + " (expected: >= 0)");
        }
        hash = hash == null ? "" : hash;
        routes = nested(routes);
        engines = Collections.unmodifiableSortedMap(new TreeMap<>(engines));
        networkRttMs = nested(networkRttMs);
    }

    private static <V> SortedMap<String, Map<String, V>> nested(Map<String, Map<String, V>> m) {
        TreeMap<String, Map<String, V>> out = new TreeMap<>();
        m.forEach((k, v) -> out.put(k, Collections.unmodifiableSortedMap(new TreeMap<>(v))));
        return Collections.unmodifiableSortedMap(out);
    }

    /**
     * Hex SHA-256 of everything but {@code version} and {@code hash}: two snapshots with the same
     * routes, engines and numbers have the same content hash whatever their versions.
     */
    public String contentHash() {
        String content = new Snapshot(0, "", policy, fleetUtilization, retryBudget, routes, engines, networkRttMs,
                objective).toString();
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            return HexFormat.of().formatHex(sha.digest(content.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
    }

    /** This snapshot with {@code newVersion} and its content hash filled in. */
    public Snapshot sealed(long newVersion) {
        return new Snapshot(newVersion, contentHash(), policy, fleetUtilization, retryBudget, routes, engines,
                networkRttMs, objective);
    }

    /** The route of class {@code classId} at gateway cluster {@code gateway}, or null. */
    public Route route(String gateway, String classId) {
        Map<String, Route> byClass = routes.get(gateway);
        return byClass == null ? null : byClass.get(classId);
    }
}
