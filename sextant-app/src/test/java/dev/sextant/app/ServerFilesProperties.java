package dev.sextant.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * Every file a server reads, edited at random, is either valid or bad input that names the file and a line of it:
 * {@code --check} of the gateway (its file and its tenants file), the control plane (its file, with a shared token or
 * a credentials file) and the engine emulator, each from a file that sets every key it has. An edit drops or doubles a
 * line, changes or adds a character (YAML's punctuation, control characters, a character beyond ASCII), gives a line's
 * value one of {@link #VALUES} (out of every range, of the wrong kind, durations, paths), or cuts the text short.
 * Nothing else may come out: no internal error, no problem without its line.
 */
class ServerFilesProperties {
    private static Path dir;

    /** A file that sets every key the gateway's file has. */
    private static final String GATEWAY = """
            gateway_cluster: east
            host: 127.0.0.1
            port: 8080
            control_plane: http://127.0.0.1:7070
            token_file: token
            engine_token_file: token
            snapshot_cache_file: east-snapshot.json
            long_poll_wait: 30s
            report_interval: 5s
            max_body_bytes: 16777216
            connect_timeout: 2s
            first_token_timeout: 60s
            idle_timeout: 30s
            total_timeout: 10m
            drain_window: 5s
            drain_timeout: 30s
            max_snapshot_age: 5m
            access_log: true
            threads: 2
            max_in_flight_per_engine: 1024
            in_flight_per_capacity: 3
            priority_reserve: 0.25
            request_header_timeout: 10s
            request_body_timeout: 60s
            max_header_bytes: 16384
            http2: true
            max_concurrent_streams: 100
            warm_up: 0s
            busy_poll: false
            probe_interval: 5s
            spread_shared_prefixes: false
            space_prefills: true
            recent_keys: 262144
            engine_keep_alive: 4s
            class_timeouts: {batch: {total_timeout: 60m, first_token_timeout: 5m}, chat: {idle_timeout: 10s}}
            tenants_file: tenants.yaml
            residency: [eu-west, us-east]
            max_connections: 16384
            max_buffered_body_bytes: 268435456
            """;

    private static final String CONTROL_PLANE = """
            topology: topology.yaml
            host: 127.0.0.1
            port: 7070
            token_file: token
            solve_interval: 10s
            watch_interval: 1s
            scrape_interval: 2s
            scrape_timeout: 1s
            missed_scrapes: 3
            error_rate_limit: 0.5
            demand: observed
            publish_gain: 0.001
            publish_gain_ms: 0.5
            overload_ttft_factor: 5
            keep_in_region: false
            canary_interval: 10s
            max_wait: 30s
            state_file: state.json
            request_header_timeout: 10s
            request_body_timeout: 60s
            max_header_bytes: 16384
            max_connections: 16384
            max_buffered_body_bytes: 268435456
            engine_token_file: token
            """;

    private static final String ENGINE = """
            id: east-1
            host: 127.0.0.1
            port: 9101
            models: [llama-3.1-70b, m2]
            max_seqs: 64
            prefill_ms_per_token: 0.1
            decode_base_ms: 8
            decode_ms_per_seq: 0.2
            default_max_tokens: 256
            kv_cache_tokens: 100000
            prefix_cache_entries: 1000
            seed: 7
            error_rate: 0.01
            slowdown: 1.5
            hang: false
            stall: false
            crash_after_tokens: -1
            corrupt_stream: none
            admin_token_file: token
            api_key_file: token
            network_rtt_ms: {east: 3, west: 60}
            scheduling_policy: fcfs
            request_header_timeout: 10s
            request_body_timeout: 60s
            max_header_bytes: 16384
            max_connections: 16384
            max_buffered_body_bytes: 268435456
            """;

    private static final String TENANTS = """
            tenants:
              acme:
                keys:
                  - sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
                  - sha256:60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752
                models: [llama-8b, llama-70b]
                residency: [eu-west, eu-central]
                default_residency: [eu-west]
                max_priority: 1
                default_priority: 0
                weight: 1
                limits:
                  requests_per_second: 50
                  tokens_per_minute: 200000
                  concurrent_requests: 20
              beta: {keys: [sha256:0b8fa5d3c4e7a3f1c0f6a1e2b3d4c5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2], weight: 3}
            """;

    private static final String CREDENTIALS = """
            tokens:
              - sha256: 0b8fa5d3c4e7a3f1c0f6a1e2b3d4c5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2
                role: operator
              - sha256: 7c1e9a0b2d3f4e5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a
                role: gateway
                gateway_cluster: east
            """;

    /** A command's {@code --check} of its file, and the file edited (that file, or one it names). */
    enum Case {
        GATEWAY_FILE("gateway", "gateway.yaml", "gateway.yaml"),
        TENANTS_FILE("gateway", "gateway.yaml", "tenants.yaml"),
        CONTROL_PLANE_FILE("control-plane", "control-plane.yaml", "control-plane.yaml"),
        CREDENTIALS_FILE("control-plane", "control-plane-credentials.yaml", "credentials.yaml"),
        ENGINE_FILE("engine", "engine.yaml", "engine.yaml");

        final String command;
        final String config;
        final String edited;

        Case(String command, String config, String edited) {
            this.command = command;
            this.config = config;
            this.edited = edited;
        }
    }

    /** What a line's value may become. */
    static final List<String> VALUES = List.of("-1", "0", "1e-9", "3.5", "1e15", "1e308", "2147483648",
            "9223372036854775807", ".nan", ".inf", "-.inf", "abc", "[1]", "{a: 1}", "''", "~", "true", "0x10", "[]",
            "{}", "0s", "1ms", "-5s", "1e9s", "99999999999d", "9e99m", "65536", "token", "../token", "/", ".");

    private static final char[] CHARS = {':', '-', '{', '}', '[', ']', ',', ' ', '\t', '#', '"', '\'', '&', '*', '!',
        '|', '>', '%', '@', '\n', '\r', '\\', '0', '9', '.', 'x', 'e', '\u0000', '\u0007', '\u00e9', '\u2028'};

    /**
     * One edit: 0 drop a line, 1 double it, 2 change a character, 3 add one, 4 give a line's value one of
     * {@link #VALUES}, 5 cut the text; {@code where} is a fraction of the lines or characters.
     */
    record Edit(int kind, double where, char c, int value) {
        String apply(String text) {
            List<String> lines = new ArrayList<>(Arrays.asList(text.split("\n", -1)));
            int line = Math.min(lines.size() - 1, (int) (where * lines.size()));
            int at = Math.min(text.length(), (int) (where * text.length()));
            switch (kind) {
                case 0 -> lines.remove(line);
                case 1 -> lines.add(line, lines.get(line));
                case 2 -> {
                    return at < text.length() ? text.substring(0, at) + c + text.substring(at + 1) : text + c;
                }
                case 3 -> {
                    return text.substring(0, at) + c + text.substring(at);
                }
                case 4 -> {
                    int colon = lines.get(line).indexOf(": ");
                    if (colon >= 0) {
                        lines.set(line, lines.get(line).substring(0, colon + 2) + VALUES.get(value));
                    }
                }
                default -> {
                    return text.substring(0, at);
                }
            }
            return String.join("\n", lines);
        }
    }

    @Provide
    Arbitrary<List<Edit>> edits() {
        Arbitrary<Character> chars = Arbitraries.of(new String(CHARS).chars().mapToObj(c -> (char) c).toList());
        return Combinators.combine(Arbitraries.integers().between(0, 5), Arbitraries.doubles().between(0, 1), chars,
                Arbitraries.integers().between(0, VALUES.size() - 1)).as(Edit::new).list().ofMinSize(1).ofMaxSize(3);
    }

    @BeforeContainer
    static void files() throws IOException {
        dir = Files.createTempDirectory("server-files");
        Files.writeString(dir.resolve("token"), "tok\n");
        Files.copy(Path.of("..", "examples", "talk.yaml"), dir.resolve("topology.yaml"));
    }

    @AfterContainer
    static void removeFiles() throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }

    /** The files before any edit: each valid, so that what an edit does is the edit's. */
    @Example
    void everyFileAsWritten_isValid() throws IOException {
        write();
        for (Case c : Case.values()) {
            StringWriter err = new StringWriter();
            int code = Sextant.run(Services.production(), new PrintWriter(new StringWriter()), new PrintWriter(err),
                    c.command, "--config", dir.resolve(c.config).toString(), "--check");
            assertThat(code).as("%s: %s", c, err).isZero();
        }
    }

    /** A key that names the wrong file: the problem is that file's, at its line, as the property allows. */
    @Example
    void topologyNamingTheTokenFile_isBadInputAtTheTokenFilesLine() throws IOException {
        write();
        Files.writeString(dir.resolve("control-plane.yaml"), CONTROL_PLANE.replace("topology: topology.yaml",
                "topology: token"));
        StringWriter err = new StringWriter();
        int code = Sextant.run(Services.production(), new PrintWriter(new StringWriter()), new PrintWriter(err),
                "control-plane", "--config", dir.resolve("control-plane.yaml").toString(), "--check");
        assertThat(code).isEqualTo(Sextant.EXIT_BAD_INPUT);
        assertThat(err.toString()).contains(dir.resolve("token") + ":1: 'tok' (expected: a mapping");
    }

    @Property(tries = 400)
    void editedServerFile_isValid_orBadInputAtALineOfIt(@ForAll Case c, @ForAll("edits") List<Edit> edits)
            throws IOException {
        write();
        String text = Files.readString(dir.resolve(c.edited));
        for (Edit e : edits) {
            text = e.apply(text);
        }
        Files.writeString(dir.resolve(c.edited), text);

        StringWriter err = new StringWriter();
        int code = Sextant.run(Services.production(), new PrintWriter(new StringWriter()), new PrintWriter(err),
                c.command, "--config", dir.resolve(c.config).toString(), "--check");

        String said = err.toString();
        assertThat(code).as("exit status; it said: %s", said).isIn(0, Sextant.EXIT_BAD_INPUT);
        if (code == Sextant.EXIT_BAD_INPUT) {
            // the edited file, or a file an edit made it name (topology: token reads the token file as a topology,
            // whose problem is at that file's line)
            List<String> files = new ArrayList<>(List.of(c.edited));
            Matcher named = Pattern.compile(":\\s*([\\w.\\-]+)\\s*$", Pattern.MULTILINE).matcher(text);
            while (named.find()) {
                if (Files.isRegularFile(dir.resolve(named.group(1)))) {
                    files.add(named.group(1));
                }
            }
            Matcher at = Pattern.compile("(?:^|/|: )(" + String.join("|", files.stream().map(Pattern::quote).toList())
                    + "):(\\d+): ", Pattern.MULTILINE).matcher(said);
            assertThat(at.find()).as("a problem at a line of %s in: %s", files, said).isTrue();
            String file = at.group(1).equals(c.edited) ? text : Files.readString(dir.resolve(at.group(1)));
            // a line of the file (or the line after its last, where something missing at its end is said)
            assertThat(Integer.parseInt(at.group(2))).as(said)
                    .isBetween(1, file.split("\r\n|\r|\n|\u2028", -1).length + 1);
        }
    }

    /** Every file as it is before an edit: each valid. */
    private static void write() throws IOException {
        Files.writeString(dir.resolve("gateway.yaml"), GATEWAY);
        Files.writeString(dir.resolve("tenants.yaml"), TENANTS);
        Files.writeString(dir.resolve("control-plane.yaml"), CONTROL_PLANE);
        Files.writeString(dir.resolve("control-plane-credentials.yaml"),
                CONTROL_PLANE.replace("\ntoken_file: token\n", "\ncredentials_file: credentials.yaml\n"));
        Files.writeString(dir.resolve("credentials.yaml"), CREDENTIALS);
        Files.writeString(dir.resolve("engine.yaml"), ENGINE);
    }
}
