package dev.sextant.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.control.ControlPlane;
import dev.sextant.server.control.ControlPlaneConfig;
import dev.sextant.server.control.Registration;
import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.server.gateway.Gateway;
import dev.sextant.server.gateway.GatewayConfig;
import dev.sextant.topology.PriorityScheduling;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * etcd's faults with three real members (docs/etcd.md, "Faults"): one member killed under load, the leading control
 * plane killed under load, all members killed and back, and the leading control plane paused (SIGSTOP, in a process
 * of its own) past its lease. Gateway requests
 * go through an engine emulator the whole time; a registration is the change that makes the leader publish.
 */
class EtcdFaultsIT {
    @TempDir
    static Path dir;
    static EtcdCluster etcd;
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    @BeforeAll
    static void startEtcd() throws Exception {
        etcd = new EtcdCluster(dir.resolve("etcd"), 3);
    }

    @AfterAll
    static void stopEtcd() throws Exception {
        etcd.close();
    }

    /** The control planes' settings in these tests: a policy tick every 100 ms, a solve every 10 s. */
    static ControlPlaneConfig config(Path topology) {
        return ControlPlaneConfig.defaults(topology, "tok").withAddress("127.0.0.1", 0)
                .withIntervals(Duration.ofSeconds(10), Duration.ofMillis(100), Duration.ofSeconds(1),
                        Duration.ofSeconds(1), 3);
    }

    static Path topology(Path at, EngineEmulator e1) throws Exception {
        Files.writeString(at, RegistrationIT.FLEET + """
                engines:
                  - {id: e1, cluster: c1, endpoint: 'http://127.0.0.1:%d', models: [m], hardware: h100}
                """.formatted(e1.port()));
        return at;
    }

    /** Waits for the gateway's first snapshot from etcd. */
    static void awaitFirstSnapshot(Recording source, Gateway gw) {
        assertThat(EtcdCluster.await(() -> source.last() > 0 && gw.plane() != null, Duration.ofSeconds(30))).isTrue();
    }

    /**
     * Registers {@code e2} and waits until {@code cp} took it and the gateway got a version above {@code before}, with
     * requests still succeeding; then takes it out again.
     */
    static void registerAndAwaitPublication(EtcdOptions o, EngineEmulator e2, ControlPlane cp, Recording source,
                                            long before, Load load) {
        try (EngineRegistrar r2 = register(o, e2)) {
            assertThat(EtcdCluster.await(() -> cp.topology().engines().size() == 2 && source.last() > before,
                    Duration.ofSeconds(30))).as("the leader takes the registration and publishes; the gateway gets it")
                    .isTrue();
            assertThat(load.more(5)).isTrue();
        }
    }

    static EngineRegistrar register(EtcdOptions o, EngineEmulator e) {
        return Etcd.register(o, new Registration(e.config().engineId(), "http://127.0.0.1:" + e.port(), "c1", "h100",
                List.of("m"), PriorityScheduling.NONE, "/metrics"), Duration.ofMillis(500));
    }

    /** Requests through a gateway, one after the other, counted, until closed. */
    static final class Load implements AutoCloseable {
        final AtomicLong ok = new AtomicLong();
        final AtomicLong failed = new AtomicLong();
        final AtomicReference<String> firstFailure = new AtomicReference<>();
        private volatile boolean closed;
        private final Thread thread;

        Load(Gateway gw) {
            HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gw.port() + "/v1/chat/completions"))
                    .timeout(Duration.ofSeconds(10)).header("content-type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(
                            "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2}"))
                    .build();
            thread = new Thread(() -> {
                while (!closed) {
                    try {
                        HttpResponse<String> r = HTTP.send(req, HttpResponse.BodyHandlers.ofString());
                        if (r.statusCode() == 200) {
                            ok.incrementAndGet();
                        } else {
                            fail("HTTP " + r.statusCode() + ": " + r.body());
                        }
                    } catch (InterruptedException e) {
                        return;
                    } catch (Exception e) {
                        fail(e.toString());
                    }
                }
            }, "load");
            thread.start();
        }

        private void fail(String why) {
            failed.incrementAndGet();
            firstFailure.compareAndSet(null, why);
        }

        /** Waits until {@code n} more requests succeeded. */
        boolean more(long n) {
            long target = ok.get() + n;
            return EtcdCluster.await(() -> ok.get() >= target, Duration.ofSeconds(30));
        }

        @Override
        public void close() throws InterruptedException {
            closed = true;
            thread.join(15_000);
        }
    }

    static Gateway gateway(Recording source) {
        return Gateway.start(GatewayConfig.defaults("east").withAddress("127.0.0.1", 0).withAccessLog(false), source, 2);
    }

    @Test
    void oneMemberKilled_underLoad_nothingNotices() throws Exception {
        EtcdOptions o = etcd.options("/one-killed");
        try (EngineEmulator e1 = EngineEmulator.start(EngineConfig.defaults("e1", "m"));
             EngineEmulator e2 = EngineEmulator.start(EngineConfig.defaults("e2", "m"))) {
            Path topology = topology(dir.resolve("one.yaml"), e1);
            EtcdLeadership leaderElection = (EtcdLeadership) Etcd.leadership(o);
            try (ControlPlane leader = ControlPlane.start(config(topology), leaderElection, Etcd.registry(o))) {
                assertThat(EtcdCluster.await(leaderElection::leading, Duration.ofSeconds(20))).isTrue();
                Publishing standbyElection = new Publishing((EtcdLeadership) Etcd.leadership(o));
                Recording source = new Recording(Etcd.source(o, "east", Duration.ofSeconds(1)));
                // a leader confirms the view at each read: silence beyond twice the read interval is an absent one
                assertThat(source.cadence()).isEqualTo(Duration.ofSeconds(1));
                try (ControlPlane standby = ControlPlane.start(config(topology), standbyElection, Etcd.registry(o));
                     Gateway gw = gateway(source)) {
                    awaitFirstSnapshot(source, gw);
                    try (Load load = new Load(gw)) {
                        assertThat(load.more(5)).isTrue();
                        long before = source.last();

                        etcd.kill(0);
                        registerAndAwaitPublication(o, e2, leader, source, before, load);
                        load.close();
                        assertThat(load.failed.get()).as("no request failed: " + load.firstFailure.get()).isZero();
                    }
                    assertThat(leaderElection.leading()).as("no failover").isTrue();
                    assertThat(standbyElection.leading()).isFalse();
                    assertThat(source.versions).isSorted();
                } finally {
                    etcd.restart(0);
                }
            }
        }
    }

    @Test
    void leaderKilled_underLoad_theStandbyPublishes_andNoRequestFails() throws Exception {
        EtcdOptions o = etcd.options("/leader-killed");
        try (EngineEmulator e1 = EngineEmulator.start(EngineConfig.defaults("e1", "m"));
             EngineEmulator e2 = EngineEmulator.start(EngineConfig.defaults("e2", "m"))) {
            Path topology = topology(dir.resolve("leader.yaml"), e1);
            EtcdLeadership leaderElection = (EtcdLeadership) Etcd.leadership(o);
            ControlPlane leader = ControlPlane.start(config(topology), leaderElection, Etcd.registry(o));
            boolean leaderClosed = false;
            try {
                assertThat(EtcdCluster.await(leaderElection::leading, Duration.ofSeconds(20))).isTrue();
                Publishing standbyElection = new Publishing((EtcdLeadership) Etcd.leadership(o));
                Recording source = new Recording(Etcd.source(o, "east", Duration.ofSeconds(1)));
                try (ControlPlane standby = ControlPlane.start(config(topology), standbyElection, Etcd.registry(o));
                     Gateway gw = gateway(source)) {
                    awaitFirstSnapshot(source, gw);
                    try (Load load = new Load(gw)) {
                        assertThat(load.more(5)).isTrue();
                        long before = source.last();

                        long killed = System.nanoTime();
                        leaderElection.halt(); // killed: its lease runs out, nothing is given up
                        leader.close();
                        leaderClosed = true;
                        // the killed leader may have published once more just before: wait for the new one's version
                        assertThat(EtcdCluster.await(() -> source.last() >= standbyElection.first(),
                                Duration.ofSeconds(30))).as("the standby takes over and publishes").isTrue();
                        assertThat(standbyElection.first()).isGreaterThan(before);
                        System.out.printf("three members, under load: leader killed -> version %d at the gateway"
                                + " in %d ms%n", source.last(), (System.nanoTime() - killed) / 1_000_000);
                        // the new leader publishes what changes from now on
                        registerAndAwaitPublication(o, e2, standby, source, source.last(), load);
                        load.close();
                        assertThat(load.failed.get()).as("no request failed: " + load.firstFailure.get()).isZero();
                    }
                    assertThat(source.versions).as("versions monotone across leaders").isSorted();
                }
            } finally {
                if (!leaderClosed) {
                    leader.close();
                }
            }
        }
    }

    @Test
    void allMembersKilled_gatewayKeepsServing_andCatchesUpWhenEtcdReturns() throws Exception {
        EtcdOptions o = etcd.options("/all-killed");
        try (EngineEmulator e1 = EngineEmulator.start(EngineConfig.defaults("e1", "m"));
             EngineEmulator e2 = EngineEmulator.start(EngineConfig.defaults("e2", "m"))) {
            Path topology = topology(dir.resolve("all.yaml"), e1);
            EtcdLeadership election = (EtcdLeadership) Etcd.leadership(o);
            Recording source = new Recording(Etcd.source(o, "east", Duration.ofSeconds(1)));
            try (ControlPlane cp = ControlPlane.start(config(topology), election, Etcd.registry(o));
                 Gateway gw = gateway(source)) {
                awaitFirstSnapshot(source, gw);
                try (Load load = new Load(gw)) {
                    assertThat(load.more(5)).isTrue();
                    long before = source.last();

                    etcd.stop();
                    assertThat(EtcdCluster.await(() -> !election.leading(), Duration.ofSeconds(10)))
                            .as("the leader's lease runs out unrenewed").isTrue();
                    assertThat(load.more(20)).as("the gateway serves from its snapshot meanwhile").isTrue();
                    etcd.restart();
                    // etcd back: a leader again, the registration taken, the gateway caught up
                    registerAndAwaitPublication(o, e2, cp, source, before, load);
                    load.close();
                    assertThat(load.failed.get()).as("no request failed: " + load.firstFailure.get()).isZero();
                }
                assertThat(source.versions).isSorted();
            }
        }
    }

    @Test
    void leaderPausedPastItsLease_theOtherTakesOver_andTheResumedOneDoesNotPublish() throws Exception {
        EtcdOptions o = etcd.options("/paused");
        Process a = null;
        try (EngineEmulator e1 = EngineEmulator.start(EngineConfig.defaults("e1", "m"));
             EngineEmulator e2 = EngineEmulator.start(EngineConfig.defaults("e2", "m"))) {
            Path topology = topology(dir.resolve("paused.yaml"), e1);
            Path log = dir.resolve("paused-leader.log");
            a = ControlPlaneProcess.start(topology, o, log);
            // the process's own line, whole: its log's "control plane listening on …" comes first
            assertThat(EtcdCluster.await(() -> listening(log) != null, Duration.ofSeconds(30)))
                    .as(log.toString()).isTrue();
            URI aUri = URI.create(listening(log));
            Recording source = new Recording(Etcd.source(o, "east", Duration.ofSeconds(1)));
            try (Gateway gw = gateway(source)) {
                assertThat(EtcdCluster.await(() -> !source.controlPlanes().isEmpty()
                        && source.controlPlanes().get(0).equals(aUri) && source.last() > 0, Duration.ofSeconds(30)))
                        .as("the process leads and published").isTrue();
                Publishing bElection = new Publishing((EtcdLeadership) Etcd.leadership(o));
                try (ControlPlane b = ControlPlane.start(config(topology), bElection, Etcd.registry(o))) {
                    double aPublications = publications(aUri);
                    long before = source.last();

                    signal("STOP", a);
                    assertThat(EtcdCluster.await(() -> source.last() >= bElection.first(),
                            Duration.ofSeconds(30))).as("the other takes over and publishes").isTrue();
                    assertThat(bElection.first()).isGreaterThan(before);
                    signal("CONT", a);
                    long taken = source.last();
                    try (EngineRegistrar r2 = register(o, e2)) {
                        // a change every replica takes: the leader publishes it, the resumed one must not
                        assertThat(EtcdCluster.await(() -> source.last() > taken, Duration.ofSeconds(30))).isTrue();
                        assertThat(EtcdCluster.await(() -> registered(aUri) == 1, Duration.ofSeconds(30)))
                                .as("the resumed one runs and took the registration").isTrue();
                    }
                    assertThat(metric(aUri, "sextant_etcd_leader")).isZero();
                    assertThat(publications(aUri)).as("the resumed one published nothing").isEqualTo(aPublications);
                    assertThat(source.controlPlanes().get(0)).isEqualTo(b.uri());
                    assertThat(source.versions).isSorted();
                }
            }
        } finally {
            if (a != null) {
                signal("CONT", a);
                a.destroyForcibly().waitFor();
            }
        }
    }

    private static String read(Path log) {
        try {
            return Files.exists(log) ? Files.readString(log) : "";
        } catch (java.io.IOException e) {
            return "";
        }
    }

    private static void signal(String name, Process p) throws Exception {
        assertThat(new ProcessBuilder("kill", "-" + name, Long.toString(p.pid())).inheritIO().start().waitFor())
                .isZero();
    }

    private static double registered(URI cp) {
        return metric(cp, "sextant_control_registered_engines");
    }

    /** Every publication a control plane counted, whatever its kind. */
    private static double publications(URI cp) {
        return metrics(cp).lines().filter(l -> l.startsWith("sextant_control_publications_total{"))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
    }

    private static double metric(URI cp, String name) {
        return metrics(cp).lines().filter(l -> l.startsWith(name + " ")).mapToDouble(l -> Double.parseDouble(
                l.substring(name.length() + 1))).findFirst().orElse(Double.NaN);
    }

    private static String metrics(URI cp) {
        try {
            return HTTP.send(HttpRequest.newBuilder(cp.resolve("/metrics")).timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
        } catch (Exception e) {
            return "";
        }
    }

    /** What the process's line {@code listening <uri>} in {@code log} names, once written whole; else null. */
    private static String listening(Path log) {
        String text = read(log);
        return text.substring(0, text.lastIndexOf('\n') + 1).lines().filter(l -> l.startsWith("listening "))
                .map(l -> l.substring("listening ".length()).trim()).findFirst().orElse(null);
    }
}
