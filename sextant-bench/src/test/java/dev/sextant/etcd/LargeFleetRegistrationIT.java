package dev.sextant.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.bench.fleet.Fleets;
import dev.sextant.policy.Policies;
import dev.sextant.policy.SolveOptions;
import dev.sextant.server.control.EngineRegistry;
import dev.sextant.server.control.Registration;
import dev.sextant.server.gateway.SnapshotSource;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Engine;
import dev.sextant.topology.Topology;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.PutOption;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import org.junit.jupiter.api.Test;

/**
 * The L fleet's 4,096 engines registering, and its 64 gateway clusters watching (docs/etcd.md, "At scale"): how long
 * the registrations take, when a control plane's registry has seen them all, and how long a publication takes to reach
 * every watcher, with its bytes. Prints the figures; asserts only that everything arrived. Not run by {@code mvn
 * verify} (this module runs no failsafe tests); the command is in docs/etcd.md.
 */
class LargeFleetRegistrationIT extends OneEtcdMember {
    static final int PUBLICATIONS = 5;

    @Test
    void fourThousandRegisteredEngines_andSixtyFourWatchers() throws Exception {
        Topology fleet = Fleets.large(1);
        EtcdOptions o = etcd.options("/scale");
        List<Registration> engines = fleet.engines().stream().map(e -> new Registration(e.id(),
                "http://127.0.0.1:9", e.cluster(), "kind-" + e.capacityRps(), e.models(), e.priorityScheduling(),
                "/metrics")).toList();
        try (EngineRegistry registry = Etcd.registry(o);
             Client client = Client.builder().endpoints(o.endpoints().toArray(new URI[0])).build()) {
            // each engine as its registrar writes it: a lease of its own, the key under it; 64 in flight
            Semaphore inFlight = new Semaphore(64);
            List<CompletableFuture<?>> all = new ArrayList<>();
            long t0 = System.nanoTime();
            for (Registration r : engines) {
                inFlight.acquire();
                all.add(client.getLeaseClient().grant(60).thenCompose(lease -> client.getKVClient().put(
                        Keys.bytes("/scale/engines/" + r.id()), Keys.bytes(r.json()),
                        PutOption.builder().withLeaseId(lease.getID()).build())).whenComplete((x, err) -> inFlight.release()));
            }
            CompletableFuture.allOf(all.toArray(new CompletableFuture[0])).join();
            long registeredMs = (System.nanoTime() - t0) / 1_000_000;
            assertThat(EtcdCluster.await(() -> registry.entries().values().size() == engines.size(),
                    Duration.ofSeconds(60))).isTrue();
            long seenMs = (System.nanoTime() - t0) / 1_000_000;
            int valueBytes = engines.stream().mapToInt(r -> r.json().length()).sum();
            System.out.printf("registration: %d engines (%d B of values) registered in %d ms; the registry saw all"
                    + " %d ms after the first%n", engines.size(), valueBytes, registeredMs, seenMs);
            assertThat(registry.entries().values().keySet()).containsAll(engines.stream().map(Registration::id).toList());
        }

        Snapshot s = Policies.byName("optimal").solve(fleet, SolveOptions.defaults()).sealed(1);
        List<String> gateways = s.routes().keySet().stream().sorted().toList();
        Map<Long, Long> published = new ConcurrentHashMap<>();
        List<Long> latenciesMs = java.util.Collections.synchronizedList(new ArrayList<>());
        List<SnapshotSource> watchers = new ArrayList<>();
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (EtcdLeadership l = EtcdCluster.leader(o, ViewCodec.MAX_VALUE_BYTES)) {
            l.bindTo(meters);
            for (String g : gateways) {
                SnapshotSource w = Etcd.source(o, g, Duration.ofSeconds(30));
                watchers.add(w);
                java.util.concurrent.atomic.AtomicLong seen = new java.util.concurrent.atomic.AtomicLong();
                w.start(view -> {
                    Long at = published.get(view.version());
                    // each version once per watcher: a confirmation of the held one hands it over again
                    if (at != null && view.version() > seen.getAndAccumulate(view.version(), Math::max)) {
                        latenciesMs.add((System.nanoTime() - at) / 1_000_000);
                    }
                });
            }
            for (int i = 1; i <= PUBLICATIONS; i++) {
                long v = 1 + i;
                published.put(v, System.nanoTime());
                l.publish(s.sealed(v));
                int expected = gateways.size() * i;
                assertThat(EtcdCluster.await(() -> latenciesMs.size() >= expected, Duration.ofSeconds(60)))
                        .as("every watcher gets publication " + i).isTrue();
            }
        } finally {
            watchers.forEach(SnapshotSource::close);
        }
        long[] sorted = latenciesMs.stream().mapToLong(Long::longValue).sorted().toArray();
        var bytes = meters.find("sextant.etcd.publication.bytes").summary();
        System.out.printf("publication to %d watchers, %d publications: start of publication -> view at a watcher"
                + " p50 %d ms, p99 %d ms, max %d ms; %.0f B written per publication%n", gateways.size(), PUBLICATIONS,
                sorted[sorted.length / 2], sorted[(int) Math.ceil(sorted.length * 0.99) - 1], sorted[sorted.length - 1],
                bytes.mean());
        assertThat(sorted).hasSize(gateways.size() * PUBLICATIONS);
        assertThat(Arrays.stream(sorted).min().orElseThrow()).isGreaterThanOrEqualTo(0);
    }
}
