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
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import org.junit.jupiter.api.Test;

/**
 * The L fleet's 4,096 engines registering, and its 64 gateway clusters watching (docs/etcd.md, "At scale"): how long
 * the registrations take, when a control plane's registry has seen them all, and how long a publication takes to reach
 * every watcher, with its bytes: split at the write of each view (as an observer's watch sees it), with what prompted
 * the read that took each view (the watch event or the periodic read) and the CPU the publications took. Prints the
 * figures; asserts only that everything arrived. Not run by {@code mvn verify} (this module runs no failsafe tests);
 * the command is in docs/etcd.md.
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
        // when each view (gateway cluster, version) was written, as an observer's watch of every view sees it
        Map<String, Long> written = new ConcurrentHashMap<>();
        Map<String, Long> taken = new ConcurrentHashMap<>();
        List<SnapshotSource> watchers = new ArrayList<>();
        List<SimpleMeterRegistry> watcherMeters = new ArrayList<>();
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        String views = "/scale/views/";
        double wallS;
        double cpuS;
        double gatewaysCpuS;
        double leaderCpuS;
        double etcdCpuS;
        try (EtcdLeadership l = EtcdCluster.leader(o, ViewCodec.MAX_VALUE_BYTES);
             Client observer = Client.builder().endpoints(o.endpoints().toArray(new URI[0])).build();
             // from the first revision: it misses no view, whenever etcd registers it
             Watch.Watcher observed = observer.getWatchClient().watch(Keys.bytes(views),
                     WatchOption.builder().isPrefix(true).withRevision(1).build(), r -> r.getEvents().forEach(e -> written.putIfAbsent(
                             e.getKeyValue().getKey().toString(StandardCharsets.UTF_8).substring(views.length()) + " "
                                     + ViewCodec.header(e.getKeyValue().getValue().getBytes()).version(),
                             System.nanoTime())))) {
            l.bindTo(meters);
            for (String g : gateways) {
                SnapshotSource w = Etcd.source(o, g, Duration.ofSeconds(30));
                watchers.add(w);
                SimpleMeterRegistry wm = new SimpleMeterRegistry();
                w.bindTo(wm);
                watcherMeters.add(wm);
                // each version once per watcher: a confirmation of the held one hands it over again
                w.start(view -> taken.putIfAbsent(g + " " + view.version(), System.nanoTime()));
            }
            long wall0 = System.nanoTime();
            long cpu0 = processCpuNanos();
            long etcdCpu0 = etcd.cpu().toNanos();
            long gatewaysCpu0 = threadsCpuNanos("sextant-etcd-watch");
            long leaderCpu0 = leaderCpuNanos();
            for (int i = 1; i <= PUBLICATIONS; i++) {
                long v = 1 + i;
                published.put(v, System.nanoTime());
                l.publish(s.sealed(v));
                int expected = gateways.size() * i;
                assertThat(EtcdCluster.await(() -> published.keySet().stream().mapToLong(p -> gateways.stream()
                        .filter(g -> taken.containsKey(g + " " + p)).count()).sum() >= expected, Duration.ofSeconds(60)))
                        .as("every watcher gets publication " + i).isTrue();
            }
            wallS = (System.nanoTime() - wall0) / 1e9;
            cpuS = (processCpuNanos() - cpu0) / 1e9;
            gatewaysCpuS = (threadsCpuNanos("sextant-etcd-watch") - gatewaysCpu0) / 1e9;
            leaderCpuS = (leaderCpuNanos() - leaderCpu0) / 1e9;
            etcdCpuS = (etcd.cpu().toNanos() - etcdCpu0) / 1e9;
        } finally {
            watchers.forEach(SnapshotSource::close);
        }

        List<Long> all = new ArrayList<>();
        List<Long> later = new ArrayList<>();
        for (long v = 2; v <= 1 + PUBLICATIONS; v++) {
            long at = published.get(v);
            List<Long> startToTaken = new ArrayList<>();
            List<Long> writtenToTaken = new ArrayList<>();
            long firstWritten = Long.MAX_VALUE;
            long lastWritten = 0;
            for (String g : gateways) {
                long w = written.get(g + " " + v);
                long t = taken.get(g + " " + v);
                firstWritten = Math.min(firstWritten, w);
                lastWritten = Math.max(lastWritten, w);
                startToTaken.add((t - at) / 1_000_000);
                writtenToTaken.add((t - w) / 1_000_000);
            }
            all.addAll(startToTaken);
            if (v > 2) {
                later.addAll(startToTaken);
            }
            System.out.printf("publication %d: views written %d-%d ms after its start; written -> taken %s;"
                    + " start -> taken %s%n", v - 1, (firstWritten - at) / 1_000_000, (lastWritten - at) / 1_000_000,
                    percentiles(writtenToTaken), percentiles(startToTaken));
        }
        Map<String, Long> byRead = new TreeMap<>();
        long ended = 0;
        for (SimpleMeterRegistry wm : watcherMeters) {
            for (Timer t : wm.find("sextant.etcd.watch.lag").timers()) {
                byRead.merge(t.getId().getTag("read"), t.count(), Long::sum);
            }
            ended += (long) wm.get("sextant.etcd.watch.ended").functionCounter().count();
        }
        var bytes = meters.find("sextant.etcd.publication.bytes").summary();
        System.out.printf("publication to %d watchers, %d publications: start of publication -> view at a watcher"
                + " %s; publications 2-%d: %s; %.0f B written per publication%n", gateways.size(), PUBLICATIONS,
                percentiles(all), PUBLICATIONS, percentiles(later), bytes.mean());
        System.out.printf("views taken, by what prompted the read: %s; watches ended: %d%n", byRead, ended);
        System.out.printf("CPU over the %.1f s of the publications: this JVM %.1f s (the leader's publishing thread"
                + " and encoding pool %.1f s, the gateways' read-and-decode threads %.1f s, the rest: etcd clients,"
                + " GC, JIT), etcd %.1f s; the machine has %d cores%n", wallS, cpuS, leaderCpuS, gatewaysCpuS,
                etcdCpuS, Runtime.getRuntime().availableProcessors());
        assertThat(all).hasSize(gateways.size() * PUBLICATIONS);
        assertThat(byRead.values().stream().mapToLong(Long::longValue).sum()).isEqualTo(all.size());
    }

    /** p50, p99 and max of {@code ms}, in ms. */
    private static String percentiles(List<Long> ms) {
        long[] sorted = ms.stream().mapToLong(Long::longValue).sorted().toArray();
        return String.format("p50 %d ms, p99 %d ms, max %d ms over %d", sorted[sorted.length / 2],
                sorted[(int) Math.ceil(sorted.length * 0.99) - 1], sorted[sorted.length - 1], sorted.length);
    }

    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    /** CPU time of this JVM's live threads named {@code name}, in ns. */
    private static long threadsCpuNanos(String name) {
        return threadsCpuNanos(t -> t.getName().equals(name));
    }

    /**
     * CPU time of the thread that publishes (this one) and of the leader's pool that makes and encodes the views, in
     * ns; a pool thread that ended meanwhile is missed, so at least that.
     */
    private static long leaderCpuNanos() {
        Thread self = Thread.currentThread();
        return threadsCpuNanos(t -> t == self || t.getName().equals("sextant-etcd-encode"));
    }

    private static long threadsCpuNanos(java.util.function.Predicate<Thread> which) {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        return Thread.getAllStackTraces().keySet().stream().filter(which)
                .mapToLong(t -> Math.max(0, threads.getThreadCpuTime(t.getId()))).sum();
    }
}
