package dev.sextant.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code sextant gateway} as a process of its own, a child JVM running the command line's main class with this test's
 * class path (what {@code bin/sextant gateway} runs): SIGTERM drains it and it exits 0 with every stream whole; a port
 * in use ends it at once with exit status 2 (docs/servers.md, "Stopping" and "Starting").
 */
class GatewayProcessTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    @TempDir
    Path dir;

    @Test
    void sigterm_failsReadinessAtOnce_servesThroughTheWindow_letsEveryStreamFinish_andExitsZero() throws Exception {
        int streams = 8;
        int tokens = 40;
        // 100 ms a token: a stream lasts about 4 s, past the 2 s drain window
        try (EngineEmulator engine = EngineEmulator.start(EngineConfig.defaults("e1", "m").withLatency(64, 0, 100, 0))) {
            Path config = gatewayYaml("port: 0\nsnapshot_file: " + snapshotFile(engine.port())
                    + "\ndrain_window: 2s\ndrain_timeout: 30s\n");
            Child gw = new Child(config);
            ExecutorService clients = Executors.newFixedThreadPool(streams);
            try {
                Matcher listening = gw.awaitStdout(Pattern.compile("gateway east on http://127\\.0\\.0\\.1:(\\d+) "));
                int port = Integer.parseInt(listening.group(1));
                assertThat(get(port, "/readyz").statusCode()).isEqualTo(200);
                CountDownLatch started = new CountDownLatch(streams);
                List<Future<List<String>>> bodies = new ArrayList<>();
                for (int i = 0; i < streams; i++) {
                    String key = "k" + i;
                    bodies.add(clients.submit(() -> stream(port, key, tokens, started)));
                }
                assertThat(started.await(DEADLINE.toSeconds(), TimeUnit.SECONDS)).as("every stream has begun").isTrue();

                gw.process.destroy(); // SIGTERM
                assertThat(await(() -> draining(port))).as("/readyz 503 draining at once").isTrue();
                assertThat(post(port, chat("during", false, 1)).statusCode()).as("served within the window")
                        .isEqualTo(200);

                int whole = 0;
                for (Future<List<String>> body : bodies) {
                    List<String> data = body.get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
                    if (data.size() > tokens && data.get(data.size() - 1).equals("data: [DONE]")
                            && data.stream().noneMatch(l -> l.contains("\"error\""))) {
                        whole++;
                    }
                }
                assertThat(whole).as("streams that ended whole").isEqualTo(streams);
                assertThat(gw.process.waitFor(DEADLINE.toSeconds(), TimeUnit.SECONDS)).isTrue();
                assertThat(gw.process.exitValue()).as(gw.stderr()).isZero();
                assertThat(gw.stderr()).as(gw.stdout()).contains("draining: not ready, serving on for the drain window of 2.0 s");
                assertThat(gw.stdout()).contains("stopped");
            } finally {
                clients.shutdownNow();
                gw.process.destroyForcibly();
            }
        }
    }

    @Test
    void aPortInUse_endsItAtOnce_withExitTwo_beforeTheControlPlaneIsAsked() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"));
             SilentControlPlane cp = new SilentControlPlane()) {
            Files.writeString(dir.resolve("tok"), "secret\n");
            Path config = gatewayYaml("port: " + taken.getLocalPort() + "\ncontrol_plane: http://127.0.0.1:" + cp.port()
                    + "\ntoken_file: tok\n");
            Child gw = new Child(config);
            try {
                // the control plane never answers: a gateway waiting for its snapshot would wait the whole minute
                assertThat(gw.process.waitFor(DEADLINE.toSeconds(), TimeUnit.SECONDS)).as("ended").isTrue();
                assertThat(gw.process.exitValue()).isEqualTo(Sextant.EXIT_BAD_INPUT);
                assertThat(gw.stderr()).contains("gateway: cannot listen on 127.0.0.1:" + taken.getLocalPort()
                        + ": Address already in use");
                assertThat(cp.accepted.get()).as("connections to the control plane").isZero();
            } finally {
                gw.process.destroyForcibly();
            }
        }
    }

    private Path gatewayYaml(String rest) throws IOException {
        return Files.writeString(dir.resolve("gateway.yaml"), "gateway_cluster: east\nthreads: 1\naccess_log: false\n"
                + "probe_interval: 0s\n" + rest);
    }

    /** The snapshot routing gateway cluster east's class chat (model m) to one engine, written by {@code solve}. */
    private Path snapshotFile(int enginePort) throws IOException {
        Path topology = Files.writeString(dir.resolve("topology.yaml"), "gateway_clusters: [{id: east, region: r}]\n"
                + "engine_clusters: [{id: c, region: r}]\nnetwork_rtt_ms: {east: {c: 1}}\n"
                + "models: [{id: m, output_tokens: 40}]\nclasses: [{id: chat, model: m}]\n"
                + "demand_rps: {east: {chat: 10}}\nengines:\n  - {id: e1, cluster: c, endpoint: 'http://127.0.0.1:"
                + enginePort + "', models: [m], capacity_rps: 100, profile: {ttft_ms: 20, tbt_ms: 100}}\n");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        assertThat(Sextant.run(Services.production(), new PrintWriter(out), new PrintWriter(err), "solve",
                topology.toString())).as(err.toString()).isZero();
        return Files.writeString(dir.resolve("snapshot.json"), out.toString());
    }

    /** {@code sextant gateway --config CONFIG} in a JVM of its own, its output in files beside the config. */
    private static final class Child {
        final Process process;
        private final Path out;
        private final Path err;

        Child(Path config) throws IOException {
            out = config.resolveSibling("stdout.txt");
            err = config.resolveSibling("stderr.txt");
            process = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Xmx256m", "-cp", System.getProperty("java.class.path"), Sextant.class.getName(), "gateway",
                    "--config", config.toString())
                    .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        }

        private static String read(Path file) {
            try {
                return Files.readString(file, StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "(cannot read " + file + ": " + e + ")";
            }
        }

        String stdout() {
            return read(out);
        }

        String stderr() {
            return read(err);
        }

        /** The first match of {@code p} in the standard output, once it came. */
        Matcher awaitStdout(Pattern p) throws InterruptedException {
            assertThat(await(() -> p.matcher(stdout()).find())).as("stdout %s; stderr %s", stdout(), stderr()).isTrue();
            Matcher m = p.matcher(stdout());
            assertThat(m.find()).isTrue();
            return m;
        }
    }

    /** A control plane that accepts connections, counts them, and never answers. */
    private static final class SilentControlPlane implements AutoCloseable {
        final AtomicInteger accepted = new AtomicInteger();
        private final ServerSocket socket = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
        private final List<Socket> held = new CopyOnWriteArrayList<>();

        SilentControlPlane() throws IOException {
            Thread t = new Thread(() -> {
                try {
                    while (true) {
                        held.add(socket.accept());
                        accepted.incrementAndGet();
                    }
                } catch (IOException e) {
                    // closed
                }
            });
            t.setDaemon(true);
            t.start();
        }

        int port() {
            return socket.getLocalPort();
        }

        @Override
        public void close() throws IOException {
            socket.close();
            for (Socket s : held) {
                s.close();
            }
        }
    }

    private static boolean await(BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (System.nanoTime() < deadline) {
            if (condition.getAsBoolean()) {
                return true;
            }
            Thread.sleep(20); // polling a condition, with a deadline
        }
        return condition.getAsBoolean();
    }

    private static boolean draining(int port) {
        try {
            HttpResponse<String> r = get(port, "/readyz");
            return r.statusCode() == 503 && r.body().startsWith("draining\n");
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    private static String chat(String key, boolean stream, int tokens) {
        return "{\"model\":\"m\",\"stream\":" + stream + ",\"max_tokens\":" + tokens + ",\"prompt_cache_key\":\"" + key
                + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}";
    }

    private static HttpResponse<String> get(int port, String path) throws IOException, InterruptedException {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(DEADLINE).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> post(int port, String body) throws IOException, InterruptedException {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
                .timeout(DEADLINE).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** A streaming chat request: its {@code data:} lines; counts {@code started} down at the first. */
    private static List<String> stream(int port, String key, int tokens, CountDownLatch started) throws Exception {
        HttpResponse<java.util.stream.Stream<String>> r = HTTP.send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(chat(key, true, tokens))).build(),
                HttpResponse.BodyHandlers.ofLines());
        List<String> data = new ArrayList<>();
        for (Iterator<String> lines = r.body().iterator(); lines.hasNext(); ) {
            String l = lines.next();
            if (l.startsWith("data: ")) {
                if (data.isEmpty()) {
                    started.countDown();
                }
                data.add(l);
            }
        }
        return data;
    }
}
