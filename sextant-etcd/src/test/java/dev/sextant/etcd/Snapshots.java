package dev.sextant.etcd;

import dev.sextant.config.TopologyLoader;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;

/** Small snapshots for the tests: two gateway clusters, east and west, two engines; any version. */
final class Snapshots {
    static final String YAML = """
            gateway_clusters: [{id: east, region: us}, {id: west, region: us}]
            engine_clusters: [{id: c1, region: us}, {id: c2, region: us}]
            network_rtt_ms: {east: {c1: 2, c2: 30}, west: {c1: 30, c2: 2}}
            models: [{id: m, output_tokens: 8}]
            engines:
              - {id: e1, cluster: c1, endpoint: 'http://127.0.0.1:9', models: [m], capacity_rps: 100, profile: {ttft_ms: 20, tbt_ms: 5}}
              - {id: e2, cluster: c2, endpoint: 'http://127.0.0.1:9', models: [m], capacity_rps: 100, profile: {ttft_ms: 20, tbt_ms: 5}}
            classes: [{id: chat, model: m}]
            demand_rps: {east: {chat: 50}, west: {chat: 30}}
            """;

    private Snapshots() {
    }

    static Topology topology() {
        try {
            return TopologyLoader.load(YAML, "two.yaml");
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static Snapshot version(long v) {
        return Policies.byName("optimal").solve(topology(), SolveOptions.defaults()).sealed(v);
    }
}
