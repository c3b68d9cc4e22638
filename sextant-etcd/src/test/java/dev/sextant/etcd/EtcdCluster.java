package dev.sextant.etcd;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Real etcd members ({@code etcd} from Debian's {@code etcd-server} package, on PATH or in /usr/bin) on ephemeral
 * loopback ports with data directories under {@code dir}: started, stopped (killed, as a crash) and started again
 * on the same ports and data, for the tests.
 */
final class EtcdCluster implements AutoCloseable {
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
    private final Path dir;
    private final int[] clientPorts;
    private final int[] peerPorts;
    private final Process[] members;

    /** {@code n} members, started, healthy. */
    EtcdCluster(Path dir, int n) throws IOException {
        this.dir = dir;
        this.clientPorts = new int[n];
        this.peerPorts = new int[n];
        this.members = new Process[n];
        for (int i = 0; i < n; i++) {
            clientPorts[i] = freePort();
            peerPorts[i] = freePort();
        }
        for (int i = 0; i < n; i++) {
            start(i);
        }
        awaitHealthy();
    }

    /** The client URLs of every member. */
    List<URI> endpoints() {
        List<URI> all = new ArrayList<>();
        for (int p : clientPorts) {
            all.add(URI.create("http://127.0.0.1:" + p));
        }
        return all;
    }

    EtcdOptions options(String prefix) {
        return EtcdOptions.of(endpoints()).withPrefix(prefix).withLeaseTtl(Duration.ofSeconds(2));
    }

    private void start(int i) throws IOException {
        StringBuilder initial = new StringBuilder();
        for (int j = 0; j < clientPorts.length; j++) {
            initial.append(j == 0 ? "" : ",").append("m").append(j).append("=http://127.0.0.1:").append(peerPorts[j]);
        }
        Path data = dir.resolve("m" + i);
        Files.createDirectories(data);
        members[i] = new ProcessBuilder(binary(), "--name", "m" + i, "--data-dir", data.toString(),
                "--listen-client-urls", "http://127.0.0.1:" + clientPorts[i],
                "--advertise-client-urls", "http://127.0.0.1:" + clientPorts[i],
                "--listen-peer-urls", "http://127.0.0.1:" + peerPorts[i],
                "--initial-advertise-peer-urls", "http://127.0.0.1:" + peerPorts[i],
                "--initial-cluster", initial.toString(), "--initial-cluster-state", "new",
                "--initial-cluster-token", "sextant-test")
                .redirectErrorStream(true).redirectOutput(dir.resolve("m" + i + ".log").toFile()).start();
    }

    /** CPU time the members' processes have used so far (user and system), all members together. */
    Duration cpu() {
        Duration total = Duration.ZERO;
        for (Process p : members) {
            if (p != null) {
                total = total.plus(p.info().totalCpuDuration().orElse(Duration.ZERO));
            }
        }
        return total;
    }

    /** Kills every member at once (SIGKILL: as a crash). */
    void stop() throws InterruptedException {
        for (Process p : members) {
            if (p != null) {
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    /** Kills member {@code i} (SIGKILL: as a crash). */
    void kill(int i) throws InterruptedException {
        members[i].destroyForcibly();
        members[i].waitFor(10, TimeUnit.SECONDS);
    }

    /** Starts member {@code i} again, on its ports and data, and waits until every member is healthy. */
    void restart(int i) throws IOException {
        start(i);
        awaitHealthy();
    }

    /** Starts every member again, on the same ports and data. */
    void restart() throws IOException {
        for (int i = 0; i < members.length; i++) {
            start(i);
        }
        awaitHealthy();
    }

    private void awaitHealthy() {
        if (!await(() -> {
            for (int p : clientPorts) {
                try {
                    HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p
                            + "/health")).timeout(Duration.ofSeconds(1)).build(), HttpResponse.BodyHandlers.ofString());
                    if (r.statusCode() != 200 || !r.body().contains("\"true\"")) {
                        return false;
                    }
                } catch (IOException e) {
                    return false;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            return true;
        }, Duration.ofSeconds(30))) {
            throw new IllegalStateException("etcd not healthy within 30 s; see " + dir);
        }
    }

    static String binary() {
        for (String p : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (Files.isExecutable(Path.of(p, "etcd"))) {
                return Path.of(p, "etcd").toString();
            }
        }
        if (Files.isExecutable(Path.of("/usr/bin/etcd"))) {
            return "/usr/bin/etcd";
        }
        throw new IllegalStateException("etcd not found (expected: Debian's etcd-server package; .ci/run installs it)");
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** A leadership over {@code o} that has joined as a replica at a made-up URL and leads (20 s at most). */
    static EtcdLeadership leader(EtcdOptions o, int maxValueBytes) {
        EtcdLeadership l = (EtcdLeadership) Etcd.leadership(o, maxValueBytes);
        l.join(URI.create("http://127.0.0.1:7001"));
        if (!await(l::leading, Duration.ofSeconds(20))) {
            l.close();
            throw new AssertionError("no leadership within 20 s");
        }
        return l;
    }

    /** Polls {@code condition} until it holds or {@code deadline} passes; true when it held. */
    static boolean await(BooleanSupplier condition, Duration deadline) {
        long end = System.nanoTime() + deadline.toNanos();
        while (System.nanoTime() < end) {
            if (condition.getAsBoolean()) {
                return true;
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return condition.getAsBoolean();
    }

    @Override
    public void close() throws InterruptedException {
        stop();
    }
}
