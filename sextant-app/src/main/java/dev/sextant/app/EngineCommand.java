package dev.sextant.app;

import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Unmatched;

/**
 * {@code sextant engine [--config engine.yaml] [options]}: one emulated engine. The file's keys are the emulator's
 * options without the dashes ({@code max_seqs} for {@code --max-seqs}; {@code models} a list); options on the
 * command line come after the file's, so they win. {@code network_rtt_ms} is a map, gateway cluster id → round trip
 * in ms ({@code {east: 60, eu: 140}}), checked here so that a problem names the file and the line.
 */
@Command(name = "engine", mixinStandardHelpOptions = true, versionProvider = Sextant.Version.class,
        description = "Run one emulated vLLM engine (docs/engine-emulator.md), from a config file "
        + "and/or the emulator's options (--id, --port, --model, --max-seqs, --decode-base-ms, --error-rate, …).")
final class EngineCommand implements Callable<Integer> {
    static final java.util.Set<String> KEYS = java.util.Set.of("id", "host", "port", "models", "max_seqs",
            "prefill_ms_per_token", "decode_base_ms", "decode_ms_per_seq", "default_max_tokens", "kv_cache_tokens",
            "prefix_cache_entries", "seed", "error_rate", "slowdown", "hang", "stall", "crash_after_tokens",
            "corrupt_stream", "tls_cert_file", "tls_key_file", "admin_token_file", "api_key_file", "network_rtt_ms",
            "scheduling_policy",
            "request_header_timeout", "request_body_timeout", "max_header_bytes", "max_connections",
            "max_buffered_body_bytes");

    @Option(names = "--config", paramLabel = "ENGINE.yaml", description = "The engine's settings.")
    Path config;

    @Option(names = "--check", description = "Check the file, the options and the files they name (TLS, admin token, API key), "
            + "print what they configure, and exit: 0 when valid, 2 when not. Opens no port.")
    boolean check;

    private final PrintWriter out;

    EngineCommand(PrintWriter out) {
        this.out = out;
    }

    @Unmatched
    List<String> options = new ArrayList<>();

    /**
     * The emulator's options for this command's help, as a picocli footer: one per line, {@code %} escaped (the
     * footer is a format string).
     */
    static String emulatorOptionsHelp() {
        return String.join("%n", EngineEmulator.optionsHelp().stream().map(l -> "  " + l.replace("%", "%%")).toList())
                + "%n";
    }

    @Override
    public Integer call() throws Exception {
        ServerFile file = config == null ? null : ServerFile.load(config, KEYS);
        List<String> args = new ArrayList<>();
        String configures;
        if (file == null) {
            args.addAll(options);
            try {
                configures = EngineEmulator.check(args.toArray(new String[0]));
            } catch (IllegalArgumentException e) {
                throw new UsageException(e.getMessage());
            }
        } else {
            configures = file.build(() -> {
                args.clear();
                args.addAll(options(file));
                args.addAll(options);
                return EngineEmulator.check(args.toArray(new String[0]));
            }, problem -> fileWording(file, options, problem));
        }
        if (check) {
            out.println((config == null ? "" : config + ": ") + "ok: " + configures);
            out.flush();
            return 0;
        }
        EngineEmulator.main(args.toArray(new String[0]));
        return 0;
    }

    /** The emulator's names for settings whose key in the file differs. */
    private static final Map<String, String> FILE_KEYS = Map.of("engine_id", "id", "max_sequences", "max_seqs",
            "decode_ms_per_sequence", "decode_ms_per_seq");

    /**
     * The emulator's problem with a setting the file gives (and the command line does not) worded with the file's key
     * ({@code max_seqs: 0 (expected: >= 1)}), to be said at the file's line as the other servers' files say theirs;
     * null for any other, said as the emulator words it.
     */
    static String fileWording(ServerFile file, List<String> commandLine, String problem) {
        int colon = problem.indexOf(": ");
        if (colon <= 0) {
            return null;
        }
        String name = problem.substring(0, colon).split(", ", 2)[0];
        String key = name.startsWith("--") ? name.substring(2).replace('-', '_') : FILE_KEYS.getOrDefault(name, name);
        String option = key.equals("models") ? "--model" : "--" + key.replace('_', '-');
        boolean onCommandLine = commandLine.stream().anyMatch(o -> o.equals(option) || o.startsWith(option + "="));
        if (!KEYS.contains(key) || !file.has(key) || onCommandLine) {
            return null;
        }
        return key + problem.substring(name.length());
    }

    /** Settings whose value is an integer, a number, a string, or a file that must be readable, by kind. */
    private static final List<String> INTEGERS = List.of("port", "max_seqs", "default_max_tokens", "kv_cache_tokens",
            "prefix_cache_entries", "crash_after_tokens", "max_header_bytes", "max_connections",
            "max_buffered_body_bytes");
    private static final List<String> NUMBERS = List.of("prefill_ms_per_token", "decode_base_ms", "decode_ms_per_seq",
            "error_rate", "slowdown", "seed");
    private static final List<String> STRINGS = List.of("id", "host", "corrupt_stream", "request_header_timeout",
            "request_body_timeout");
    private static final List<String> FILES = List.of("tls_cert_file", "tls_key_file", "admin_token_file",
            "api_key_file");

    /**
     * The file's settings as the emulator's options, each checked for its type here so that a problem names the file,
     * the line and the setting; a file it names (relative to the config file's directory) must be readable.
     */
    static List<String> options(ServerFile f) {
        List<String> args = new ArrayList<>();
        for (String k : INTEGERS) {
            if (f.has(k)) {
                int v = f.integer(k, 0);
                if (f.ok(k)) {
                    args.add(option(k) + v);
                }
            }
        }
        for (String k : NUMBERS) {
            if (f.has(k)) {
                double v = f.number(k, 0);
                if (k.equals("seed") && v != Math.rint(v)) {
                    throw f.problem(k, v + " (expected: an integer)");
                }
                if (f.ok(k)) {
                    args.add(option(k) + (k.equals("seed") ? Long.toString((long) v) : Double.toString(v)));
                }
            }
        }
        for (String k : STRINGS) {
            if (f.has(k)) {
                String v = f.string(k, null);
                if (f.ok(k)) {
                    args.add(option(k) + v);
                }
            }
        }
        for (String k : FILES) {
            if (f.has(k)) {
                Path file = f.path(k);
                if (f.ok(k)) { // not a path (a list, a map): the problem is recorded at its line
                    args.add(option(k) + f.readable(k, file));
                }
            }
        }
        for (String k : List.of("hang", "stall")) {
            if (f.has(k)) {
                boolean on = f.bool(k, false);
                if (f.ok(k)) {
                    args.add("--" + k + "=" + on);
                }
            }
        }
        if (f.has("scheduling_policy")) {
            String policy = f.string("scheduling_policy", null);
            if (f.ok("scheduling_policy")) { // else not a string: the problem is recorded at its line
                if (!policy.equals("fcfs") && !policy.equals("priority")) {
                    throw f.problem("scheduling_policy", "'" + policy + "' (expected: fcfs or priority)");
                }
                args.add(option("scheduling_policy") + policy);
            }
        }
        for (String model : f.strings("models")) {
            args.add("--model");
            args.add(model);
        }
        if (f.has("network_rtt_ms")) {
            args.add("--network-rtt-ms=" + roundTrips(f));
        }
        return args;
    }

    private static String option(String key) {
        return "--" + key.replace('_', '-') + "=";
    }

    /** {@code network_rtt_ms} as the emulator's option takes it ({@code east=60,eu=140}), checked as the engine would. */
    static String roundTrips(ServerFile f) {
        Map<String, Double> rtts = f.numbers("network_rtt_ms",
                "a map of gateway cluster id to round trip in ms, such as {east: 60, eu: 140}", "a round trip in ms");
        try {
            EngineConfig.defaults("check", "check").withNetworkRttMs(rtts);
        } catch (IllegalArgumentException e) {
            throw f.fail(e.getMessage());
        }
        StringBuilder out = new StringBuilder();
        rtts.forEach((cluster, ms) -> out.append(out.length() == 0 ? "" : ",").append(cluster).append('=').append(ms));
        return out.toString();
    }
}
