package dev.sextant.server.engine;

import dev.sextant.server.auth.BearerToken;
import dev.sextant.server.internal.Http;
import dev.sextant.server.internal.ListenerLimits;
import dev.sextant.server.tls.ServerTls;
import dev.sextant.server.tls.TlsContexts;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * The engine emulator's command line ({@link EngineEmulator#main}): its options in vLLM's names, read into an
 * {@link EngineConfig}, and the listener's own (TLS, admin token, limits). A bad option or value is an
 * {@link IllegalArgumentException} naming it.
 */
final class EngineOptions {
    private EngineOptions() {
    }

    /**
     * The options {@link #run} takes, one line each (the option, its value, what it sets and its default), for a
     * command line's help. Adding an option to {@link #run} adds its line here.
     */
    static List<String> help() {
        EngineConfig d = EngineConfig.defaults("engine-0", "emulated-model");
        ListenerLimits l = ListenerLimits.engine();
        return List.of(
                "--id ID                        engine id, in answers and metrics (default: " + d.engineId() + ")",
                "--host ADDR                    address to bind (default: " + d.host() + ")",
                "--port N                       port to bind, 0 for any (default: 8000)",
                "--model NAME                   a model it serves; repeat for more (default: " + d.models().get(0) + ")",
                "--max-seqs N                   sequences decoded at once, as vLLM's --max-num-seqs (default: "
                        + d.maxSequences() + ")",
                "--prefill-ms-per-token X       prefill time per prompt token, ms (default: " + d.prefillMsPerToken()
                        + ")",
                "--decode-base-ms X             time of one decode step, ms (default: " + d.decodeBaseMs() + ")",
                "--decode-ms-per-seq X          added to a decode step per running sequence, ms (default: "
                        + d.decodeMsPerSequence() + ")",
                "--default-max-tokens N         output tokens when a request sets none (default: " + d.defaultMaxTokens()
                        + ")",
                "--kv-cache-tokens N            KV cache size in tokens (default: " + d.kvCacheTokens() + ")",
                "--prefix-cache-entries N       conversations kept in the prefix cache, LRU (default: "
                        + d.prefixCacheEntries() + ")",
                "--seed N                       seed of its random draws (default: " + d.seed() + ")",
                "--error-rate X                 fraction of requests answered 500 at once, in [0, 1] (default: 0)",
                "--slowdown X                   factor on prefill and decode step times, > 0 (default: 1)",
                "--hang                         accept requests and never answer (default: off)",
                "--stall                        the engine core stands still: requests queue, no step runs, /metrics"
                        + " answers unchanged (default: off)",
                "--crash-after-tokens N         close the connection after N output tokens, -1 for never (default: -1)",
                "--corrupt-stream none|truncate|malformed  what becomes of a stream after its first token"
                        + " (default: none)",
                "--network-rtt-ms CLUSTER=MS,...  the round trip it emulates per gateway cluster (default: none)",
                "--scheduling-policy fcfs|priority  order of its waiting queue, as vLLM's (default: fcfs)",
                "--tls-cert-file PEM            serve HTTPS with this certificate chain (with --tls-key-file)",
                "--tls-key-file PEM             the certificate's private key",
                "--admin-token-file FILE        bearer token required on /admin/faults (default: loopback only)",
                "--api-key-file FILE            bearer token required on /v1/..., as vLLM's --api-key (default: none)",
                "--request-header-timeout D     for a request's head (default: "
                        + l.client().requestHeaderTimeout().toSeconds() + "s)",
                "--request-body-timeout D       for a request's body (default: "
                        + l.client().requestBodyTimeout().toSeconds() + "s)",
                "--max-header-bytes N           largest request head, bytes (default: " + l.client().maxHeaderBytes()
                        + ")",
                "--max-connections N            most open client connections (default: " + l.maxConnections() + ")",
                "--max-buffered-body-bytes N    most request body bytes held at once (default: "
                        + l.maxBufferedBodyBytes() + ")");
    }

    /**
     * What a command line sets: the engine, and its listener's TLS (or null), admin token (or null), API key (or null)
     * and limits.
     */
    record Parsed(EngineConfig config, ServerTls tls, BearerToken adminToken, BearerToken apiKey, ListenerLimits limits) {
        /** {@code engine e1 serving [m] on http://127.0.0.1:8000}, on {@code port}. */
        String describe(int port) {
            return "engine " + config.engineId() + " serving " + config.models() + " on "
                    + (tls == null ? "http" : "https") + "://" + config.host() + ":" + port;
        }
    }

    /**
     * The command line read, checked and its files read, starting nothing; a problem is an
     * {@link IllegalArgumentException} naming the option or the field.
     */
    static Parsed parse(String[] args) {
        List<String> rest = new ArrayList<>();
        java.util.Map<String, String> security = securityOptions(args, rest);
        EngineConfig config = parseArgs(rest.toArray(new String[0]));
        String cert = security.get("--tls-cert-file");
        String key = security.get("--tls-key-file");
        ServerTls tls = cert == null && key == null ? null
                : new ServerTls(cert == null ? null : java.nio.file.Path.of(cert),
                        key == null ? null : java.nio.file.Path.of(key), null);
        if (tls != null) {
            TlsContexts.server(tls); // built now so that an unusable file is said by --check, and at start not as a crash
        }
        return new Parsed(config, tls, tokenOption(security, "--admin-token-file"),
                tokenOption(security, "--api-key-file"), limits(security));
    }

    /** {@link EngineEmulator#main}: runs one engine until the process is stopped. */
    static void run(String[] args) throws InterruptedException {
        Parsed p;
        try {
            p = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("engine: " + e.getMessage());
            System.exit(2);
            return;
        }
        EngineEmulator engine = EngineEmulator.start(p.config(), p.tls(), p.adminToken(), p.apiKey(), p.limits());
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            engine.close();
            stopped.countDown();
        }, "engine-shutdown"));
        System.out.println(p.describe(engine.port()));
        stopped.await();
    }

    /** The options of the listener: its TLS, its admin token, its API key and its limits ({@link #limits}). */
    static final java.util.Set<String> LISTENER_OPTIONS = java.util.Set.of("--tls-cert-file", "--tls-key-file",
            "--admin-token-file", "--api-key-file", "--request-header-timeout", "--request-body-timeout", "--max-header-bytes",
            "--max-connections", "--max-buffered-body-bytes");

    /**
     * The listener's limits: {@link ListenerLimits#engine()} with the options given; a bad value is an
     * {@link IllegalArgumentException} naming its field.
     */
    static ListenerLimits limits(java.util.Map<String, String> options) {
        ListenerLimits d = ListenerLimits.engine();
        dev.sextant.server.internal.ClientLimits c = d.client();
        String head = options.get("--request-header-timeout");
        String body = options.get("--request-body-timeout");
        return new ListenerLimits(new dev.sextant.server.internal.ClientLimits(
                head == null ? c.requestHeaderTimeout() : Http.duration("request_header_timeout", head),
                body == null ? c.requestBodyTimeout() : Http.duration("request_body_timeout", body),
                dev.sextant.server.internal.ClientLimits.maxHeaderBytes(
                        whole(options, "--max-header-bytes", c.maxHeaderBytes()))),
                ListenerLimits.maxConnections(whole(options, "--max-connections", d.maxConnections())),
                whole(options, "--max-buffered-body-bytes", d.maxBufferedBodyBytes()));
    }

    private static long whole(java.util.Map<String, String> options, String option, long dflt) {
        String v = options.get(option);
        if (v == null) {
            return dflt;
        }
        try {
            return Long.parseLong(v.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option.substring(2).replace('-', '_') + ": " + v
                    + " (expected: a whole number)");
        }
    }

    /** Takes the listener's options out of {@code args} (into the map), the others into {@code rest}. */
    static java.util.Map<String, String> securityOptions(String[] args, List<String> rest) {
        java.util.Map<String, String> out = new java.util.HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String option = args[i];
            int eq = option.indexOf('=');
            String name = eq > 0 ? option.substring(0, eq) : option;
            if (!LISTENER_OPTIONS.contains(name)) {
                rest.add(option);
                continue;
            }
            if (eq > 0) {
                out.put(name, option.substring(eq + 1));
            } else if (i + 1 < args.length) {
                out.put(name, args[++i]);
            } else {
                throw new IllegalArgumentException(name + ": missing value");
            }
        }
        return out;
    }

    /** The tokens of the file {@code option} names, or null without it. */
    private static BearerToken tokenOption(java.util.Map<String, String> options, String option) {
        return options.containsKey(option) ? tokenFile(option, java.nio.file.Path.of(options.get(option))) : null;
    }

    /** The tokens of the file {@code option} names; a problem is an {@link IllegalArgumentException} naming it. */
    static BearerToken tokenFile(String option, java.nio.file.Path file) {
        try {
            return BearerToken.file(file);
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException(option + ": cannot read " + file + ": " + e.getMessage());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(option + ": " + file + ": " + e.getMessage());
        }
    }

    /** The options {@link #parseArgs} takes that have a value ({@code --hang} alone has none). */
    private static final java.util.Set<String> VALUE_OPTIONS = java.util.Set.of("--id", "--host", "--port", "--model",
            "--max-seqs", "--prefill-ms-per-token", "--decode-base-ms", "--decode-ms-per-seq", "--default-max-tokens",
            "--kv-cache-tokens", "--prefix-cache-entries", "--seed", "--error-rate", "--slowdown", "--crash-after-tokens",
            "--corrupt-stream", "--network-rtt-ms", "--scheduling-policy");

    static EngineConfig parseArgs(String[] args) {
        EngineConfig d = EngineConfig.defaults("engine-0", "emulated-model");
        String id = d.engineId();
        String host = d.host();
        int port = 8000;
        List<String> models = new ArrayList<>();
        int maxSeqs = d.maxSequences();
        double prefill = d.prefillMsPerToken();
        double base = d.decodeBaseMs();
        double perSeq = d.decodeMsPerSequence();
        int defaultMax = d.defaultMaxTokens();
        int kv = d.kvCacheTokens();
        int prefixEntries = d.prefixCacheEntries();
        long seed = d.seed();
        double errorRate = 0;
        double slowdown = 1;
        boolean hang = false;
        boolean stall = false;
        int crash = -1;
        Faults.Corruption corrupt = Faults.Corruption.NONE;
        java.util.Map<String, Double> rtts = java.util.Map.of();
        boolean byPriority = false;
        for (int i = 0; i < args.length; i++) {
            String option = args[i];
            String value = null;
            int eq = option.indexOf('=');
            if (eq > 0) {
                value = option.substring(eq + 1);
                option = option.substring(0, eq);
            }
            if (option.equals("--hang")) {
                hang = value == null || Boolean.parseBoolean(value);
                continue;
            }
            if (option.equals("--stall")) {
                stall = value == null || Boolean.parseBoolean(value);
                continue;
            }
            if (!VALUE_OPTIONS.contains(option)) { // before looking for its value, which an unknown one may not have
                throw new IllegalArgumentException(option + ": unknown option (expected one of --hang, --stall, "
                        + String.join(", ", new java.util.TreeSet<>(VALUE_OPTIONS)) + ")");
            }
            if (value == null) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(option + ": missing value");
                }
                value = args[++i];
            }
            try {
                switch (option) {
                    case "--id" -> id = value;
                    case "--host" -> host = value;
                    case "--port" -> port = Integer.parseInt(value);
                    case "--model" -> models.add(value);
                    case "--max-seqs" -> maxSeqs = Integer.parseInt(value);
                    case "--prefill-ms-per-token" -> prefill = Double.parseDouble(value);
                    case "--decode-base-ms" -> base = Double.parseDouble(value);
                    case "--decode-ms-per-seq" -> perSeq = Double.parseDouble(value);
                    case "--default-max-tokens" -> defaultMax = Integer.parseInt(value);
                    case "--kv-cache-tokens" -> kv = Integer.parseInt(value);
                    case "--prefix-cache-entries" -> prefixEntries = Integer.parseInt(value);
                    case "--seed" -> seed = Long.parseLong(value);
                    case "--error-rate" -> errorRate = Double.parseDouble(value);
                    case "--slowdown" -> slowdown = Double.parseDouble(value);
                    case "--crash-after-tokens" -> crash = Integer.parseInt(value);
                    case "--corrupt-stream" -> corrupt = Faults.Corruption.parse(value);
                    case "--network-rtt-ms" -> rtts = roundTrips(value);
                    case "--scheduling-policy" -> byPriority = schedulingPolicy(value);
                    default -> throw new IllegalArgumentException(option + ": unknown option");
                }
            } catch (NumberFormatException e) {
                // a whole number beyond the option's type is said with the type's range, not as no number at all
                boolean whole = value.matches("[+-]?\\d+");
                boolean isLong = option.equals("--seed");
                throw new IllegalArgumentException(option + ": " + value + (!whole ? " (expected: a number)"
                        : " (expected: a whole number from " + (isLong ? Long.MIN_VALUE : Integer.MIN_VALUE) + " to "
                        + (isLong ? Long.MAX_VALUE : Integer.MAX_VALUE) + ")"));
            }
        }
        return new EngineConfig(id, host, port, models.isEmpty() ? d.models() : models, maxSeqs, prefill, base,
                perSeq, defaultMax, kv, prefixEntries, d.embeddingDimensions(), seed,
                new Faults(errorRate, slowdown, hang, crash, corrupt, stall), rtts, byPriority);
    }

    /** {@code --scheduling-policy fcfs|priority}, as vLLM names its scheduling policies: true for priority. */
    static boolean schedulingPolicy(String value) {
        return switch (value) {
            case "fcfs" -> false;
            case "priority" -> true;
            default -> throw new IllegalArgumentException("--scheduling-policy: '" + value
                    + "' (expected: fcfs or priority)");
        };
    }

    /**
     * {@code --network-rtt-ms east=60,eu=140,default=5}: gateway cluster id → round trip in ms (an empty value: none);
     * the values' range is {@link EngineConfig}'s to check.
     */
    static java.util.Map<String, Double> roundTrips(String value) {
        java.util.Map<String, Double> out = new java.util.LinkedHashMap<>();
        if (value.isBlank()) {
            return out;
        }
        for (String pair : value.split(",", -1)) {
            int eq = pair.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("--network-rtt-ms: '" + pair + "' (expected: CLUSTER=MS pairs"
                        + " separated by commas, such as east=60,eu=140)");
            }
            String ms = pair.substring(eq + 1).trim();
            try {
                out.put(pair.substring(0, eq).trim(), Double.parseDouble(ms));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--network-rtt-ms: '" + pair + "' (expected: CLUSTER=MS with MS a"
                        + " number of milliseconds >= 0)");
            }
        }
        return out;
    }
}
