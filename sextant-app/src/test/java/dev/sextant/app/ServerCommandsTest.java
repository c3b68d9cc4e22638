package dev.sextant.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.control.ControlPlaneConfig;
import dev.sextant.server.gateway.GatewayConfig;
import dev.sextant.server.gateway.RequestTimeouts;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The server subcommands' config files: problems are bad input (exit 2) naming the file and the setting. */
class ServerCommandsTest {
    @TempDir
    Path dir;
    String stdout = "";
    String stderr = "";

    int run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Sextant.run(Services.production(), new PrintWriter(out), new PrintWriter(err), args);
        stdout = out.toString();
        stderr = err.toString();
        return code;
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            unknown key            | gateway       | gateway_cluster: east\\ncolour: blue\\nsnapshot_file: s.json | server.yaml:2: colour: unknown key 'colour' (expected one of: access_log,
            no gateway cluster     | gateway       | port: 8080\\nsnapshot_file: s.json                         | gateway_cluster: missing
            blank gateway cluster  | gateway       | gateway_cluster: " "\\nsnapshot_file: s.json                 | server.yaml:1: gateway_cluster: ' ' (expected: the gateway cluster id
            neither source         | gateway       | gateway_cluster: east                                     | exactly one of control_plane
            bad duration           | gateway       | gateway_cluster: east\\ncontrol_plane: http://x:1\\ntoken_file: tok\\nidle_timeout: soon | idle_timeout
            bad port type          | gateway       | gateway_cluster: east\\nport: eighty\\nsnapshot_file: s.json | server.yaml:2: port: 'eighty' (expected: an integer)
            bad header limit       | gateway       | gateway_cluster: east\\nmax_header_bytes: 0\\nsnapshot_file: s.json | server.yaml:2: max_header_bytes: 0 (expected: 1..1048576)
            zero stream limit      | gateway       | gateway_cluster: east\\nmax_concurrent_streams: 0\\nsnapshot_file: s.json | server.yaml:2: max_concurrent_streams: 0 (expected: >= 1)
            nan number             | gateway       | gateway_cluster: east\\npriority_reserve: .nan\\nsnapshot_file: s.json | server.yaml:2: priority_reserve: NaN (expected: in [0, 1))
            in-flight factor of one| gateway       | gateway_cluster: east\\nin_flight_per_capacity: 1\\nsnapshot_file: s.json | server.yaml:2: in_flight_per_capacity: 1.0 (expected: a number > 1, or .inf for max_in_flight_per_engine alone)
            in-flight factor text  | gateway       | gateway_cluster: east\\nin_flight_per_capacity: many\\nsnapshot_file: s.json | server.yaml:2: in_flight_per_capacity: 'many' (expected: a number)
            yaml syntax            | gateway       | gateway_cluster: east\\nport: [8080\\nsnapshot_file: s.json | server.yaml:3: port: YAML syntax:
            http2 not a boolean    | gateway       | gateway_cluster: east\\nhttp2: h2c\\nsnapshot_file: s.json | http2: 'h2c' (expected: true or false)
            zero header timeout    | gateway       | gateway_cluster: east\\nrequest_header_timeout: 0s\\nsnapshot_file: s.json | request_header_timeout
            bad body timeout       | gateway       | gateway_cluster: east\\nrequest_body_timeout: later\\nsnapshot_file: s.json | request_body_timeout
            zero long-poll wait    | gateway       | gateway_cluster: east\\ncontrol_plane: http://x:1\\ntoken_file: tok\\nlong_poll_wait: 0s | server.yaml:4: long_poll_wait: 0ms (expected: > 0)
            no threads             | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nthreads: 0 | server.yaml:3: threads: 0 (expected: 1..256)
            too many threads       | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nthreads: 100000 | server.yaml:3: threads: 100000 (expected: 1..256)
            zero timeout, in ms    | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nconnect_timeout: 0s | server.yaml:3: connect_timeout: 0ms (expected: > 0)
            zero scrape timeout    | control-plane | topology: t.yaml\\ntoken_file: tok\\nscrape_timeout: 0s | server.yaml:3: scrape_timeout: 0ms (expected: > 0)
            control plane no URL   | gateway       | gateway_cluster: east\\ncontrol_plane: not a url\\ntoken_file: tok | server.yaml:2: control_plane: 'not a url' (expected: an http:// or https:// URL with a host
            control plane ftp      | gateway       | gateway_cluster: east\\ncontrol_plane: ftp://cp:21\\ntoken_file: tok | server.yaml:2: control_plane: 'ftp://cp:21' (expected: an http://
            control plane no host  | gateway       | gateway_cluster: east\\ncontrol_plane: http://\\ntoken_file: tok | server.yaml:2: control_plane: 'http://'
            empty host             | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nhost: "" | server.yaml:3: host: '' (expected: an address to bind
            blank control host     | control-plane | topology: t.yaml\\ntoken_file: tok\\nhost: " " | server.yaml:3: host: ' ' (expected: an address to bind
            negative duration      | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nidle_timeout: -5s | server.yaml:3: idle_timeout: '-5s' (expected: a duration >= 0 such as 30s or 500ms, at most 365 days)
            topology endless       | control-plane | topology: /dev/zero\\ntoken_file: tok | server.yaml:1: topology: /dev/zero: not a regular file (expected: a file, read again when it changes)
            credentials endless    | control-plane | topology: t.yaml\\ncredentials_file: /dev/zero | server.yaml:2: credentials_file: /dev/zero: not a regular file (expected: a file, read again when it changes)
            snapshot endless       | gateway       | gateway_cluster: east\\nsnapshot_file: /dev/zero | server.yaml:2: snapshot_file: /dev/zero: not a regular file (expected: a file, read again when it changes)
            centuries of age       | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nmax_snapshot_age: 10000000000s | server.yaml:3: max_snapshot_age: '10000000000s' (expected: a duration >= 0
            a year and a minute    | control-plane | topology: t.yaml\\ntoken_file: tok\\nsolve_interval: 525601m | server.yaml:3: solve_interval: '525601m' (expected: a duration >= 0
            NaN duration           | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\ntotal_timeout: NaNs | server.yaml:3: total_timeout: 'NaNs' (expected: a duration >= 0
            no topology            | control-plane | port: 7070                                                | topology: missing
            bad demand             | control-plane | topology: t.yaml\\ntoken_file: tok\\ndemand: lots          | demand: lots
            demand max, removed    | control-plane | topology: t.yaml\\ntoken_file: tok\\ndemand: max           | server.yaml:3: demand: max (expected: observed or configured; removed: max made the configured demand a floor
            hysteresis, removed    | control-plane | topology: t.yaml\\ntoken_file: tok\\nweight_hysteresis: 0.02 | server.yaml:3: weight_hysteresis: 0.02 (expected: publish_gain and publish_gain_ms; removed: a snapshot is published when its expected gain
            outlier factor, removed| control-plane | topology: t.yaml\\nttft_outlier_factor: 5\\ntoken_file: tok | server.yaml:2: ttft_outlier_factor: 5 (expected: nothing in its place; removed: the control loop judges
            negative publish gain  | control-plane | topology: t.yaml\\ntoken_file: tok\\npublish_gain: -0.1   | server.yaml:3: publish_gain: -0.1 (expected: a finite number >= 0)
            publish gain ms text   | control-plane | topology: t.yaml\\ntoken_file: tok\\npublish_gain_ms: lots | server.yaml:3: publish_gain_ms: 'lots' (expected: a number)
            overload factor of one | control-plane | topology: t.yaml\\ntoken_file: tok\\noverload_ttft_factor: 1 | server.yaml:3: overload_ttft_factor: 1.0 (expected: a number > 1, or .inf for no bound)
            overload factor nan    | control-plane | topology: t.yaml\\ntoken_file: tok\\noverload_ttft_factor: .nan | server.yaml:3: overload_ttft_factor: NaN (expected: a number > 1, or .inf for no bound)
            overload factor text   | control-plane | topology: t.yaml\\ntoken_file: tok\\noverload_ttft_factor: twice | server.yaml:3: overload_ttft_factor: 'twice' (expected: a number)
            zero canary interval   | control-plane | topology: t.yaml\\ntoken_file: tok\\ncanary_interval: 0s  | server.yaml:3: canary_interval: 0ms (expected: > 0)
            zero missed scrapes    | control-plane | topology: t.yaml\\ntoken_file: tok\\nmissed_scrapes: 0     | server.yaml:3: missed_scrapes: 0 (expected: >= 1)
            error rate above one   | control-plane | topology: t.yaml\\ntoken_file: tok\\nerror_rate_limit: 1.5 | server.yaml:3: error_rate_limit: 1.5 (expected: in (0, 1])
            tls cert without key   | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\ntls_cert_file: c.pem | tls_key_file: missing
            client cert without key| gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\ntls_client_cert_file: c.pem | (expected: both or neither)
            client CA without cert | control-plane | topology: t.yaml\\ntoken_file: tok\\ntls_client_ca_file: ca.pem | tls_client_ca_file: set without tls_cert_file
            empty token file       | control-plane | topology: t.yaml\\ntoken_file: empty                    | token_file:
            engine token missing   | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nengine_token_file: nope | nope: cannot read: no such file
            engine token empty     | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nengine_token_file: empty | server.yaml:3: engine_token_file:
            warm-up too long       | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nwarm_up: 11m | server.yaml:3: warm_up: 660s (expected: 0s, off, to 10m)
            warm-up not a duration | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nwarm_up: soon | server.yaml:3: warm_up: 'soon' (expected: a duration >= 0
            busy poll not a boolean| gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nbusy_poll: always | server.yaml:3: busy_poll: 'always' (expected: true or false)
            spread not a boolean   | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nspread_shared_prefixes: often | server.yaml:3: spread_shared_prefixes: 'often' (expected: true or false)
            spacing not a boolean  | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nspace_prefills: mostly | server.yaml:3: space_prefills: 'mostly' (expected: true or false)
            recent keys not 2^k    | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nrecent_keys: 100000 | server.yaml:3: recent_keys: 100000 (expected: a power of two from 1024 to 16777216)
            nul in a path          | gateway       | gateway_cluster: east\\nsnapshot_file: "s\\u0000.json" | server.yaml:2: snapshot_file: 's\\0.json' (expected: a file path; Nul character not allowed)
            negative probe interval| gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nprobe_interval: -1s | server.yaml:3: probe_interval: '-1s' (expected: a duration >= 0
            probe interval no unit | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nprobe_interval: often | server.yaml:3: probe_interval: 'often' (expected: a duration >= 0
            negative drain window  | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\ndrain_window: -1s | server.yaml:3: drain_window: '-1s' (expected: a duration >= 0
            zero drain timeout     | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\ndrain_timeout: 0s | server.yaml:3: drain_timeout: 0ms (expected: > 0)
            first byte, removed    | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nfirst_byte_timeout: 30s | server.yaml:3: first_byte_timeout: '30s' (expected: first_token_timeout, for streams; removed:
            body budget below body | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nmax_buffered_body_bytes: 2000000 | server.yaml:3: max_buffered_body_bytes: 2000000 (expected: >= 16777216, max_body_bytes)
            no gateway connections | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nmax_connections: 0 | server.yaml:3: max_connections: 0 (expected: 1..1000000)
            zero engine keep-alive | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nengine_keep_alive: 0s | server.yaml:3: engine_keep_alive: 0ms (expected: > 0)
            class timeouts no map  | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nclass_timeouts: 5m | server.yaml:3: class_timeouts: '5m' (expected: a map of class id to its timeouts)
            class timeout no map   | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nclass_timeouts: {batch: 5m} | server.yaml:3: class_timeouts.batch: '5m' (expected: a map of [first_token_timeout, idle_timeout, total_timeout] to durations)
            class timeout unknown  | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nclass_timeouts: {batch: {total: 5m}} | server.yaml:3: class_timeouts.batch.total: unknown key 'total' (expected one of: first_token_timeout, idle_timeout, total_timeout)
            class timeout zero     | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nclass_timeouts:\\n  batch: {total_timeout: 0s} | server.yaml:4: class_timeouts.batch.total_timeout: 0ms (expected: > 0)
            class timeout soon     | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nclass_timeouts: {batch: {idle_timeout: soon}} | server.yaml:3: class_timeouts.batch.idle_timeout: 'soon' (expected: a duration >= 0
            negative round trip    | engine        | id: e1\\nnetwork_rtt_ms: {east: 60, eu: -1} | server.yaml:2: network_rtt_ms.eu: -1.0 (expected: a round trip in ms, a finite number >= 0)
            round trip not a number| engine        | network_rtt_ms: {east: soon} | server.yaml:1: network_rtt_ms.east: 'soon' (expected: a round trip in ms, a number)
            round trips not a map  | engine        | network_rtt_ms: 60 | server.yaml:1: network_rtt_ms: 60 (expected: a map of gateway cluster id to round trip in ms
            round trip to a comma  | engine        | network_rtt_ms: {"a,b": 5} | server.yaml:1: network_rtt_ms: 'a,b' (expected: a gateway cluster id
            no engine sequences    | engine        | id: e1\\nmax_seqs: 0 | server.yaml:2: max_seqs: 0 (expected: >= 1)
            engine error rate      | engine        | id: e1\\nerror_rate: 2 | server.yaml:2: error_rate: 2.0 (expected: in [0, 1])
            etcd endpoint no URI   | gateway       | gateway_cluster: east\\netcd:\\n  endpoints: ["http://[::1"] | server.yaml:3: etcd.endpoints: Expected closing bracket for IPv6 address
            etcd endpoint ftp      | gateway       | gateway_cluster: east\\netcd:\\n  endpoints: [ftp://h:1] | server.yaml:3: etcd.endpoints: ftp://h:1 (expected: http://host:port or https://host:port)
            engine step below zero | engine        | id: e1\\ndecode_ms_per_seq: -1 | server.yaml:2: decode_ms_per_seq: -1.0 (expected:
            engine policy a map    | engine        | id: e1\\nscheduling_policy: {a: 1} | server.yaml:2: scheduling_policy: a mapping (expected: a string)
            engine key file a list | engine        | id: e1\\napi_key_file: [k] | server.yaml:2: api_key_file: a list (expected: a string)
            engine head timeout    | engine        | id: e1\\nrequest_header_timeout: soon | server.yaml:2: request_header_timeout: 'soon' (expected: a duration >= 0
            token file no end      | gateway       | gateway_cluster: east\\ncontrol_plane: http://127.0.0.1:1\\ntoken_file: /dev/zero | server.yaml:3: token_file: /dev/zero: more than 1048576 bytes (expected: at most 1048576)
            engine token no end    | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\nengine_token_file: /dev/zero | server.yaml:3: engine_token_file: /dev/zero: more than 1048576 bytes (expected: at most 1048576)
            cp engine token no end | control-plane | topology: t.yaml\\ntoken_file: tok\\nengine_token_file: /dev/zero | server.yaml:3: engine_token_file: /dev/zero: more than 1048576 bytes (expected: at most 1048576)
            admin token no end     | engine        | id: e1\\nadmin_token_file: /dev/zero | server.yaml:2: admin_token_file: cannot read /dev/zero: more than 1048576 bytes (expected: at most 1048576)
            api key file no end    | engine        | id: e1\\napi_key_file: /dev/zero | server.yaml:2: api_key_file: cannot read /dev/zero: more than 1048576 bytes (expected: at most 1048576)
            engine cert not PEM    | engine        | id: e1\\ntls_cert_file: tok\\ntls_key_file: tok | server.yaml:2: tls_cert_file, tls_key_file: DIR/tok, DIR/tok: not a usable PEM certificate chain and PKCS#8 private key
            engine cert no end     | engine        | id: e1\\ntls_cert_file: /dev/zero\\ntls_key_file: tok | server.yaml:2: tls_cert_file: /dev/zero: more than 1048576 bytes (expected: at most 1048576)
            gateway cert no end    | gateway       | gateway_cluster: east\\ncontrol_plane: http://127.0.0.1:1\\ntoken_file: tok\\ntls_cert_file: /dev/zero\\ntls_key_file: tok | server.yaml:4: tls_cert_file: /dev/zero: more than 1048576 bytes (expected: at most 1048576)
            gateway CA no end      | gateway       | gateway_cluster: east\\ncontrol_plane: http://127.0.0.1:1\\ntoken_file: tok\\ntls_ca_file: /dev/zero | server.yaml:4: tls_ca_file: /dev/zero: more than 1048576 bytes (expected: at most 1048576)
            """)
    void badConfigFile_isBadInputNamingTheSetting(String name, String command, String yaml, String says) throws Exception {
        Files.writeString(dir.resolve("tok"), "secret");
        Files.writeString(dir.resolve("empty"), "\n");
        Path config = dir.resolve("server.yaml");
        Files.writeString(config, yaml.replace("\\n", "\n"));
        assertThat(run(command, "--config", config.toString())).isEqualTo(Sextant.EXIT_BAD_INPUT);
        assertThat(stderr).contains("server.yaml").contains(says.replace("DIR", dir.toString()));
    }

    /**
     * The same mistakes in each server's file and in a topology give the same problem: file:line: field: message (a
     * topology through {@code solve}, a server's file through its {@code --check}).
     */
    @ParameterizedTest(name = "{0} {1}")
    @CsvSource(delimiter = '|', textBlock = """
            gateway       | duplicate key   | gateway_cluster: east\\nport: 1\\nport: 2\\nsnapshot_file: s.json | server.yaml:3: port: duplicate key 'port' (expected: each key once; first at line 2)
            control-plane | duplicate key   | topology: t.yaml\\ntoken_file: tok\\ntoken_file: tok     | server.yaml:3: token_file: duplicate key 'token_file' (expected: each key once; first at line 2)
            engine        | duplicate key   | id: e1\\nport: 9000\\nid: e2                        | server.yaml:3: id: duplicate key 'id' (expected: each key once; first at line 1)
            gateway       | tab             | gateway_cluster: east\\nsnapshot_file: s.json\\n\\tport: 1 | server.yaml:3: port: YAML syntax: a tab (expected: spaces; YAML does not allow tabs for indentation)
            control-plane | tab             | topology: t.yaml\\n\\ttoken_file: tok                 | server.yaml:2: token_file: YAML syntax: a tab (expected: spaces; YAML does not allow tabs for indentation)
            engine        | tab             | id: e1\\n\\tport: 9000                             | server.yaml:2: port: YAML syntax: a tab (expected: spaces; YAML does not allow tabs for indentation)
            gateway       | wrong type      | gateway_cluster: east\\nsnapshot_file: s.json\\nthreads: many | server.yaml:3: threads: 'many' (expected: an integer)
            control-plane | wrong type      | topology: t.yaml\\ntoken_file: tok\\nport: many       | server.yaml:3: port: 'many' (expected: an integer)
            engine        | wrong type      | id: e1\\nmax_seqs: many                             | server.yaml:2: max_seqs: 'many' (expected: an integer)
            gateway       | undefined alias | gateway_cluster: east\\nsnapshot_file: *snap          | server.yaml:2: snapshot_file: alias *snap (expected: an anchor &snap defined before it
            engine        | undefined alias | id: e1\\nmodels: [*m]                                | server.yaml:2: models[0]: alias *m (expected: an anchor &m defined before it
            gateway       | missing file    | gateway_cluster: east\\nsnapshot_file: nowhere.json  | server.yaml:2: snapshot_file: DIR/nowhere.json: cannot read: no such file
            control-plane | missing file    | token_file: tok\\ntopology: nowhere.yaml             | server.yaml:2: topology: DIR/nowhere.yaml: cannot read: no such file
            engine        | missing file    | id: e1\\ntls_cert_file: nope.pem\\ntls_key_file: tok | server.yaml:2: tls_cert_file: DIR/nope.pem: cannot read: no such file
            gateway       | out of range    | gateway_cluster: east\\nsnapshot_file: s.json\\nport: 70000 | server.yaml:3: port: 70000 (expected: 0..65535)
            control-plane | out of range    | topology: t.yaml\\ntoken_file: tok\\nport: 70000      | server.yaml:3: port: 70000 (expected: 0..65535)
            engine        | out of range    | id: e1\\nport: 70000                             | server.yaml:2: port: 70000 (expected: 0..65535)
            topology      | duplicate key   | headroom: 0.1\\nheadroom: 0.2                     | topology.yaml:2: headroom: duplicate key 'headroom' (expected: each key once; first at line 1)
            topology      | tab             | headroom: 0.1\\n\\taffinity_discount_ms: 5       | topology.yaml:2: affinity_discount_ms: YAML syntax: a tab (expected: spaces; YAML does not allow tabs for indentation)
            topology      | wrong type      | headroom: many                                      | topology.yaml:1: headroom: 'many' (expected: a number)
            topology      | undefined alias | headroom: *h                                        | topology.yaml:1: headroom: alias *h (expected: an anchor &h defined before it
            """)
    void sameMistake_inEachConfigFile_isTheSameProblem(String command, String mistake, String yaml, String says)
            throws Exception {
        Files.writeString(dir.resolve("tok"), "secret");
        boolean topology = command.equals("topology");
        Path config = dir.resolve(topology ? "topology.yaml" : "server.yaml");
        Files.writeString(config, yaml.replace("\\n", "\n").replace("\\t", "\t"));
        int exit = topology ? run("solve", config.toString()) : run(command, "--config", config.toString(), "--check");
        assertThat(exit).isEqualTo(Sextant.EXIT_BAD_INPUT);
        assertThat(stderr).contains(config + ":").contains(says.replace("DIR", dir.toString()));
        assertThat(stdout).doesNotContain(": ok");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            three times         | in_flight_per_capacity: 3
            the fixed limit     | in_flight_per_capacity: .inf
            """)
    void gateway_inFlightPerCapacity_isAccepted(String name, String setting) throws Exception {
        assertThat(run("solve", Path.of("..", "examples", "talk.yaml").toString())).isZero();
        Files.writeString(dir.resolve("snapshot.json"), stdout);
        Path config = Files.writeString(dir.resolve("gateway.yaml"),
                "gateway_cluster: east\nsnapshot_file: snapshot.json\n" + setting + "\n");
        assertThat(run("gateway", "--config", config.toString(), "--check")).as(stderr).isZero();
    }

    @Test
    void serverFiles_withAnchorsAndMergeKeys_readAsWrittenOut() throws Exception {
        assertThat(run("solve", Path.of("..", "examples", "talk.yaml").toString())).isZero();
        Files.writeString(dir.resolve("snapshot.json"), stdout);
        Path config = Files.writeString(dir.resolve("gateway.yaml"), """
                x-timeouts: &timeouts {first_token_timeout: 5m, idle_timeout: 20s}
                gateway_cluster: east
                snapshot_file: snapshot.json
                class_timeouts:
                  batch: {<<: *timeouts, total_timeout: 30m}
                  chat: *timeouts
                """);
        Map<String, RequestTimeouts> byClass = GatewayCommand.classTimeouts(
                ServerFile.load(config, GatewayCommand.KEYS, GatewayCommand.REMOVED), GatewayConfig.defaults("east"));
        assertThat(byClass.get("batch")).isEqualTo(new RequestTimeouts(Duration.ofMinutes(5), Duration.ofSeconds(20),
                Duration.ofMinutes(30)));
        assertThat(byClass.get("chat").idle()).isEqualTo(Duration.ofSeconds(20));
        assertThat(run("gateway", "--config", config.toString(), "--check")).as(stderr).isZero();

        Path engine = Files.writeString(dir.resolve("engine.yaml"), """
                x-gpu: &gpu {max_seqs: 64, decode_base_ms: 8, models: [llama-3.1-70b]}
                <<: *gpu
                id: east-1
                port: 9101
                """);
        assertThat(EngineCommand.options(ServerFile.load(engine, EngineCommand.KEYS))).containsExactly("--port=9101",
                "--max-seqs=64", "--decode-base-ms=8.0", "--id=east-1", "--model", "llama-3.1-70b");
    }

    @Test
    void gateway_classTimeouts_takeTheGatewaysOwnForWhatAClassDoesNotSet() throws Exception {
        Path config = dir.resolve("gateway.yaml");
        Files.writeString(config, "gateway_cluster: east\nsnapshot_file: s.json\nidle_timeout: 20s\n"
                + "class_timeouts:\n  batch: {total_timeout: 30m, first_token_timeout: 5m}\n  chat: {idle_timeout: 2s}\n");
        GatewayConfig gateway = GatewayConfig.defaults("east").withTimeouts(Duration.ofSeconds(2),
                Duration.ofSeconds(60), Duration.ofSeconds(20), Duration.ofMinutes(10));
        Map<String, RequestTimeouts> byClass = GatewayCommand.classTimeouts(
                ServerFile.load(config, GatewayCommand.KEYS, GatewayCommand.REMOVED), gateway);
        assertThat(byClass).containsOnly(
                Map.entry("batch", new RequestTimeouts(Duration.ofMinutes(5), Duration.ofSeconds(20), Duration.ofMinutes(30))),
                Map.entry("chat", new RequestTimeouts(Duration.ofSeconds(60), Duration.ofSeconds(2), Duration.ofMinutes(10))));
        assertThat(gateway.withClassTimeouts(byClass).timeouts("other"))
                .isEqualTo(new RequestTimeouts(Duration.ofSeconds(60), Duration.ofSeconds(20), Duration.ofMinutes(10)));
    }

    @Test
    void gateway_withASnapshotFile_servesAndStops() throws Exception {
        Path config = gatewayConfig("snapshot_file: snapshot.json\n"
                + "max_header_bytes: 8192\nrequest_header_timeout: 5s\nrequest_body_timeout: 30s\n"
                + "http2: true\nmax_concurrent_streams: 250\nengine_token_file: tok\nsnapshot_cache_file: kept.json\n"
                + "probe_interval: 0s\ndrain_window: 0s\ndrain_timeout: 5s\n");
        Files.writeString(dir.resolve("tok"), "engine-key\n");
        assertThat(run("gateway", "--config", config.toString(), "--duration", "0.2")).isZero();
        assertThat(dir.resolve("kept.json")).as("the snapshot cache, beside the config").isNotEmptyFile();
        assertThat(stdout).contains("gateway east on http://127.0.0.1:").contains("(snapshot 1 from snapshot file ")
                .contains("stopped");
    }

    /**
     * A file with a problem of each kind — a value out of range, a word that is not a duration, an unknown key, a
     * number that is not one — has every one said, one a line in the file's order, not the first alone.
     */
    @Test
    void aServersFile_withSeveralProblems_hasThemAllSaid_oneALine() throws Exception {
        Files.writeString(dir.resolve("tok"), "secret\n");
        Path gateway = Files.writeString(dir.resolve("g.yaml"), "gateway_cluster: east\nport: 99999\n"
                + "control_plane: http://127.0.0.1:7070\ntoken_file: tok\nfirst_token_timeout: soon\n"
                + "max_in_flight_per_engine: 0\nthreads: 0\nbogus: 1\npriority_reserve: high\n");
        assertThat(run("gateway", "--config", gateway.toString(), "--check")).isEqualTo(Sextant.EXIT_BAD_INPUT);
        assertThat(stderr.lines().map(l -> l.replaceFirst("^gateway: ", "")).toList()).containsExactly(
                gateway + ":2: port: 99999 (expected: 0..65535)",
                gateway + ":5: first_token_timeout: 'soon' (expected: a duration >= 0 such as 30s or 500ms, at most 365 days)",
                gateway + ":6: max_in_flight_per_engine: 0 (expected: >= 1)",
                gateway + ":7: threads: 0 (expected: 1..256)",
                gateway + ":8: bogus: unknown key 'bogus' (expected one of: " + String.join(", ",
                        new java.util.TreeSet<>(GatewayCommand.KEYS)) + ")",
                gateway + ":9: priority_reserve: 'high' (expected: a number)");

        Path topology = Path.of("..", "examples", "talk.yaml").toAbsolutePath();
        Path controlPlane = Files.writeString(dir.resolve("c.yaml"), "topology: " + topology + "\nport: -1\n"
                + "token_file: tok\nsolve_interval: 0s\nscrape_interval: abc\n");
        assertThat(run("control-plane", "--config", controlPlane.toString(), "--check"))
                .isEqualTo(Sextant.EXIT_BAD_INPUT);
        assertThat(stderr.lines().map(l -> l.replaceFirst("^control-plane: ", "")).toList()).containsExactly(
                controlPlane + ":2: port: -1 (expected: 0..65535)",
                controlPlane + ":4: solve_interval: 0ms (expected: > 0)",
                controlPlane + ":5: scrape_interval: 'abc' (expected: a duration >= 0 such as 30s or 500ms, at most 365 days)");

        Path engine = Files.writeString(dir.resolve("e.yaml"), "id: e1\nport: 99999\nmax_seqs: 0\nslowdown: x\n");
        assertThat(run("engine", "--config", engine.toString(), "--check")).isEqualTo(Sextant.EXIT_BAD_INPUT);
        assertThat(stderr.lines().map(l -> l.replaceFirst("^engine: ", "")).toList()).containsExactly(
                engine + ":2: port: 99999 (expected: 0..65535)",
                engine + ":3: max_seqs: 0 (expected: >= 1)",
                engine + ":4: slowdown: 'x' (expected: a number)");
    }

    @Test
    void aGatewaysSnapshotSource_isNamed_whicheverItIs() {
        assertThat(GatewayCommand.sourceName(dev.sextant.etcd.EtcdOptions.of(List.of(URI.create("http://h1:2379"))),
                null, null)).isEqualTo("etcd [http://h1:2379] under /sextant");
        assertThat(GatewayCommand.sourceName(null, URI.create("http://cp:7070"), null))
                .isEqualTo("control plane http://cp:7070");
        assertThat(GatewayCommand.sourceName(null, null, Path.of("s.json"))).isEqualTo("snapshot file s.json");
    }

    @Test
    void gateway_withAWarmUp_warmsUpBeforeItListens() throws Exception {
        Path config = gatewayConfig("snapshot_file: snapshot.json\nwarm_up: 1s\ndrain_window: 0s\n");
        assertThat(run("gateway", "--config", config.toString(), "--duration", "0.2")).isZero();
        assertThat(stdout).contains("gateway east: warming up for 1.0 s before listening");
        java.util.regex.Matcher done = java.util.regex.Pattern
                .compile("gateway east: warm-up done: (\\d+) requests in [0-9.]+ s, 0 failed").matcher(stdout);
        assertThat(done.find()).as(stdout).isTrue();
        assertThat(Long.parseLong(done.group(1))).isPositive();
        assertThat(stdout.indexOf("warm-up done")).as("the gateway listens after its warm-up")
                .isLessThan(stdout.indexOf("gateway east on http://127.0.0.1:"));
        assertThat(stdout).doesNotContain("warning");
    }

    @Test
    void gateway_startedFromItsSnapshotCache_saysSo_namingTheFileAndTheVersion() throws Exception {
        int down;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            down = s.getLocalPort(); // nothing listens there once closed
        }
        Files.writeString(dir.resolve("tok"), "secret\n");
        Path config = gatewayConfig("control_plane: http://127.0.0.1:" + down + "\ntoken_file: tok\n"
                + "snapshot_cache_file: kept.json\nprobe_interval: 0s\ndrain_window: 0s\n");
        Files.copy(dir.resolve("snapshot.json"), dir.resolve("kept.json")); // what an earlier run kept
        assertThat(run("gateway", "--config", config.toString(), "--duration", "0.2")).isZero();
        assertThat(stdout).contains("(snapshot 1 from the snapshot cache " + dir.resolve("kept.json")
                + ": control plane http://127.0.0.1:" + down + " sent none in time)");
    }

    /** Writes the talk example's snapshot to snapshot.json, and gateway.yaml: gateway cluster east with {@code settings}. */
    private Path gatewayConfig(String settings) throws java.io.IOException {
        assertThat(run("solve", Path.of("..", "examples", "talk.yaml").toString())).isZero();
        Files.writeString(dir.resolve("snapshot.json"), stdout);
        return Files.writeString(dir.resolve("gateway.yaml"), "gateway_cluster: east\nport: 0\nthreads: 1\n" + settings);
    }

    @Test
    void examples_serverConfigsAreValid_andTheControlPlaneOneRuns() throws Exception {
        Path servers = Path.of("..", "examples", "servers");
        for (String g : new String[] {"gateway-east.yaml", "gateway-west.yaml"}) {
            ServerFile f = ServerFile.load(servers.resolve(g), GatewayCommand.KEYS);
            assertThat(f.tokenFile("token_file")).as(g).isNotNull();
            assertThat(f.path("snapshot_cache_file")).as(g).isNotNull();
        }
        for (String e : new String[] {"engine-east-1.yaml", "engine-west-1.yaml"}) {
            ServerFile.load(servers.resolve(e), EngineCommand.KEYS);
        }
        assertThat(run("control-plane", "--config", servers.resolve("control-plane.yaml").toString(), "--port", "0",
                "--duration", "0.3")).isZero();
        assertThat(stdout).contains("control plane on http://127.0.0.1:").contains("talk.yaml, snapshot 1)");
    }

    @Test
    void engine_networkRoundTrips_reachTheEmulatorAsItsOption() throws Exception {
        Path config = dir.resolve("engine.yaml");
        Files.writeString(config, "id: e1\nnetwork_rtt_ms: {east: 60, eu: 140.5, default: 0}\n");
        String option = EngineCommand.roundTrips(ServerFile.load(config, EngineCommand.KEYS));
        assertThat(option).as("the form of --network-rtt-ms (EngineNetworkTest reads it)")
                .isEqualTo("east=60.0,eu=140.5,default=0.0");
    }

    @Test
    void engine_schedulingPolicy_becomesTheEmulatorsOption_andAnotherWordIsNamedAtItsLine() throws Exception {
        Path config = dir.resolve("engine.yaml");
        Files.writeString(config, "id: e1\nscheduling_policy: priority\n");
        assertThat(EngineCommand.options(ServerFile.load(config, EngineCommand.KEYS)))
                .contains("--scheduling-policy=priority");
        Files.writeString(config, "id: e1\nscheduling_policy: lifo\n");
        assertThat(org.assertj.core.api.Assertions.catchThrowable(
                () -> EngineCommand.options(ServerFile.load(config, EngineCommand.KEYS))))
                .hasMessageContaining("engine.yaml:2: scheduling_policy: 'lifo' (expected: fcfs or priority)");
    }

    @Test
    void engine_aSettingTheCommandLineOverrides_isNamedAsTheEmulatorNamesIt_notAtTheFilesLine() throws Exception {
        Path config = Files.writeString(dir.resolve("engine.yaml"), "id: e1\nmax_seqs: 4\n");
        assertThat(run("engine", "--config", config.toString(), "--max-seqs", "0")).isEqualTo(Sextant.EXIT_BAD_INPUT);
        assertThat(stderr).isEqualTo("engine: max_sequences: 0 (expected: >= 1)" + System.lineSeparator());
    }

    /** The flag overrides the file's endpoints: its bad value is the flag's, not the file's first line's. */
    @Test
    void gateway_aBadEtcdFlag_isNamedAsTheFlag() throws Exception {
        Path config = Files.writeString(dir.resolve("gw.yaml"), "gateway_cluster: east\n");
        assertThat(run("gateway", "--config", config.toString(), "--etcd", "notaurl")).isEqualTo(Sextant.EXIT_BAD_INPUT);
        assertThat(stderr).isEqualTo("gateway: --etcd: notaurl (expected: http://host:port or https://host:port)"
                + System.lineSeparator());
        assertThat(run("gateway", "--config", config.toString(), "--etcd", "http://[::1")).isEqualTo(
                Sextant.EXIT_BAD_INPUT);
        assertThat(stderr).startsWith("gateway: --etcd: Expected closing bracket for IPv6 address").hasLineCount(1);
    }

    @Test
    void gateway_onAPortInUse_isBadInputNamingTheAddress() throws Exception {
        Path topology = Path.of("..", "examples", "talk.yaml");
        assertThat(run("solve", topology.toString())).isZero();
        Files.writeString(dir.resolve("snapshot.json"), stdout);
        try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            Path config = dir.resolve("gateway.yaml");
            Files.writeString(config, "gateway_cluster: east\nport: " + taken.getLocalPort()
                    + "\nsnapshot_file: snapshot.json\nthreads: 1\n");
            assertThat(run("gateway", "--config", config.toString())).isEqualTo(Sextant.EXIT_BAD_INPUT);
            assertThat(stderr.strip()).isEqualTo("gateway: cannot listen on 127.0.0.1:" + taken.getLocalPort()
                    + ": Address already in use");
            // with a warm-up, before it: the same words, and no warm-up run in vain
            Files.writeString(config, "gateway_cluster: east\nport: " + taken.getLocalPort()
                    + "\nsnapshot_file: snapshot.json\nthreads: 1\nwarm_up: 1s\n");
            assertThat(run("gateway", "--config", config.toString())).isEqualTo(Sextant.EXIT_BAD_INPUT);
            assertThat(stderr.strip()).isEqualTo("gateway: cannot listen on 127.0.0.1:" + taken.getLocalPort()
                    + ": Address already in use");
            assertThat(stdout).doesNotContain("warming up");
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource(delimiter = '|', textBlock = """
            gateway       | gateway-east.yaml   | gateway cluster east on http://127.0.0.1:8080, snapshots from control plane http://127.0.0.1:7070
            gateway       | gateway-west.yaml   | gateway cluster west on http://127.0.0.1:8081
            control-plane | control-plane.yaml  | talk.yaml (2 gateway clusters, 2 engines)
            engine        | engine-east-1.yaml  | engine east-1 serving [llama-3.1-70b] on http://127.0.0.1:9101
            engine        | engine-west-1.yaml  | engine west-1 serving [llama-3.1-70b] on http://127.0.0.1:9102
            """)
    void check_ofTheExampleConfigs_saysWhatTheyConfigure_andStartsNothing(String command, String file, String says) {
        Path config = Path.of("..", "examples", "servers", file);
        // without --check the command would serve until stopped: returning at all means nothing started
        assertThat(run(command, "--config", config.toString(), "--check")).isZero();
        assertThat(stdout).startsWith(config + ": ok: ").contains(says);
    }

    @Test
    void check_ofAGatewayWithItsSnapshotFile_readsTheSnapshot() throws Exception {
        assertThat(run("solve", Path.of("..", "examples", "talk.yaml").toString())).isZero();
        Files.writeString(dir.resolve("snapshot.json"), stdout);
        Path config = dir.resolve("gateway.yaml");
        Files.writeString(config, "gateway_cluster: east\nsnapshot_file: snapshot.json\n");
        assertThat(run("gateway", "--config", config.toString(), "--check")).isZero();
        assertThat(stdout).contains("snapshots from snapshot file").contains("(version 1)").doesNotContain("warm-up");
        Files.writeString(config, "gateway_cluster: east\nsnapshot_file: snapshot.json\nwarm_up: 45s\n");
        assertThat(run("gateway", "--config", config.toString(), "--check")).isZero();
        assertThat(stdout).contains("(version 1), a warm-up of 45.0 s before listening").doesNotContain("warming up")
                .doesNotContain("busy-polling");
        Files.writeString(config, "gateway_cluster: east\nsnapshot_file: snapshot.json\nbusy_poll: true\n");
        assertThat(run("gateway", "--config", config.toString(), "--check")).isZero();
        assertThat(stdout).contains("(version 1), busy-polling event loops (each keeps a core busy)");
        // as many busy-polling loops as CPUs is allowed, and warned about at the line of busy_poll; sleeping is not
        int cpus = Runtime.getRuntime().availableProcessors();
        Files.writeString(config, "gateway_cluster: east\nsnapshot_file: snapshot.json\nthreads: " + cpus
                + "\nbusy_poll: true\n");
        assertThat(run("gateway", "--config", config.toString(), "--check")).isZero();
        assertThat(stdout).contains(config + ":4: busy_poll: warning: true with " + cpus + " event loops (threads) on "
                + cpus + " CPUs");
        Files.writeString(config, "gateway_cluster: east\nsnapshot_file: snapshot.json\nthreads: " + cpus
                + "\nbusy_poll: false\n");
        assertThat(run("gateway", "--config", config.toString(), "--check")).isZero();
        assertThat(stdout).doesNotContain("warning");

        Files.writeString(dir.resolve("snapshot.json"), "{\"version\": 1,");
        assertThat(run("gateway", "--config", config.toString(), "--check")).isEqualTo(Sextant.EXIT_BAD_INPUT);
        assertThat(stderr).contains("snapshot.json");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            unreadable certificate   | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\ntls_cert_file: nope.pem\\ntls_key_file: nope.key | server.yaml:3: tls_cert_file: 
            certificate not PEM      | gateway       | gateway_cluster: east\\nsnapshot_file: s.json\\ntls_cert_file: tok\\ntls_key_file: tok | server.yaml:3: tls_cert_file, tls_key_file: 
            unreadable engine CA     | control-plane | topology: t.yaml\\ntoken_file: tok\\ntls_ca_file: nope.pem   | server.yaml:3: tls_ca_file: 
            topology with a problem  | control-plane | topology: t.yaml\\ntoken_file: tok                         | t.yaml:1:
            """)
    void check_findsWhatStartingWould(String name, String command, String yaml, String says) throws Exception {
        Files.writeString(dir.resolve("tok"), "secret");
        Files.writeString(dir.resolve("t.yaml"), "gateway_clusters: 5\n");
        Path config = dir.resolve("server.yaml");
        Files.writeString(config, yaml.replace("\\n", "\n"));
        assertThat(run(command, "--config", config.toString(), "--check")).isEqualTo(Sextant.EXIT_BAD_INPUT);
        assertThat(stderr).contains(says);
        assertThat(stdout).doesNotContain(": ok");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            absent, the default | ''                          | 2.0
            a factor            | overload_ttft_factor: 3     | 3.0
            no bound            | overload_ttft_factor: .inf  | Infinity
            """)
    void controlPlane_overloadTtftFactor_reachesTheControlLoop_andChecks(String name, String setting, double factor)
            throws Exception {
        Path topology = Path.of("..", "examples", "talk.yaml").toAbsolutePath();
        Files.writeString(dir.resolve("tok"), "secret");
        Path config = Files.writeString(dir.resolve("control-plane.yaml"), "topology: " + topology
                + "\ntoken_file: tok\n" + setting + "\n");
        ServerFile f = ServerFile.load(config, ControlPlaneCommand.KEYS, ControlPlaneCommand.REMOVED);
        assertThat(ControlPlaneCommand.config(f, topology, null, 0).controlOptions().overloadTtftFactor())
                .isEqualTo(factor);
        assertThat(run("control-plane", "--config", config.toString(), "--check")).as(stderr).isZero();
        assertThat(stdout).startsWith(config + ": ok: control plane on ");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            absent, the default | ''                     | true
            off                 | keep_in_region: false  | false
            on                  | keep_in_region: true   | true
            """)
    void controlPlane_keepInRegion_reachesTheControlLoop(String name, String setting, boolean keep) throws Exception {
        assertThat(controlOptions(setting).keepInRegion()).isEqualTo(keep);
    }

    /** The control loop's options of a control-plane.yaml with {@code setting} beside its topology and token. */
    private dev.sextant.control.ControlOptions controlOptions(String setting) throws Exception {
        Path topology = Path.of("..", "examples", "talk.yaml").toAbsolutePath();
        Files.writeString(dir.resolve("tok"), "secret");
        Path config = Files.writeString(dir.resolve("control-plane.yaml"), "topology: " + topology
                + "\ntoken_file: tok\n" + setting + "\n");
        ServerFile f = ServerFile.load(config, ControlPlaneCommand.KEYS, ControlPlaneCommand.REMOVED);
        return ControlPlaneCommand.config(f, topology, null, 0).controlOptions();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            absent, the default | ''                | 300000
            two minutes         | demand_hold: 2m   | 120000
            none                | demand_hold: 0s   | 0
            """)
    void controlPlane_demandHold_reachesTheControlLoop(String name, String setting, long millis) throws Exception {
        assertThat(controlOptions(setting).demandHold().toMillis()).isEqualTo(millis);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            keep_in_region | sometimes | 'sometimes' (expected:
            demand_hold    | a while   | 'a while' (expected: a duration >= 0
            """)
    void controlPlane_aBadLoopSetting_isItsLinesProblem(String key, String value, String said) throws Exception {
        Path topology = Path.of("..", "examples", "talk.yaml").toAbsolutePath();
        Files.writeString(dir.resolve("tok"), "secret");
        Path config = Files.writeString(dir.resolve("control-plane.yaml"), "topology: " + topology
                + "\ntoken_file: tok\n" + key + ": " + value + "\n");
        assertThat(run("control-plane", "--config", config.toString(), "--check")).isEqualTo(Sextant.EXIT_BAD_INPUT);
        assertThat(stderr).contains("control-plane.yaml:3: " + key + ": " + said);
    }

    @Test
    void controlPlane_engineTokenFile_isTheCanariesToken_andAMissingFileIsItsLinesProblem() throws Exception {
        Path topology = Path.of("..", "examples", "talk.yaml").toAbsolutePath();
        Files.writeString(dir.resolve("tok"), "secret");
        Files.writeString(dir.resolve("engine-tok"), "engine-key\n");
        Path config = Files.writeString(dir.resolve("control-plane.yaml"), "topology: " + topology
                + "\ntoken_file: tok\nengine_token_file: engine-tok\n");
        ServerFile f = ServerFile.load(config, ControlPlaneCommand.KEYS, ControlPlaneCommand.REMOVED);
        ControlPlaneConfig c = ControlPlaneCommand.config(f, topology, null, 0);
        assertThat(c.engineToken().current()).isEqualTo("engine-key");
        assertThat(c.toString()).doesNotContain("engine-key").contains("engineToken=(redacted)");

        Files.writeString(config, "topology: " + topology + "\ntoken_file: tok\nengine_token_file: gone\n");
        assertThat(run("control-plane", "--config", config.toString(), "--check")).isNotZero();
        assertThat(stderr).contains(config + ":3").contains("engine_token_file");
    }

    @Test
    void controlPlane_withACredentialsFile_checksItAndNamesItsProblemsAtTheirLines() throws Exception {
        Path topology = Path.of("..", "examples", "talk.yaml").toAbsolutePath();
        String digest = "a".repeat(64);
        Path credentials = Files.writeString(dir.resolve("credentials.yaml"), "tokens:\n"
                + "  - {sha256: " + digest + ", role: operator}\n"
                + "  - {sha256: " + "b".repeat(64) + ", role: gateway, gateway_cluster: east}\n");
        Path config = Files.writeString(dir.resolve("cp.yaml"), "topology: " + topology
                + "\ncredentials_file: credentials.yaml\n");
        assertThat(run("control-plane", "--config", config.toString(), "--check")).isZero();
        assertThat(stdout).contains(": ok: control plane on http://127.0.0.1:7070")
                .contains("2 tokens from " + credentials + " (gateway cluster east: 1, operator: 1)");

        Files.writeString(credentials, "tokens:\n  - {sha256: " + digest + ", role: operator}\n"
                + "  - {sha256: " + digest + ", role: gateway}\n");
        assertThat(run("control-plane", "--config", config.toString(), "--check")).isEqualTo(Sextant.EXIT_BAD_INPUT);
        assertThat(stderr).contains(credentials + ":3: tokens[1].sha256: the same token as tokens[0]")
                .contains(credentials + ":3: tokens[1].gateway_cluster: missing");

        Files.writeString(dir.resolve("tok"), "secret");
        Files.writeString(config, "topology: " + topology + "\ncredentials_file: credentials.yaml\ntoken_file: tok\n");
        assertThat(run("control-plane", "--config", config.toString(), "--check")).isEqualTo(Sextant.EXIT_BAD_INPUT);
        assertThat(stderr).contains(config + ":3: token_file: set with credentials_file");

        Files.writeString(config, "topology: " + topology + "\ncredentials_file: nowhere.yaml\n");
        assertThat(run("control-plane", "--config", config.toString(), "--check")).isEqualTo(Sextant.EXIT_BAD_INPUT);
        assertThat(stderr).contains(config + ":2: credentials_file: " + dir.resolve("nowhere.yaml")
                + ": cannot read: no such file");
    }
}
